package etcdlocks_test

import (
	"testing"
	"time"
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
			r := newRig(t, tc.name, "/campaign-gone-key/"+tc.name+"/", 10*time.Second, 3)
			ctx, a := r.ctx, r.clients[0]
			ga, bch, cch := r.revokeMiddleWaiter()
			r.queue(2)
			if err := a.Unlock(ctx, ga); err != nil {
				t.Fatal(err)
			}
			var rb, rc lockResult
			for _, ch := range []chan lockResult{bch, cch} {
				select {
				case res := <-ch:
					if ch == bch {
						rb = res
					} else {
						rc = res
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
				resp, err := r.admin.Get(ctx, rb.g.Key)
				if err != nil || len(resp.Kvs) != 0 {
					t.Fatalf("B's key %s: %v %v, want gone", rb.g.Key, resp, err)
				}
				t.Logf("as etcd's Campaign does: B holds key %s (token %d), which is gone, while C holds (token %d)", rb.g.Key, rb.g.Token, rc.g.Token)
			}
		})
	}
}
