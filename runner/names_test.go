package runner

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/etcd"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
)

func TestLockNames(t *testing.T) {
	if got := lockNames(1); !slices.Equal(got, []string{"lock"}) {
		t.Errorf("lockNames(1) = %v, want [lock]: one name is today's history", got)
	}
	got := lockNames(12)
	if len(got) != 12 || got[0] != "job1" || got[9] != "job10" || got[11] != "job12" {
		t.Errorf("lockNames(12) = %v, want job1…job12", got)
	}
}

func TestNameOfKey(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"/p/locks/job1", "job1"},
		{"/p/locks/job10/694d7a1b2c", "job10"},
		{"/p/locks/lock/694d", "lock"},
		{"/other/locks/job1", "lock"},
	} {
		if got := nameOfKey("/p/", tc.key); got != tc.want {
			t.Errorf("nameOfKey(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

// TestNamePicker: the same seed picks the same names, every pick is a
// name, uniform reaches them all, round-robin takes them in turn from the
// client's offset, zipf favours job1 over the tail, and one name draws
// nothing from the stream.
func TestNamePicker(t *testing.T) {
	names := lockNames(16)
	picks := func(pick string, id int, seed uint64, n int) []string {
		rng := rand.New(rand.NewPCG(seed, uint64(id)))
		p := newNamePicker(names, scenarios.Workload{Kind: "hold", Locks: 16, Pick: pick}, id, rng)
		var out []string
		for range n {
			out = append(out, p.pick())
		}
		return out
	}
	for _, pick := range []string{"", "uniform", "round-robin", "zipf:1.2"} {
		a, b := picks(pick, 3, 7, 400), picks(pick, 3, 7, 400)
		if !slices.Equal(a, b) {
			t.Errorf("%s: same seed, different picks", pick)
		}
		for _, n := range a {
			if !slices.Contains(names, n) {
				t.Fatalf("%s: picked %q", pick, n)
			}
		}
	}
	if a, b := picks("uniform", 3, 7, 50), picks("uniform", 3, 8, 50); slices.Equal(a, b) {
		t.Error("uniform: another seed picked the same 50 names")
	}
	count := func(xs []string) map[string]int {
		m := map[string]int{}
		for _, x := range xs {
			m[x]++
		}
		return m
	}
	if u := count(picks("uniform", 0, 1, 4000)); len(u) != 16 || u["job1"] < 150 || u["job1"] > 350 {
		t.Errorf("uniform over 16 names, 4000 picks: %v (want all 16, job1 ≈ 250)", u)
	}
	if rr := picks("round-robin", 5, 1, 18); rr[0] != "job6" || rr[1] != "job7" || rr[10] != "job16" || rr[11] != "job1" {
		t.Errorf("round-robin from client 5: %v, want job6, job7, … job16, job1, …", rr)
	}
	z := count(picks("zipf:1.2", 0, 1, 4000))
	if z["job1"] < 4*z["job16"] || z["job1"] < z["job2"] {
		t.Errorf("zipf:1.2: job1 %d, job2 %d, job16 %d: want job1 the hottest, far above job16", z["job1"], z["job2"], z["job16"])
	}
	rng := rand.New(rand.NewPCG(1, 2))
	one := newNamePicker(lockNames(1), scenarios.Workload{Kind: "hold"}, 0, rng)
	before := *rng
	if one.pick() != "lock" || *rng != before {
		t.Error("one name: not \"lock\", or it drew from the stream")
	}
}

// TestManyLockNames runs clients over 12 names on a real cluster: every
// event names one of them, grants of different names overlap (the names
// are locks of their own) while every check still passes, the crash of a
// holder is recorded under the name it held, and a key-deleted event (a
// revoked holder's key, when the revoke beats its release) names its key's
// name.
func TestManyLockNames(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	sc, err := scenarios.Parse("many.yaml", strings.NewReader(`
name: many
clients: 6
lease_ttl: 2s
duration: 2s
workload: {kind: hold, hold: 300ms, locks: 12, pick: "zipf:1.1"}
steps:
  - {at: 400ms, fault: revoke-lease, target: holder}
  - {at: 1000ms, fault: crash-client, target: holder, for: 300ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, lock := range []string{"queue", "txn"} {
		t.Run(lock, func(t *testing.T) {
			out, err := Run(context.Background(), Config{Backend: etcd.Backend{}, Scenario: sc, Lock: lock, Seed: 3, Prefix: "/lockbench/test-many-" + lock + "/",
				Endpoints: c.Endpoints(), Cluster: etcd.Members{Members: c}})
			if err != nil {
				t.Fatal(err)
			}
			names := lockNames(12)
			granted := map[string]int{}
			holding := map[string]int{}       // name → process holding it
			lastGranted := map[int32]string{} // process → the name it was last granted
			overlap, crashes, deleted := false, 0, 0
			for _, e := range out.Events {
				if (e.Process >= 0 || e.F == history.FKeyDeleted) && !slices.Contains(names, e.Lock) {
					t.Fatalf("event %+v names lock %q, not one of job1…job12", e, e.Lock)
				}
				if e.F == history.FKeyDeleted {
					deleted++
				}
				switch {
				case e.F == history.FAcquire && e.Type == history.OK:
					granted[e.Lock]++
					holding[e.Lock] = int(e.Process)
					lastGranted[e.Process] = e.Lock
					overlap = overlap || len(holding) > 1
				case e.F == history.FRelease && e.Type == history.Invoke, e.F == history.FCrash:
					// The crash targets the holder, which may have begun
					// its release when it strikes (a loaded machine): it
					// is recorded under the name it was last granted.
					if e.F == history.FCrash && lastGranted[e.Process] == e.Lock {
						crashes++
					}
					if holding[e.Lock] == int(e.Process) {
						delete(holding, e.Lock)
					}
				}
			}
			if len(granted) < 2 {
				t.Errorf("grants on %d names (%v), want ≥ 2 of 12", len(granted), granted)
			}
			if crashes != 1 {
				t.Errorf("%d crashes recorded under the name the crashed client was last granted, want 1", crashes)
			}
			// The revoke races the longest holder's release (holder is the
			// one likeliest to be releasing), so its key-deleted event is
			// not certain: when there is one, its name was checked above.
			t.Logf("%d key-deleted events", deleted)
			if !overlap {
				t.Error("no two names were ever held at once: the names are not separate locks")
			}
			rep := check.Check(out.Events, check.Options{LivenessBound: sc.TTL() + c.Election()})
			for _, name := range []string{verdict.Exclusion, verdict.Liveness, verdict.Symmetry, verdict.Lease} {
				if r := rep.Checks[name]; r.Verdict != verdict.Pass {
					t.Errorf("%s %s: %+v", name, r.Verdict, r)
				}
			}
		})
	}
}

// TestTargetsWithSeveralNames: holder is the longest holder of any name;
// waiter:K counts in that holder's name's queue, in request order, or in
// the longest waiter's name's when nothing is held.
func TestTargetsWithSeveralNames(t *testing.T) {
	at := func(id int, name string, s clientState, since, seq int64) *client {
		c := &client{id: id}
		c.queue.name, c.queue.state, c.queue.heldSince, c.queue.seq = name, s, since, seq
		return c
	}
	r := &runner{clients: []*client{
		at(0, "job1", waiting, 0, 5),
		at(1, "job10", holding, 20, 0),
		at(2, "job1", holding, 10, 0), // the longest holder
		at(3, "job10", waiting, 0, 1),
		at(4, "job1", waiting, 0, 3),
	}}
	if h := r.Holder(); h != 2 {
		t.Errorf("holder %d, want 2 (held job1 since 10)", h)
	}
	if w := r.Waiters(); !slices.Equal(w, []int{4, 0}) {
		t.Errorf("waiters %v, want job1's queue [4 0]", w)
	}
	r.clients[1].queue.state, r.clients[2].queue.state = idle, idle
	if w := r.Waiters(); !slices.Equal(w, []int{3}) {
		t.Errorf("nothing held: waiters %v, want the longest waiter's name (job10): [3]", w)
	}
}

// closeCounting is a Locker that notes its Close.
type closeCounting struct {
	failingLocker
	closed *[]string
	name   string
}

func (l closeCounting) Close(context.Context) error {
	*l.closed = append(*l.closed, l.name)
	return nil
}

// TestLockerSetKeepsTheRecentlyUsed: past maxLockers, making a Locker for
// a new name closes the one used longest ago, not the oldest made (a name
// used again is kept), and never the one just made; what is left is what
// all returns.
func TestLockerSetKeepsTheRecentlyUsed(t *testing.T) {
	var closed []string
	s := &lockerSet{make: func(_ context.Context, name string) (locks.Locker, error) {
		return closeCounting{closed: &closed, name: name}, nil
	}}
	ctx := context.Background()
	for i := range maxLockers {
		s.get(ctx, "job"+strconv.Itoa(i))
	}
	s.get(ctx, "job0") // used again: now job1 is the longest unused
	if len(closed) != 0 {
		t.Fatalf("closed %v at %d Lockers, want none", closed, maxLockers)
	}
	s.get(ctx, "new1")
	s.get(ctx, "new2")
	if want := []string{"job1", "job2"}; !slices.Equal(closed, want) {
		t.Fatalf("closed %v, want %v", closed, want)
	}
	kept := s.all(false)
	if len(kept) != maxLockers {
		t.Fatalf("%d Lockers kept, want %d", len(kept), maxLockers)
	}
	for _, l := range kept {
		if n := l.(closeCounting).name; slices.Contains(closed, n) {
			t.Errorf("closed Locker %s is still kept", n)
		}
	}
	if l := s.get(ctx, "job1"); l.(closeCounting).name != "job1" {
		t.Errorf("job1 again: got %s's Locker", l.(closeCounting).name)
	}
}
