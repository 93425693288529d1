package etcdlocks_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/locks"
)

// queueRig is a lock with n clients on one cluster, and an admin client
// to look at its keys: for tests that line clients up in the queue and
// then act on one of them.
type queueRig struct {
	t       *testing.T
	ctx     context.Context
	opts    etcdlocks.Options
	admin   *clientv3.Client
	clients []locks.Locker
}

func newQueueRig(t *testing.T, name string, n int) *queueRig {
	return newRig(t, "queue", "/"+name+"/", 5*time.Second, n)
}

// newRig is a rig of n clients of strategy under prefix, with lease TTL
// ttl; its keys are deleted at the end of the test.
func newRig(t *testing.T, strategy, prefix string, ttl time.Duration, n int) *queueRig {
	t.Helper()
	eps := endpoints(t)
	s, err := locks.Lookup(strategy)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	r := &queueRig{t: t, ctx: ctx, admin: dial(t, eps),
		opts: etcdlocks.Options{Options: locks.Options{Name: locks.DefaultName, Prefix: prefix, TTL: ttl}}}
	t.Cleanup(func() { r.admin.Delete(context.Background(), r.opts.Prefix, clientv3.WithPrefix()) })
	for range n {
		l, err := newLocker(ctx, s, dial(t, eps), r.opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close(context.Background()) })
		r.clients = append(r.clients, l)
	}
	return r
}

// queue waits until the queue has n keys and returns them, oldest first.
func (r *queueRig) queue(n int) []*mvccpb.KeyValue {
	r.t.Helper()
	for {
		resp, err := r.admin.Get(r.ctx, r.opts.Key()+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		if err != nil {
			r.t.Fatal(err)
		}
		if len(resp.Kvs) == n {
			return resp.Kvs
		}
		select {
		case <-r.ctx.Done():
			r.t.Fatalf("queue never reached %d keys", n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

type lockResult struct {
	g   *locks.Grant
	err error
}

// revokeMiddleWaiter lines three clients up: client 0 holds, 1 waits
// behind it and 2 behind 1; then client 1's lease is revoked, so its key
// goes while it waits. It returns 0's grant and where 1's and 2's Lock
// results will come.
func (r *queueRig) revokeMiddleWaiter() (*locks.Grant, chan lockResult, chan lockResult) {
	r.t.Helper()
	ga, err := r.clients[0].Lock(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	bch := r.lock(1)
	r.queue(2)
	cch := r.lock(2)
	kvs := r.queue(3)
	if _, err := r.admin.Revoke(r.ctx, clientv3.LeaseID(kvs[1].Lease)); err != nil {
		r.t.Fatal(err)
	}
	return ga, bch, cch
}

// lock starts client i's Lock and returns where its result will come.
func (r *queueRig) lock(i int) chan lockResult { return r.lockCtx(r.ctx, i) }

func (r *queueRig) lockCtx(ctx context.Context, i int) chan lockResult {
	ch := make(chan lockResult, 1)
	go func() {
		g, err := r.clients[i].Lock(ctx)
		ch <- lockResult{g, err}
	}()
	return ch
}

func (r *queueRig) granted(name string, ch chan lockResult) *locks.Grant {
	r.t.Helper()
	select {
	case res := <-ch:
		if res.err != nil {
			r.t.Fatalf("%s: %v", name, res.err)
		}
		return res.g
	case <-r.ctx.Done():
		r.t.Fatalf("%s did not get the lock", name)
	}
	return nil
}

// TestQueueHandover: A holds; B, C and D wait in that order. A releases
// with a plain delete (granted on joining an empty queue, it never read
// its successors); B's re-check reads C and D behind it. B's release then
// hands the lock to C in the same txn (a put into C's key at the revision
// of B's delete), passing D on, and C's release hands it to D.
func TestQueueHandover(t *testing.T) {
	r := newQueueRig(t, "handover", 4)
	ga, err := r.clients[0].Lock(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	bch := r.lock(1)
	r.queue(2)
	cch := r.lock(2)
	r.queue(3)
	dch := r.lock(3)
	kvs := r.queue(4)
	wch := r.admin.Watch(r.ctx, r.opts.Key()+"/", clientv3.WithPrefix(), clientv3.WithRev(kvs[3].CreateRevision+1))

	if err := r.clients[0].Unlock(r.ctx, ga); err != nil {
		t.Fatal(err)
	}
	gb := r.granted("B", bch)
	if err := r.clients[1].Unlock(r.ctx, gb); err != nil {
		t.Fatal(err)
	}
	gc := r.granted("C", cch)
	if err := r.clients[2].Unlock(r.ctx, gc); err != nil {
		t.Fatal(err)
	}
	gd := r.granted("D", dch)
	if gb.Token != kvs[1].CreateRevision || gc.Token != kvs[2].CreateRevision || gd.Token != kvs[3].CreateRevision {
		t.Fatalf("tokens B %d C %d D %d, want the keys' create revisions %d %d %d",
			gb.Token, gc.Token, gd.Token, kvs[1].CreateRevision, kvs[2].CreateRevision, kvs[3].CreateRevision)
	}
	if err := r.clients[3].Unlock(r.ctx, gd); err != nil {
		t.Fatal(err)
	}

	// Each revision's events, until D's key is deleted.
	byRev := map[int64][]*clientv3.Event{}
	for done := false; !done; {
		select {
		case wr := <-wch:
			for _, ev := range wr.Events {
				byRev[ev.Kv.ModRevision] = append(byRev[ev.Kv.ModRevision], ev)
				done = done || (ev.Type == mvccpb.DELETE && string(ev.Kv.Key) == gd.Key)
			}
		case <-r.ctx.Done():
			t.Fatal("D's key was not deleted")
		}
	}
	// handedTo reports whether from's delete and a handover put into to's
	// key are one revision.
	handedTo := func(from, to *locks.Grant) bool {
		for _, evs := range byRev {
			var del, put bool
			for _, ev := range evs {
				del = del || (ev.Type == mvccpb.DELETE && string(ev.Kv.Key) == from.Key)
				put = put || (ev.Type == mvccpb.PUT && string(ev.Kv.Key) == to.Key &&
					ev.Kv.CreateRevision == to.Token && strings.HasPrefix(string(ev.Kv.Value), "granted"))
			}
			if del && put {
				return true
			}
		}
		return false
	}
	if handedTo(ga, gb) {
		t.Error("A handed over to B, but A never read its successors")
	}
	if !handedTo(gb, gc) {
		t.Error("B did not hand the lock over to C in its release")
	}
	if !handedTo(gc, gd) {
		t.Error("C did not hand the lock over to D in its release")
	}
}

// TestQueueHandoverSuccessorGone: B holds and knows C and D behind it;
// then C's key goes. B's release must not hand the lock to C (etcd
// #11456: a waiter whose key is gone must not be granted), nor to a new
// key of C's of the same name (created behind D, so D would hold too): it
// deletes B's key alone, and D, behind C, gets the lock by its own
// re-check. C's key goes with its lease (revoked), or C gives up waiting
// and joins again on the same lease (same key name, new create revision).
func TestQueueHandoverSuccessorGone(t *testing.T) {
	for _, rejoin := range []bool{false, true} {
		name := map[bool]string{false: "lease-revoked", true: "rejoined"}[rejoin]
		t.Run(name, func(t *testing.T) {
			r := newQueueRig(t, "handover-gone-"+name, 4)
			ga, err := r.clients[0].Lock(r.ctx)
			if err != nil {
				t.Fatal(err)
			}
			bch := r.lock(1)
			r.queue(2)
			cctx, cancelC := context.WithCancel(r.ctx)
			defer cancelC()
			cch := r.lockCtx(cctx, 2)
			r.queue(3)
			dch := r.lock(3)
			kvs := r.queue(4)
			if err := r.clients[0].Unlock(r.ctx, ga); err != nil {
				t.Fatal(err)
			}
			gb := r.granted("B", bch)
			if rejoin {
				cancelC()
			} else if _, err := r.admin.Revoke(r.ctx, clientv3.LeaseID(kvs[2].Lease)); err != nil {
				t.Fatal(err)
			}
			select {
			case res := <-cch:
				if res.err == nil {
					t.Fatalf("C, whose key went, got the lock: %+v", res.g)
				}
			case <-r.ctx.Done():
				t.Fatal("C's Lock did not return")
			}
			r.queue(2) // B and D
			c2 := make(chan lockResult, 1)
			if rejoin {
				c2 = r.lock(2)
				r.queue(3) // B, D, C again
			}
			if err := r.clients[1].Unlock(r.ctx, gb); err != nil {
				t.Fatal(err)
			}
			resp, err := r.admin.Get(r.ctx, string(kvs[2].Key))
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case !rejoin && len(resp.Kvs) != 0:
				t.Errorf("C's key is back after B's release: %+v", resp.Kvs[0])
			case rejoin && (len(resp.Kvs) != 1 || strings.HasPrefix(string(resp.Kvs[0].Value), "granted")):
				t.Errorf("B's release handed the lock to C's new key, behind D: %+v", resp.Kvs)
			}
			gd := r.granted("D", dch)
			if gd.Token != kvs[3].CreateRevision {
				t.Errorf("D's token %d, want its key's create revision %d", gd.Token, kvs[3].CreateRevision)
			}
			if rejoin {
				if err := r.clients[3].Unlock(r.ctx, gd); err != nil {
					t.Fatal(err)
				}
				if gc := r.granted("C again", c2); gc.Token <= gd.Token {
					t.Errorf("C's new token %d is not above D's %d", gc.Token, gd.Token)
				}
			}
		})
	}
}

// TestQueueKeepsPredecessorWatch: A and B take turns. B's second wait is
// behind A's key name again (A's lease is the same), so B takes the watch
// kept from its first wait, and still gets the lock when A releases; a
// wait behind another name gets a new watch.
func TestQueueKeepsPredecessorWatch(t *testing.T) {
	r := newQueueRig(t, "keep-pred-watch", 3)
	a, b := r.clients[0], r.clients[1]
	ga, err := a.Lock(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	bch := r.lock(1)
	kvs := r.queue(2)
	if err := a.Unlock(r.ctx, ga); err != nil {
		t.Fatal(err)
	}
	gb := r.granted("B", bch)
	key, first := etcdlocks.PredWatchOf(b)
	if key != string(kvs[0].Key) || first == nil {
		t.Fatalf("B's kept watch is of %q (%v), want A's key %s", key, first, kvs[0].Key)
	}
	ach := r.lock(0)
	r.queue(2) // B, A
	if err := b.Unlock(r.ctx, gb); err != nil {
		t.Fatal(err)
	}
	ga = r.granted("A again", ach)
	bch = r.lock(1)
	r.queue(2) // A, B
	if err := a.Unlock(r.ctx, ga); err != nil {
		t.Fatal(err)
	}
	gb = r.granted("B again", bch)
	if key, again := etcdlocks.PredWatchOf(b); key != string(kvs[0].Key) || again != first {
		t.Errorf("B's second wait behind A's key name did not take the kept watch (%q)", key)
	}
	// B waits behind C: another name, a new watch.
	if err := b.Unlock(r.ctx, gb); err != nil {
		t.Fatal(err)
	}
	gc, err := r.clients[2].Lock(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	bch = r.lock(1)
	kvs = r.queue(2) // C, B
	if err := r.clients[2].Unlock(r.ctx, gc); err != nil {
		t.Fatal(err)
	}
	r.granted("B behind C", bch)
	if key, other := etcdlocks.PredWatchOf(b); key != string(kvs[0].Key) || other == first || other == nil {
		t.Errorf("B's wait behind C's key %s: kept watch of %q, the same as before: %v", kvs[0].Key, key, other == first)
	}
	// Not kept for a client that does not wait again soon: it would
	// gather every delete of the name.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, ch := etcdlocks.PredWatchOf(b); ch == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("B's kept watch was still open 10 s after its last wait")
		}
	}
}

// TestQueueExtendsList: a list of successors shrinks by one at every
// handover; the holder whose list is about to run out (refillAt) reads
// the keys that follow its last key and, in its next join, puts them into
// that key, so that its owner still knows a successor when the list
// reaches it empty. H holds; A–E wait. A (granted by a re-check, which
// read [B C D E]) hands over to B, which gets [C D E]; A joins again (A').
// B's release reads [A'] after E and B's next join puts it into E's key;
// C and D hand over along; E gets an empty list, yet knows A'.
func TestQueueExtendsList(t *testing.T) {
	r := newQueueRig(t, "extends-list", 6)
	gh, err := r.clients[0].Lock(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	chs := map[int]chan lockResult{}
	for i := 1; i <= 5; i++ {
		chs[i] = r.lock(i)
		r.queue(i + 1)
	}
	unlock := func(name string, i int, g *locks.Grant) {
		t.Helper()
		if err := r.clients[i].Unlock(r.ctx, g); err != nil {
			t.Fatalf("%s unlock: %v", name, err)
		}
	}
	unlock("H", 0, gh)
	ga := r.granted("A", chs[1])
	unlock("A", 1, ga)
	gb := r.granted("B", chs[2])
	if next := etcdlocks.NextOf(r.clients[2]); len(next) != 3 {
		t.Fatalf("B was handed %d successors, want 3 (C D E): %v", len(next), next)
	}
	chs[1] = r.lock(1)
	aAgain := string(r.queue(5)[4].Key) // B C D E A'
	unlock("B", 2, gb)
	gc := r.granted("C", chs[3])
	chs[2] = r.lock(2)
	r.queue(5) // C D E A' B': B's join is in, with the extension
	unlock("C", 3, gc)
	gd := r.granted("D", chs[4])
	unlock("D", 4, gd)
	ge := r.granted("E", chs[5])
	if next := etcdlocks.NextOf(r.clients[5]); len(next) == 0 || next[0] != aAgain {
		t.Fatalf("E, handed an empty list, knows successors %v; want A's new key %s first (the extension)", next, aAgain)
	}
	unlock("E", 5, ge)
	unlock("A'", 1, r.granted("A'", chs[1]))
	unlock("B'", 2, r.granted("B'", chs[2]))
}
