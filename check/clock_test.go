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

// withRevision is e with its Revision set.
func withRevision(e history.Event, rev int64) history.Event {
	e.Revision = rev
	return e
}

// TestRevisionsOrderWorkers: an overlap of two workers' holds within
// their clocks' uncertainty is no overlap when one holder's release wrote
// a revision the other's connection had seen before its grant (a release
// ok or info alike), whichever the clocks put first; a revision seen
// below it, none written, or a hold ended otherwise than by a release
// leaves it unknown.
func TestRevisionsOrderWorkers(t *testing.T) {
	clocks := []history.Event{clockEvent("1/2", 1, 0), clockEvent("2/2", 1, 1)}
	// Process 0 holds 1–10, process 1 is granted at 8: 2 ns, within 1+1.
	holds := func(released history.Type, wrote, seen int64) []history.Event {
		return append(slices.Clone(clocks),
			ev(0, 0, inv, acq, 0), ev(1, 0, ok, acq, 10), ev(2, 1, inv, acq, 0),
			withRevision(ev(8, 1, ok, acq, 11), seen), ev(10, 0, inv, rel, 0), withRevision(ev(11, 0, released, rel, 0), wrote),
			ev(12, 1, inv, rel, 0), ev(13, 1, ok, rel, 0))
	}
	tests := []struct {
		name   string
		events []history.Event
		want   verdict.Verdict
	}{
		{"seen the release's write", holds(ok, 20, 20), verdict.Pass},
		{"seen past it", holds(ok, 20, 25), verdict.Pass},
		{"release of unknown outcome that wrote", holds(info, 20, 21), verdict.Pass},
		{"seen below it", holds(ok, 20, 19), verdict.Unknown},
		{"nothing written", holds(ok, 0, 19), verdict.Unknown},
		{"no revision seen", holds(ok, 20, 0), verdict.Unknown},
	}
	// The clocks put process 1's grant inside process 0's hold, but
	// process 1 released first (revision 15), before process 0's grant
	// (seen 16): the clocks misplaced it by more than the overlap.
	second := holds(ok, 0, 0)
	second[len(clocks)+1] = withRevision(second[len(clocks)+1], 16)
	second[len(clocks)+7] = withRevision(second[len(clocks)+7], 15)
	tests = append(tests, struct {
		name   string
		events []history.Event
		want   verdict.Verdict
	}{"the later grant by the clocks released first", second, verdict.Pass})
	lost := holds(ok, 20, 20)
	lost[len(clocks)+4] = ev(10, 0, ok, history.FLeaseLost, 0) // the hold ends by a lost lease, not the release
	tests = append(tests, struct {
		name   string
		events []history.Event
		want   verdict.Verdict
	}{"hold ended by a lost lease", lost, verdict.Unknown})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := CheckExclusion(tt.events, Options{})
			if r.Verdict != tt.want || r.Count != 0 {
				t.Fatalf("verdict %s, count %d; want %s, 0 (%s)", r.Verdict, r.Count, tt.want, r.Note)
			}
			ordered := r.Metrics["revision_ordered_overlaps"]
			if (tt.want == verdict.Pass) != (ordered == 1) || tt.want == verdict.Pass && !strings.Contains(r.Note, "ordered by etcd's revisions") {
				t.Errorf("metrics %v, note %q: want the overlap counted as ordered by revisions only when it passes", r.Metrics, r.Note)
			}
		})
	}
}

// TestRevisionsOrderWorkersTokens: two workers' grants closer than their
// clocks' uncertainty, the later by the clocks carrying the lower token:
// when the revisions show the lower token's hold ended before the other's
// grant, it came first (pass); when they show the higher token's hold
// ended first, the token went down (fail, whatever the clocks say).
func TestRevisionsOrderWorkersTokens(t *testing.T) {
	two := []history.Event{clockEvent("1/2", 2, 0), clockEvent("2/2", 2, 1)}
	// Process 1 is granted token 11 at 5, process 0 token 10 at 8.
	grants := func(wrote1, seen0, wrote0, seen1 int64) []history.Event {
		events := append(slices.Clone(two),
			ev(0, 1, inv, acq, 0), withRevision(ev(5, 1, ok, acq, 11), seen1), ev(6, 1, inv, rel, 0), withRevision(ev(7, 1, ok, rel, 0), wrote1),
			ev(1, 0, inv, acq, 0), withRevision(ev(8, 0, ok, acq, 10), seen0), ev(9, 0, inv, rel, 0), withRevision(ev(10, 0, ok, rel, 0), wrote0))
		slices.SortStableFunc(events, func(a, b history.Event) int { return cmp.Compare(a.Time, b.Time) })
		return events
	}
	tests := []struct {
		name   string
		events []history.Event
		want   verdict.Verdict
	}{
		{"token 10's hold ended before token 11's grant", grants(0, 0, 30, 31), verdict.Pass},
		{"token 11's hold ended before token 10's grant", grants(30, 31, 0, 0), verdict.Fail},
		{"no revisions", grants(0, 0, 0, 0), verdict.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := CheckFencing(tt.events, Options{})
			if r.Verdict != tt.want {
				t.Fatalf("verdict %s, want %s (%s, %v)", r.Verdict, tt.want, r.Note, r.Violations)
			}
		})
	}
}
