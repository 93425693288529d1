package etcdlocks_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockbench/lockbench/etcd/cluster/clustertest"
	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/etcd/locktest"
	"github.com/lockbench/lockbench/locks"
)

func TestMain(m *testing.M) {
	code := m.Run()
	clustertest.Close()
	os.Exit(code)
}

func endpoints(t *testing.T) []string { return clustertest.Shared(t).Endpoints() }

func dial(t *testing.T, eps []string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func TestRegistry(t *testing.T) {
	want := map[string]bool{"queue": false, "queue-naive": true, "txn": false, "txn-watch": false, "mutex": false, "rpc": false, "election": false, "election-rpc": false}
	for _, s := range locks.All() {
		buggy, ok := want[s.Name]
		if !ok {
			t.Errorf("unexpected strategy %q", s.Name)
			continue
		}
		delete(want, s.Name)
		if s.Buggy != buggy {
			t.Errorf("%s: Buggy = %v, want %v", s.Name, s.Buggy, buggy)
		}
		if s.Description == "" || s.Origin == "" || s.New == nil {
			t.Errorf("%s: Description, Origin and New must be set", s.Name)
		}
	}
	for n := range want {
		t.Errorf("strategy %q is not registered", n)
	}
}

// TestConformance runs the conformance suite for every strategy that is
// not buggy on purpose.
func TestConformance(t *testing.T) {
	for _, s := range locks.All() {
		if s.Buggy {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			locktest.Run(t, s.New, locktest.Env{Endpoints: endpoints(t), Clients: 3, Rounds: 6})
		})
	}
}

// TestConformanceSeedKeepAlive runs it again with the seed keepalive policy
// for a strategy with its own keys and for mutex, whose Session is orphaned
// for the policy to apply.
func TestConformanceSeedKeepAlive(t *testing.T) {
	for _, name := range []string{"queue", "mutex"} {
		t.Run(name, func(t *testing.T) {
			s, err := locks.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			locktest.Run(t, s.New, locktest.Env{Endpoints: endpoints(t), KeepAlive: etcdlocks.KeepAliveSeed, Clients: 3, Rounds: 4})
		})
	}
}

// TestQueueMiddleWaiterLost is the queue-naive bug on demand: A holds, B
// waits behind A, C behind B; B's lease is revoked. queue-naive's C takes
// the lock on its predecessor's delete while A still holds it; queue's C
// sees A's older key and keeps waiting until A releases.
func TestQueueMiddleWaiterLost(t *testing.T) {
	for _, tc := range []struct {
		name      string
		handsOver bool
	}{{"queue-naive", true}, {"queue", false}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.name, "/middle-waiter/"+tc.name+"/", 2*time.Second, 3)
			ctx, a := r.ctx, r.clients[0]
			// B, the middle waiter, loses its lease (as if it crashed).
			ga, bch, cch := r.revokeMiddleWaiter()
			select {
			case res := <-bch:
				if res.err == nil {
					t.Errorf("B, whose lease was revoked, got the lock: %+v", res.g)
				}
			case <-time.After(5 * time.Second):
				t.Error("B's Lock did not return after its lease was revoked")
			}

			select {
			case res := <-cch:
				if res.err != nil {
					t.Fatalf("C: %v", res.err)
				}
				if !tc.handsOver {
					t.Fatalf("C took the lock (token %d) while A holds it (token %d)", res.g.Token, ga.Token)
				}
				// A still holds: its key is there; two holders at once.
				resp, err := r.admin.Get(ctx, ga.Key)
				if err != nil {
					t.Fatal(err)
				}
				if len(resp.Kvs) != 1 {
					t.Fatal("A's key is gone: the test did not show the bug")
				}
				t.Logf("as expected of %s: C holds (token %d) while A holds (token %d)", tc.name, res.g.Token, ga.Token)
				return
			case <-time.After(time.Second):
				if tc.handsOver {
					t.Fatal("queue-naive's C did not take the lock when its predecessor went: the test does not show the bug")
				}
			}
			// queue: C gets the lock once A releases.
			if err := a.Unlock(ctx, ga); err != nil {
				t.Fatal(err)
			}
			select {
			case res := <-cch:
				if res.err != nil {
					t.Fatalf("C: %v", res.err)
				}
				if res.g.Token <= ga.Token {
					t.Errorf("C's token %d is not above A's %d", res.g.Token, ga.Token)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("C did not get the lock after A released it")
			}
		})
	}
}

// A hidden strategy is found by name but left out of the lists the
// default suite and bench take.
func TestHiddenStrategy(t *testing.T) {
	st, err := locks.Lookup("rpc-trusting")
	if err != nil || !st.Hidden || !st.LockService {
		t.Fatalf("rpc-trusting: %+v, %v", st, err)
	}
	if slices.Contains(locks.Names(), "rpc-trusting") {
		t.Error("a hidden strategy in Names")
	}
	for _, s := range locks.All() {
		if s.Hidden {
			t.Errorf("hidden %s in All", s.Name)
		}
	}
}

// newLocker makes st's Locker over cli with etcd's opts, as the runner
// does: the keepalive policy and the shared lease go with the Conn.
func newLocker(ctx context.Context, st locks.Strategy, cli *clientv3.Client, opts etcdlocks.Options) (locks.Locker, error) {
	return st.New(ctx, &etcdlocks.Conn{Client: cli, KeepAlive: opts.KeepAlive, Lease: opts.Lease}, opts.Options)
}
