package check

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// clockEvent is the FClock event of a worker that drove procs with the
// given uncertainty (ns).
func clockEvent(worker string, uncertainty int64, procs ...int) history.Event {
	v, _ := json.Marshal(history.ClockValue{Worker: worker, Processes: procs, UncertaintyNS: uncertainty})
	return history.Event{Time: 0, Process: history.NemesisProcess, Type: history.OK, F: history.FClock, Value: v}
}

// TestExclusionClockUncertainty: in a history merged from two workers
// (process 0 on one, 1 on the other), an overlap of their holds no longer
// than their uncertainties together is not certain (unknown, counted
// apart), a longer one fails, and one of two processes of one worker (one
// clock), or in a history without clock events, fails as before.
func TestExclusionClockUncertainty(t *testing.T) {
	// Process 0 holds 1–10, process 1 is granted at 8: a 2 ns overlap.
	holds := func(p1 int) []history.Event {
		return []history.Event{
			ev(0, 0, inv, acq, 0), ev(1, 0, ok, acq, 10), ev(2, p1, inv, acq, 0),
			ev(8, p1, ok, acq, 11), ev(10, 0, inv, rel, 0), ev(11, 0, ok, rel, 0), ev(12, p1, inv, rel, 0), ev(13, p1, ok, rel, 0),
		}
	}
	tests := []struct {
		name   string
		clocks []history.Event
		p1     int
		want   verdict.Verdict
		count  int
	}{
		{"one clock", nil, 1, verdict.Fail, 1},
		{"two workers, 1+1 ns: overlap longer", []history.Event{clockEvent("1/2", 1, 0), clockEvent("2/2", 1, 1)}, 1, verdict.Fail, 1},
		{"two workers, 1+1 ns: overlap as long", []history.Event{clockEvent("1/2", 1, 0), clockEvent("2/2", 1, 1)}, 1, verdict.Unknown, 0},
		{"two workers, 0+3 ns", []history.Event{clockEvent("1/2", 0, 0), clockEvent("2/2", 3, 1)}, 1, verdict.Unknown, 0},
		{"one worker's two processes", []history.Event{clockEvent("1/2", 5, 0, 1)}, 1, verdict.Fail, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := append(append([]history.Event{}, tt.clocks...), holds(tt.p1)...)
			if tt.name == "two workers, 1+1 ns: overlap longer" {
				events[len(tt.clocks)+3].Time = 7 // granted at 7: a 3 ns overlap
			}
			r := CheckExclusion(events, Options{})
			if r.Verdict != tt.want || r.Count != tt.count {
				t.Fatalf("verdict %s, count %d; want %s, %d (%s)", r.Verdict, r.Count, tt.want, tt.count, r.Note)
			}
			if tt.want == verdict.Unknown && (!strings.Contains(r.Note, "clocks' uncertainty") || r.Metrics["clock_uncertain_overlaps"] != 1) {
				t.Errorf("note %q, metrics %v: want the uncertain overlap said and counted", r.Note, r.Metrics)
			}
		})
	}
}

// TestFencingClockUncertainty: in a merged history, a grant whose token
// is below an earlier grant's of another worker, closer to it than their
// clocks' uncertainties together, may have come first: unknown, counted
// apart; further apart, or on one clock, it fails as before.
func TestFencingClockUncertainty(t *testing.T) {
	// Process 1 is granted token 11 at 5, process 0 token 10 at gap later.
	grants := func(gap int64) []history.Event {
		return []history.Event{
			ev(0, 1, inv, acq, 0), ev(5, 1, ok, acq, 11), ev(6, 1, inv, rel, 0), ev(7, 1, ok, rel, 0),
			ev(1, 0, inv, acq, 0), ev(5+gap, 0, ok, acq, 10), ev(20, 0, inv, rel, 0), ev(21, 0, ok, rel, 0),
		}
	}
	two := []history.Event{clockEvent("1/2", 2, 0), clockEvent("2/2", 2, 1)}
	tests := []struct {
		name   string
		clocks []history.Event
		gap    int64
		want   verdict.Verdict
	}{
		{"one clock", nil, 3, verdict.Fail},
		{"two workers, 2+2 ns: 3 ns apart", two, 3, verdict.Unknown},
		{"two workers, 2+2 ns: 5 ns apart", two, 5, verdict.Fail},
		{"one worker's two processes", []history.Event{clockEvent("1/2", 5, 0, 1)}, 3, verdict.Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := append(append([]history.Event{}, tt.clocks...), grants(tt.gap)...)
			slices.SortStableFunc(events, func(a, b history.Event) int { return cmp.Compare(a.Time, b.Time) })
			r := CheckFencing(events, Options{})
			if r.Verdict != tt.want {
				t.Fatalf("verdict %s, want %s (%s, %v)", r.Verdict, tt.want, r.Note, r.Violations)
			}
			if tt.want == verdict.Unknown && (!strings.Contains(r.Note, "clocks' uncertainty") || r.Metrics["clock_uncertain_regressions"] != 1) {
				t.Errorf("note %q, metrics %v: want the uncertain regression said and counted", r.Note, r.Metrics)
			}
		})
	}
}
