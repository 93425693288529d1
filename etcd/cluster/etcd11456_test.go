package cluster

import (
	"context"
	"os"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3lock/v3lockpb"
	"go.uber.org/zap"
)

// lockAfterWaiterLeaseGone asks the lock service: a holder holds; a
// waiter's Lock waits, and a second waiter's behind it; the first
// waiter's lease goes (revoked, as if it had lapsed: its key is deleted);
// the holder unlocks. It returns whether the first waiter's Lock said
// "granted", whether its key then existed, and whether the second waiter
// was granted too (then both hold).
func lockAfterWaiterLeaseGone(t *testing.T, endpoints []string) (granted, keyExists, second bool, lockErr error) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, Logger: zap.NewNop(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lc := v3lockpb.NewLockClient(cli.ActiveConnection())
	hl, err := cli.Grant(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	wl, err := cli.Grant(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	held, err := lc.Lock(ctx, &v3lockpb.LockRequest{Name: []byte("/11456"), Lease: int64(hl.ID)})
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		r   *v3lockpb.LockResponse
		err error
	}
	xl, err := cli.Grant(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	ch, chX := make(chan answer, 1), make(chan answer, 1)
	wait := func(ch chan answer, id clientv3.LeaseID, queued int64) {
		go func() {
			r, err := lc.Lock(ctx, &v3lockpb.LockRequest{Name: []byte("/11456"), Lease: int64(id)})
			ch <- answer{r, err}
		}()
		waitQueued(ctx, t, cli, queued)
	}
	wait(ch, wl.ID, 2)
	wait(chX, xl.ID, 3)
	if _, err := cli.Revoke(ctx, wl.ID); err != nil { // the waiter's lease lapses
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := lc.Unlock(ctx, &v3lockpb.UnlockRequest{Key: held.Key}); err != nil {
		t.Fatal(err)
	}
	a, x := <-ch, <-chX
	if x.err != nil {
		t.Fatalf("second waiter: %v", x.err)
	}
	if a.err != nil {
		return false, false, true, a.err
	}
	r, err := cli.Get(ctx, string(a.r.Key))
	if err != nil {
		t.Fatal(err)
	}
	return true, len(r.Kvs) > 0, true, nil
}

// waitQueued waits until n keys are queued on the lock.
func waitQueued(ctx context.Context, t *testing.T, cli *clientv3.Client, n int64) {
	t.Helper()
	for {
		r, err := cli.Get(ctx, "/11456/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if r.Count == n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEtcd11456 shows etcd issue #11456 at the lock service: etcd 3.4's
// Lock (v3lock → concurrency.Mutex.Lock) returns "granted" to a waiter
// whose lease, and so whose key, went while it waited; from 3.5 on it
// re-reads its key and fails with "session expired". 3.4 runs when
// /usr/bin/etcd is 3.4 (Debian's etcd-server); 3.7.3 as --etcd-bin self.
func TestEtcd11456(t *testing.T) {
	for _, bin := range []string{EtcdBinSelf, "/usr/bin/etcd"} {
		t.Run(bin, func(t *testing.T) {
			if bin != EtcdBinSelf {
				if _, err := os.Stat(bin); err != nil {
					t.Skipf("%s absent (apt-get install etcd-server)", bin)
				}
			}
			pc := startSelf(t, bin)
			defer pc.Close()
			granted, exists, second, err := lockAfterWaiterLeaseGone(t, pc.Endpoints())
			t.Logf("etcd %s: first waiter granted=%v, its key exists=%v, error=%v; second waiter granted=%v", pc.Version(), granted, exists, err, second)
			buggy := !pc.bin.Version.AtLeast(3, 5)
			switch {
			case buggy && !(granted && !exists):
				t.Errorf("etcd %s: expected the #11456 grant of a gone key", pc.Version())
			case !buggy && granted:
				t.Errorf("etcd %s granted a waiter whose lease was gone (key exists=%v)", pc.Version(), exists)
			case buggy:
				t.Logf("Successful reproduction of etcd #11456 on etcd %s: the lock service granted a lock whose key is gone, and the next waiter too: two holders", pc.Version())
			}
		})
	}
}
