package check

import (
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// Checks judge per lock name (history.Event.Lock): the runner's many-names
// workloads (job1…jobN) rely on it. Each case below is a pair: the same
// history on two names, where job1 and job10 are separate locks (one a
// string prefix of the other, as a prefix bug would confuse them), and on
// one name, where it is a violation or not the other way round.

// on is an event of process p on lock name.
func on(name string, t int64, p int, typ history.Type, f history.Function, token int64) history.Event {
	return history.Event{Time: t, Process: int32(p), Type: typ, F: f, Lock: name, Token: token}
}

// overlapping: p0 holds a from 1 to 6 ms, p1 holds b from 3 to 8 ms.
func overlapping(a, b string) []history.Event {
	return []history.Event{
		on(a, msec(0), 0, inv, acq, 0), on(a, msec(1), 0, ok, acq, 10),
		on(b, msec(2), 1, inv, acq, 0), on(b, msec(3), 1, ok, acq, 11),
		on(a, msec(6), 0, inv, rel, 0), on(a, msec(7), 0, ok, rel, 0),
		on(b, msec(8), 1, inv, rel, 0), on(b, msec(9), 1, ok, rel, 0),
	}
}

func TestExclusionPerName(t *testing.T) {
	for _, tc := range []struct {
		a, b  string
		want  verdict.Verdict
		count float64
	}{
		{"job1", "job10", verdict.Pass, 0},
		{"job10", "job1", verdict.Pass, 0},
		{"job1", "job1", verdict.Fail, 1},
		{"job10", "job10", verdict.Fail, 1},
	} {
		res := CheckExclusion(overlapping(tc.a, tc.b), Options{})
		if res.Verdict != tc.want || res.Count != int(tc.count) {
			t.Errorf("%s held while %s held: %s with %d violations, want %s with %v", tc.a, tc.b, res.Verdict, res.Count, tc.want, tc.count)
		}
		for _, v := range res.Violations {
			if v.Lock != tc.a {
				t.Errorf("violation on lock %q, want %q", v.Lock, tc.a)
			}
		}
	}
}

// TestFencingPerName: tokens grow per name; job10's token may be below
// job1's earlier one, but not below job10's own.
func TestFencingPerName(t *testing.T) {
	hist := func(a, b string) []history.Event {
		return []history.Event{
			on(a, msec(0), 0, inv, acq, 0), on(a, msec(1), 0, ok, acq, 20),
			on(a, msec(2), 0, inv, rel, 0), on(a, msec(3), 0, ok, rel, 0),
			on(b, msec(4), 1, inv, acq, 0), on(b, msec(5), 1, ok, acq, 12),
			on(b, msec(6), 1, inv, rel, 0), on(b, msec(7), 1, ok, rel, 0),
		}
	}
	if res := CheckFencing(hist("job1", "job10"), Options{}); res.Verdict != verdict.Pass {
		t.Errorf("job10 token 12 after job1 token 20: %s %+v, want pass", res.Verdict, res.Violations)
	}
	if res := CheckFencing(hist("job1", "job1"), Options{}); res.Verdict != verdict.Fail {
		t.Errorf("job1 token 12 after job1 token 20: %s, want fail", res.Verdict)
	}
}

// TestLivenessPerName: p1 waits 3 s for b (granted before) while p0
// holds a. With b a name
// of its own, b is free and waited for: a stall. On one name the lock is
// held all along: no stall.
func TestLivenessPerName(t *testing.T) {
	hist := func(a, b string) []history.Event {
		return []history.Event{
			// p1's first grant of b, so that b's wait is after its first
			// grant (one before gets a client fault's bound).
			on(b, 0, 1, inv, acq, 0), on(b, msec(1), 1, ok, acq, 9),
			on(b, msec(2), 1, inv, rel, 0), on(b, msec(3), 1, ok, rel, 0),
			on(a, msec(3), 0, inv, acq, 0), on(a, msec(4), 0, ok, acq, 10),
			on(b, msec(5), 1, inv, acq, 0),
			on(a, sec(3), 0, inv, rel, 0), on(a, sec(3)+msec(1), 0, ok, rel, 0),
			on(b, sec(3)+msec(2), 1, ok, acq, 11),
			on(b, sec(3)+msec(3), 1, inv, rel, 0), on(b, sec(3)+msec(4), 1, ok, rel, 0),
		}
	}
	opts := Options{QuietBound: 100 * time.Millisecond}
	res := CheckLiveness(hist("job1", "job10"), opts)
	if res.Verdict != verdict.Fail || len(res.Violations) == 0 || res.Violations[0].Lock != "job10" {
		t.Errorf("job10 free and waited for 3 s while job1 held: %s %+v, want a stall on job10", res.Verdict, res.Violations)
	}
	if res := CheckLiveness(hist("job1", "job1"), opts); res.Verdict != verdict.Pass {
		t.Errorf("job1 held while waited for: %s %+v, want pass", res.Verdict, res.Violations)
	}
}

// TestFairnessPerName: p0 waits for a (its second request); p1 asks for b
// later and is granted before p0. Another name's grant is no bypass; the
// same name's is, under FIFO.
func TestFairnessPerName(t *testing.T) {
	hist := func(a, b string) []history.Event {
		return []history.Event{
			// p0's first request of a (never judged), then p2 holds a.
			on(a, 0, 0, inv, acq, 0), on(a, msec(1), 0, ok, acq, 10),
			on(a, msec(2), 0, inv, rel, 0), on(a, msec(3), 0, ok, rel, 0),
			on(a, msec(4), 2, inv, acq, 0), on(a, msec(5), 2, ok, acq, 11),
			on(a, msec(10), 0, inv, acq, 0),
			on(b, msec(200), 1, inv, acq, 0),
			on(a, msec(300), 2, inv, rel, 0), on(a, msec(301), 2, ok, rel, 0),
			on(b, msec(302), 1, ok, acq, 12),
			on(b, msec(310), 1, inv, rel, 0), on(b, msec(311), 1, ok, rel, 0),
			on(a, msec(320), 0, ok, acq, 13),
			on(a, msec(330), 0, inv, rel, 0), on(a, msec(331), 0, ok, rel, 0),
		}
	}
	opts := Options{Order: verdict.FIFO, BypassSlack: 50 * time.Millisecond, StarvationMin: -1}
	if res := CheckFairness(hist("job1", "job10"), opts); res.Verdict != verdict.Pass || res.Metrics["inversions"] != 0 {
		t.Errorf("job10 granted while job1 waited: %s, inversions %v %+v, want pass, 0", res.Verdict, res.Metrics["inversions"], res.Violations)
	}
	res := CheckFairness(hist("job1", "job1"), opts)
	if res.Verdict != verdict.Fail || res.Metrics["fifo_bypasses"] != 1 {
		t.Errorf("job1 granted to a later request: %s, fifo_bypasses %v, want fail, 1", res.Verdict, res.Metrics["fifo_bypasses"])
	}
}
