package locks_test

import (
	"context"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/locks"
)

// TestCampaignTrustsAGoneKey pins the etcd behaviour that the election
// strategies expect to fail on (docs/strategies.md): A holds; B, then C,
// wait; B's lease is revoked, so its key goes; A releases. etcd's
// Election.Campaign (client and server side) waits only for the older keys
// to go and does not re-read its own, so B is told it holds, with no key,
// while C holds too. Mutex.Lock re-reads its key after waiting and refuses
// B. If a new etcd fixes Campaign, this test says so, and the scenarios'
// expectations for election and election-rpc must change with it.
func TestCampaignTrustsAGoneKey(t *testing.T) {
	for _, tc := range []struct {
		name       string
		twoHolders bool
	}{{"election", true}, {"election-rpc", true}, {"mutex", false}} {
		t.Run(tc.name, func(t *testing.T) {
			eps := endpoints(t)
			s, err := locks.Lookup(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			opts := locks.Options{Name: locks.DefaultName, Prefix: "/campaign-gone-key/" + tc.name + "/", TTL: 10 * time.Second}
			admin := dial(t, eps)
			defer admin.Delete(context.Background(), opts.Prefix, clientv3.WithPrefix())
			mk := func() locks.Locker {
				l, err := s.New(ctx, dial(t, eps), opts)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close(context.Background()) })
				return l
			}
			type result struct {
				g   *locks.Grant
				err error
			}
			lock := func(l locks.Locker) chan result {
				ch := make(chan result, 1)
				go func() {
					g, err := l.Lock(ctx)
					ch <- result{g, err}
				}()
				return ch
			}
			// waitKeys waits until the prefix holds n keys, oldest first.
			waitKeys := func(n int) []*mvccpb.KeyValue {
				t.Helper()
				for {
					resp, err := admin.Get(ctx, opts.Key()+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
					if err != nil {
						t.Fatal(err)
					}
					if len(resp.Kvs) == n {
						return resp.Kvs
					}
					select {
					case <-ctx.Done():
						t.Fatalf("never %d keys", n)
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
			a, b, c := mk(), mk(), mk()
			ga, err := a.Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			bch := lock(b)
			waitKeys(2)
			cch := lock(c)
			kvs := waitKeys(3)
			if _, err := admin.Revoke(ctx, clientv3.LeaseID(kvs[1].Lease)); err != nil {
				t.Fatal(err)
			}
			waitKeys(2)
			if err := a.Unlock(ctx, ga); err != nil {
				t.Fatal(err)
			}
			var rb, rc result
			for _, ch := range []chan result{bch, cch} {
				select {
				case r := <-ch:
					if ch == bch {
						rb = r
					} else {
						rc = r
					}
				case <-time.After(5 * time.Second):
					if ch == cch || tc.twoHolders {
						t.Fatal("a Lock did not return after A released")
					}
				}
			}
			if rc.err != nil {
				t.Fatalf("C, the rightful next holder: %v", rc.err)
			}
			if got := rb.err == nil; got != tc.twoHolders {
				t.Fatalf("B, whose key was revoked while it waited: granted %v (%+v, %v), want %v", got, rb.g, rb.err, tc.twoHolders)
			}
			if tc.twoHolders {
				resp, err := admin.Get(ctx, rb.g.Key)
				if err != nil || len(resp.Kvs) != 0 {
					t.Fatalf("B's key %s: %v %v, want gone", rb.g.Key, resp, err)
				}
				t.Logf("as etcd's Campaign does: B holds key %s (token %d), which is gone, while C holds (token %d)", rb.g.Key, rb.g.Token, rc.g.Token)
			}
		})
	}
}
