package check

import (
	"time"

	"reflect"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

func rpcs(t int64, p int, n int64) history.Event {
	return history.Event{Time: t, Process: int32(p), Type: ok, F: FRPCs, Value: history.IntValue(n)}
}

func TestHerd(t *testing.T) {
	// three grants in turn; wakes lists who wakes before grants 2 and 3
	turns := func(wakes [2][]int) []history.Event {
		evs := []history.Event{ev(1, 0, ok, acq, 10), ev(2, 0, inv, rel, 0)}
		for _, p := range wakes[0] {
			evs = append(evs, proc(3, p, ok, wake))
		}
		evs = append(evs, ev(4, 1, ok, acq, 11), ev(5, 1, inv, rel, 0))
		for _, p := range wakes[1] {
			evs = append(evs, proc(6, p, ok, wake))
		}
		return append(evs, ev(7, 2, ok, acq, 12), ev(8, 2, inv, rel, 0))
	}
	runCases(t, verdict.Herd, CheckHerd, []checkCase{
		{
			name:    "one wake-up per handoff",
			events:  append(turns([2][]int{{1}, {2}}), rpcs(9, 0, 10), rpcs(9, 1, 20), rpcs(9, 2, 30)),
			verdict: verdict.Pass,
			metrics: map[string]float64{"grants": 3, "handoffs": 2, "wakeups": 2, "wakeups_per_handoff": 1, "rpcs": 60, "rpcs_per_acquire": 20, "rpcs_per_handoff": 30},
		},
		{
			name:    "every waiter wakes",
			events:  turns([2][]int{{1, 2, 3}, {2, 3, 4}}),
			verdict: verdict.Pass,
			note:    "no rpcs events",
			metrics: map[string]float64{"wakeups": 6, "wakeups_per_handoff": 3},
			absent:  []string{"rpcs", "rpcs_per_acquire", "rpcs_per_handoff"},
		},
		{
			name: "nothing recorded", notJudged: true,
			events:  []history.Event{ev(1, 0, ok, acq, 10)},
			verdict: verdict.Pass,
			note:    "no wakeup events; no rpcs events",
			metrics: map[string]float64{"grants": 1, "handoffs": 0, "wakeups": 0},
			absent:  []string{"wakeups_per_handoff"},
		},
		{
			name: "a process's last rpcs report counts", notJudged: true,
			events:  []history.Event{ev(1, 0, ok, acq, 10), rpcs(2, 0, 5), rpcs(3, 0, 8)},
			verdict: verdict.Pass,
			metrics: map[string]float64{"rpcs": 8, "rpcs_per_acquire": 8},
			absent:  []string{"rpcs_per_handoff"},
		},
	})
	res := CheckHerd(append(turns([2][]int{{1, 2}, {2}}), rpcs(9, 1, 4)), Options{})
	want := map[string]map[int]float64{"wakeups": {1: 1, 2: 2}, "rpcs": {1: 4}}
	if !reflect.DeepEqual(res.PerProcess, want) {
		t.Errorf("per process = %v, want %v", res.PerProcess, want)
	}
}

func TestCheckComposes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []history.Event
		want   verdict.Verdict
	}{
		{"clean", []history.Event{ev(0, 0, inv, acq, 0), ev(1, 0, ok, acq, 10), ev(2, 0, inv, rel, 0)}, verdict.Pass},
		{"unknown resource", []history.Event{ev(1, 0, ok, acq, 10), w(2, 0, inv, 10, 1), w(3, 0, ok, 0, 0)}, verdict.Unknown},
		{"fail beats unknown", []history.Event{ev(1, 0, ok, acq, 10), ev(2, 1, ok, acq, 11), w(3, 0, inv, 10, 1), w(4, 0, ok, 0, 0)}, verdict.Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.events, Options{})
			if r.Verdict != tc.want {
				t.Errorf("verdict = %s, want %s: %+v", r.Verdict, tc.want, r.Checks)
			}
			if len(r.Checks) != len(verdict.CheckNames) {
				t.Errorf("%d checks, want %d", len(r.Checks), len(verdict.CheckNames))
			}
			var vs []verdict.Verdict
			for _, n := range verdict.CheckNames {
				c, ok := r.Checks[n]
				if !ok {
					t.Errorf("check %q missing", n)
				}
				vs = append(vs, c.Verdict)
			}
			if verdict.Worst(vs...) != r.Verdict {
				t.Errorf("report verdict %s is not the worst of %v", r.Verdict, vs)
			}
		})
	}
}

func TestOptionsWithDefaults(t *testing.T) {
	o := Options{}.WithDefaults()
	want := Options{MaxViolations: 100, LivenessBound: DefaultLivenessBound, StarvationMin: 2 * DefaultLivenessBound, StarvationGrants: 10, RecoverySlack: DefaultRecoverySlack,
		ElectionTimeout: DefaultElectionTimeout, RequestTimeout: DefaultRequestTimeout, OverrunBound: DefaultOverrunBound,
		CancelBound: 5 * time.Second} // 1 s + 2 cleanups × max(1 s deadline, 2 s)
	if o != want {
		t.Errorf("defaults = %+v, want %+v", o, want)
	}
	if o := (Options{LivenessBound: time.Second * 2}).WithDefaults(); o.StarvationMin != 4*time.Second {
		t.Errorf("starvation min follows the bound: %v", o.StarvationMin)
	}
	if o := (Options{LivenessBound: -1}).WithDefaults(); o.LivenessBound != -1 || o.StarvationMin != 2*DefaultLivenessBound {
		t.Errorf("bound off: %+v", o)
	}
}

func TestMaxViolationsCapsListNotCount(t *testing.T) {
	var evs []history.Event
	for p := range 6 {
		evs = append(evs, ev(int64(p), p, ok, acq, int64(10+p)))
	}
	r := CheckExclusion(evs, Options{MaxViolations: 4})
	if r.Count != 15 || len(r.Violations) != 4 {
		t.Errorf("count %d, listed %d; want 15, 4", r.Count, len(r.Violations))
	}
}
