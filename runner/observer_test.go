package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/verdict"
)

// TestHeldGrantsTakeDeleted: the first delete of a held grant's key name
// after the grant is its key's; a delete before the grant is of an earlier
// key of the name, and one after that first is of a key created since.
func TestHeldGrantsTakeDeleted(t *testing.T) {
	var h heldGrants
	a := &locks.Grant{Key: "/l/a", Token: 5}
	b := &locks.Grant{Key: "/l/b", Token: 7}
	c := &locks.Grant{Key: "/l/c", Token: 3} // two grants of one name: a buggy strategy
	d := &locks.Grant{Key: "/l/c", Token: 6}
	for _, g := range []*locks.Grant{a, b, c, d} {
		h.add(g, 100)
	}
	h.done(b)
	for _, tc := range []struct {
		name string
		key  string
		rev  int64
		want []*locks.Grant
	}{
		{"an earlier key of the name", "/l/a", 4, nil},
		{"the grant's key", "/l/a", 9, []*locks.Grant{a}},
		{"a key of the name created since", "/l/a", 12, nil},
		{"a grant released", "/l/b", 10, nil},
		{"the older of two grants of one name", "/l/c", 5, []*locks.Grant{c}},
		{"then the newer", "/l/c", 8, []*locks.Grant{d}},
		{"a key never granted", "/l/x", 8, nil},
	} {
		if got := h.takeDeleted(tc.key, tc.rev, 200); !slices.Equal(got, tc.want) {
			t.Errorf("%s: takeDeleted(%s, %d) = %v, want %v", tc.name, tc.key, tc.rev, got, tc.want)
		}
	}
	if len(h.byKey) != 0 {
		t.Errorf("grants left: %v", h.byKey)
	}
}

// TestHeldGrantsGrantOfAGoneKey: a grant whose key the observer saw
// deleted before the grant's time is handed back, not held; a delete of an
// earlier key of the name, or one seen after the grant, is not its key's.
func TestHeldGrantsGrantOfAGoneKey(t *testing.T) {
	var h heldGrants
	h.takeDeleted("/l/a", 9, 100) // a waiter's key, its lease ended
	h.takeDeleted("/l/b", 4, 100) // an earlier key of the name
	h.takeDeleted("/l/c", 9, 300) // seen after the grant below
	for _, tc := range []struct {
		g    *locks.Grant
		gone bool
	}{
		{&locks.Grant{Key: "/l/a", Token: 5}, true},
		{&locks.Grant{Key: "/l/b", Token: 5}, false},
		{&locks.Grant{Key: "/l/c", Token: 5}, false},
		{&locks.Grant{Key: "/l/x", Token: 5}, false},
	} {
		d, gone := h.add(tc.g, 200)
		if gone != tc.gone || gone && d.rev != 9 {
			t.Errorf("add(%s) = %v, %v; want gone %v at revision 9", tc.g.Key, d, gone, tc.gone)
		}
		if _, held := h.byKey[tc.g.Key]; held == tc.gone {
			t.Errorf("add(%s): held %v, want %v", tc.g.Key, held, !tc.gone)
		}
	}
	for i := range maxGone + 1 {
		h.takeDeleted(fmt.Sprintf("/l/k%d", i), 50, 100)
	}
	if len(h.gone) != maxGone || len(h.goneOrder) != maxGone {
		t.Errorf("gone remembers %d (order %d), want at most %d", len(h.gone), len(h.goneOrder), maxGone)
	}
}

// watchedDelete is a delete the fake store's watch hands the observer.
type watchedDelete struct {
	key string
	rev int64
}

// fakeStore is the run's admin connection as the observer and the
// revoke-lease fault use it: the test says when the watch delivers each
// delete (deletes) and how a revoke goes (revoke).
type fakeStore struct {
	backend.Admin // not used
	deletes       chan watchedDelete
	// revoke is called for each RevokeLease and returns its outcome: it
	// may block, as a revoke in flight.
	revoke func(lease int64) error
}

func (*fakeStore) Revision(context.Context, string) (int64, error) { return 1, nil }

func (f *fakeStore) WatchDeletes(ctx context.Context, _ string, _ int64, onDelete func(key string, rev int64)) {
	for {
		select {
		case d := <-f.deletes:
			onDelete(d.key, d.rev)
		case <-ctx.Done():
			return
		}
	}
}

// LeaseAlive: every lease the test speaks of was revoked.
func (*fakeStore) LeaseAlive(context.Context, int64) (bool, error) { return false, nil }

func (f *fakeStore) RevokeLease(_ context.Context, lease int64) error { return f.revoke(lease) }

// unlocked is a Locker whose Unlock succeeds.
type unlocked struct{ failingLocker }

func (unlocked) Unlock(context.Context, *locks.Grant) error { return nil }

// revokedHolder sets up, in a synctest bubble, a run whose client 0 holds
// g (token 5) and whose observer watches the fake store; the nemesis then
// revokes g's lease (the revoke-lease fault on the holder), after which
// client 1 is granted the lock: through its own watch of the revoke's
// delete, which the observer's watch has not delivered yet. It returns
// the runner and client 0, and stops the observer when the test ends.
func revokedHolder(t *testing.T, store *fakeStore) (*runner, *client, *locks.Grant) {
	t.Helper()
	r := &runner{cfg: Config{Prefix: "/p/"}, rec: history.NewRecorder(0), admin: store, obs: store}
	a, b := &client{id: 0, r: r}, &client{id: 1, r: r}
	r.clients = []*client{a, b}
	ctx, stop := context.WithCancel(context.Background())
	observed := make(chan struct{})
	go func() { defer close(observed); r.observe(ctx, 1) }()
	t.Cleanup(func() { stop(); <-observed })

	g := &locks.Grant{Key: "/p/locks/lock/a", Token: 5, Lease: 0xa}
	a.emit(0, history.Event{Type: history.Invoke, F: history.FAcquire})
	b.emit(0, history.Event{Type: history.Invoke, F: history.FAcquire})
	at := a.emit(0, history.Event{Type: history.OK, F: history.FAcquire, Token: g.Token, Key: g.Key})
	a.setState(0, holding, g, at)
	r.held.add(g, at)
	time.Sleep(100 * time.Millisecond) // the bubble's clock: no time passes otherwise

	v := history.Fault{Fault: "revoke-lease", Target: "holder", Resolved: "client:0"}
	r.record(history.Event{Process: history.NemesisProcess, Type: history.Invoke, F: history.FFault, Value: history.FaultValue(v)})
	go func() {
		err := r.RevokeLease(context.Background(), 0)
		typ := history.OK
		if err != nil {
			typ = history.Fail
		}
		r.record(history.Event{Process: history.NemesisProcess, Type: typ, F: history.FFault, Value: history.FaultValue(v), Error: errString(err, "")})
	}()
	synctest.Wait() // the revoke was sent (and, unless it blocks, answered)
	time.Sleep(10 * time.Millisecond)
	b.emit(0, history.Event{Type: history.OK, F: history.FAcquire, Token: 7, Key: "/p/locks/lock/b"})
	time.Sleep(100 * time.Millisecond)
	return r, a, g
}

// holdEnds are the two ways a holder's hold ends by its own doing: its
// release (after its hold, the client idle again) and its lease-lost
// (told during its hold, the client still the holder).
var holdEnds = []struct {
	name string
	f    history.Function
	end  func(c *client, g *locks.Grant)
}{
	{"release", history.FRelease, func(c *client, g *locks.Grant) {
		c.setState(0, idle, nil, 0)
		c.release(0, nil, unlocked{}, g)
	}},
	{"lease-lost", history.FLeaseLost, func(c *client, g *locks.Grant) {
		lost := make(chan struct{})
		close(lost)
		g.Lost = lost
		c.leaseLost(0, g)
	}},
}

// ended is the index of process 0's first event of f, or -1.
func ended(events []history.Event, f history.Function) int {
	return slices.IndexFunc(events, func(e history.Event) bool { return e.Process == 0 && e.F == f })
}

// TestRevokedHolderEndsAfterItsKeyDeleted: the revoke of a holder's lease
// deleted its key and let the next holder in, but the observer's watch
// delivers that delete only after the revoked holder's hold has ended
// (released, or told its lease is lost) — the order TestManyLockNames met
// under load. The hold's end waits for the observer: nothing of it is
// recorded until the delete (revision 9, of the key created at 5) is
// delivered, and then the key-deleted event (token 5, revision 9, cause
// lease) comes before it, so the checker finds it within the hold and
// excuses the overlap as the revoke's (exclusion passes, revoked_overlaps
// 1). Before the fix the hold's end was recorded at once and the delete,
// seen after it, was recorded for no one: exclusion failed.
func TestRevokedHolderEndsAfterItsKeyDeleted(t *testing.T) {
	for _, end := range holdEnds {
		t.Run(end.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &fakeStore{deletes: make(chan watchedDelete), revoke: func(int64) error { return nil }}
				r, a, g := revokedHolder(t, store)
				done := make(chan struct{})
				go func() { defer close(done); end.end(a, g) }()
				synctest.Wait()
				if i := ended(r.rec.Events(), end.f); i >= 0 {
					t.Fatalf("%s recorded (line %d) before the observer saw the revoke's delete of the holder's key", end.f, i+1)
				}
				time.Sleep(50 * time.Millisecond) // the observer lags
				store.deletes <- watchedDelete{g.Key, 9}
				<-done
				time.Sleep(100 * time.Millisecond)
				r.clients[1].emit(0, history.Event{Type: history.Invoke, F: history.FRelease, Token: 7})
				r.clients[1].emit(0, history.Event{Type: history.OK, F: history.FRelease, Token: 7})

				events := r.rec.Events()
				del := slices.IndexFunc(events, func(e history.Event) bool { return e.F == history.FKeyDeleted })
				if del < 0 {
					t.Fatalf("no key-deleted event: %+v", events)
				}
				var d history.KeyDeletion
				if err := json.Unmarshal(events[del].Value, &d); err != nil || events[del].Token != 5 || d.Revision != 9 || d.Cause != history.CauseLease {
					t.Errorf("key-deleted %+v (value %s), want token 5, revision 9, cause lease", events[del], events[del].Value)
				}
				if i := ended(events, end.f); i < del {
					t.Errorf("%s at line %d, key-deleted at line %d: want the hold to end after", end.f, i+1, del+1)
				}
				// On the bubble's clock events recorded with no sleep between
				// them share a time; a real clock moves on between two
				// appends (a wake-up and two locks apart here): give each
				// event its line's nanosecond too.
				for i := range events {
					events[i].Time += int64(i)
				}
				ex := check.Check(events, check.Options{}).Checks[verdict.Exclusion]
				if ex.Verdict != verdict.Pass || ex.Metrics["revoked_overlaps"] != 1 {
					t.Errorf("exclusion %s, revoked_overlaps %v: want pass, the overlap excused as the revoke's: %+v", ex.Verdict, ex.Metrics["revoked_overlaps"], ex)
				}
				if len(r.held.byKey) != 0 || len(r.held.pending) != 0 {
					t.Errorf("left behind: held %v, pending %v", r.held.byKey, r.held.pending)
				}
			})
		})
	}
}

// TestRevokedHolderDoesNotWaitForNothing: a hold's end waits while the
// revoke is in flight, and not after it failed (no delete is coming); nor
// longer than observeWait for a delete the observer never delivers (its
// watch broken for good), then ending without a key-deleted event, as
// before.
func TestRevokedHolderDoesNotWaitForNothing(t *testing.T) {
	for _, end := range holdEnds {
		t.Run(end.name+"/revoke failed", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				answer := make(chan error)
				store := &fakeStore{deletes: make(chan watchedDelete), revoke: func(int64) error { return <-answer }}
				r, a, g := revokedHolder(t, store)
				done := make(chan struct{})
				go func() { defer close(done); end.end(a, g) }()
				synctest.Wait()
				if i := ended(r.rec.Events(), end.f); i >= 0 {
					t.Fatalf("%s recorded while the revoke was in flight", end.f)
				}
				answer <- errors.New("lease not found")
				<-done
				if ended(r.rec.Events(), end.f) < 0 {
					t.Fatalf("no %s", end.f)
				}
			})
		})
		t.Run(end.name+"/delete never seen", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &fakeStore{deletes: make(chan watchedDelete), revoke: func(int64) error { return nil }}
				r, a, g := revokedHolder(t, store)
				start := time.Now()
				end.end(a, g)
				if waited := time.Since(start); waited != observeWait {
					t.Errorf("waited %v for a delete never delivered, want observeWait (%v)", waited, observeWait)
				}
				events := r.rec.Events()
				if ended(events, end.f) < 0 || slices.ContainsFunc(events, func(e history.Event) bool { return e.F == history.FKeyDeleted }) {
					t.Errorf("want the hold ended with no key-deleted event: %+v", events)
				}
			})
		})
	}
}

// TestHeldGrantsExpect: only a grant still held is expected to be deleted;
// its hold's end, the observer's record or a failed revoke settles it.
func TestHeldGrantsExpect(t *testing.T) {
	var h heldGrants
	a := &locks.Grant{Key: "/l/a", Token: 5}
	b := &locks.Grant{Key: "/l/b", Token: 7}
	h.add(a, 100)
	h.expect(b) // not held: nothing to wait for
	if h.pendingDelete(b) != nil {
		t.Error("a grant not held is expected to be deleted")
	}
	h.expect(a)
	ch := h.pendingDelete(a)
	if ch == nil {
		t.Fatal("a held grant under revoke is not expected to be deleted")
	}
	if got := h.takeDeleted("/l/a", 9, 200); !slices.Equal(got, []*locks.Grant{a}) {
		t.Fatalf("takeDeleted = %v, want a", got)
	}
	if h.pendingDelete(a) == nil {
		t.Error("taken but not yet recorded: the hold's end must still wait")
	}
	h.settle(a)
	select {
	case <-ch:
	default:
		t.Error("settled, the wait goes on")
	}
	h.add(b, 100)
	h.expect(b)
	ch = h.pendingDelete(b)
	h.done(b) // the hold ended another way (a crash)
	select {
	case <-ch:
	default:
		t.Error("done, the wait goes on")
	}
	if len(h.pending) != 0 {
		t.Errorf("pending left: %v", h.pending)
	}
}
