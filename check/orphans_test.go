package check

import (
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// joined is process 0 asking for lock l at 0 (line 1), its key under
// lease "a" seen created at 10ms (line 2).
func joined(more ...history.Event) []history.Event {
	return append([]history.Event{ev(0, 0, inv, acq, 0), keyAt(msec(10), history.KeyCreate, 0, "a", 7, 0)}, more...)
}

// unlocked is joined, granted at 20ms and its Unlock returning nil at 1s
// (lines 3–5).
func unlocked(more ...history.Event) []history.Event {
	return joined(append([]history.Event{ev(msec(20), 0, ok, acq, 7), ev(sec(1)-msec(5), 0, inv, rel, 0), ev(sec(1), 0, ok, rel, 0)}, more...)...)
}

// failed is joined, its Lock returning an error of type typ at 1s (line 3).
func failed(typ history.Type, more ...history.Event) []history.Event {
	e := ev(sec(1), 0, typ, acq, 0)
	e.Error = "context deadline exceeded"
	return joined(append([]history.Event{e}, more...)...)
}

// later is another client's step at t, so that the history goes on.
func later(t int64) history.Event { return ev(t, 1, inv, acq, 0) }

func TestOrphans(t *testing.T) {
	runKeyCases(t, verdict.Orphans, CheckOrphans, []keyCase{
		{name: "a key left after Unlock returned nil (a swallowed release) fails",
			events:  unlocked(later(sec(6))),
			verdict: verdict.Fail, count: 1, lines: []int{2, 5}, says: "was still there when the history ended, 5s later after its Unlock returned nil at 1s",
			metrics: map[string]float64{"orphans_judged": 1, "orphans": 1, "orphan_ms_max": 5000}},
		{name: "a key deleted by its Unlock passes",
			events:  unlocked(keyAt(sec(1)+msec(3), history.KeyDelete, 0, "a", 9, 7), later(sec(6))),
			verdict: verdict.Pass, metrics: map[string]float64{"orphans_judged": 1, "orphans": 0, "orphan_ms_max": 3}},
		{name: "a key left after Lock returned an error fails",
			events:  failed(fail, later(sec(6))),
			verdict: verdict.Fail, count: 1, lines: []int{2, 3}, says: "after its Lock returned an error at 1s"},
		{name: "a key left after a cancelled Lock (info) fails",
			events:  failed(info, keyAt(sec(3)+msec(500), history.KeyDelete, 0, "a", 9, 7)),
			verdict: verdict.Fail, count: 1, lines: []int{2, 3, 4}, says: "was deleted only at 3.5s, 2.5s later"},
		{name: "a failed Lock's key removed within the bound passes",
			events:  failed(fail, keyAt(sec(2)+msec(900), history.KeyDelete, 0, "a", 9, 7), later(sec(6))),
			verdict: verdict.Pass, metrics: map[string]float64{"orphans_judged": 1}},
		{name: "a failed Lock's key taken over by the client's next Lock and deleted by its Unlock passes",
			events: failed(fail, ev(sec(1)+msec(200), 0, inv, acq, 0), ev(sec(1)+msec(210), 0, ok, acq, 7),
				ev(sec(4), 0, inv, rel, 0), ev(sec(4)+msec(2), 0, ok, rel, 0), keyAt(sec(4)+msec(3), history.KeyDelete, 0, "a", 9, 7), later(sec(8))),
			verdict: verdict.Pass, metrics: map[string]float64{"orphans_judged": 1}},
		{name: "a failed Lock's key left while the next Lock makes a key of its own fails (a leaked waiter key)",
			events: failed(fail, ev(sec(1)+msec(200), 0, inv, acq, 0), keyAt(sec(1)+msec(210), history.KeyCreate, 0, "a", 8, 0),
				ev(sec(2), 0, fail, acq, 0), later(sec(6))),
			verdict: verdict.Fail, count: 2, lines: []int{2, 3}, says: "(create revision 7, lease a) was still there when the history ended, 5s later after its Lock returned an error at 1s",
			metrics: map[string]float64{"orphans_judged": 2, "orphans": 2}},
		{name: "a join retried under a new key that forgot the first fails",
			events: joined(keyAt(sec(1)+msec(100), history.KeyCreate, 0, "a", 8, 0), ev(sec(1)+msec(200), 0, ok, acq, 8),
				ev(sec(2), 0, inv, rel, 0), ev(sec(2)+msec(2), 0, ok, rel, 0), keyAt(sec(2)+msec(3), history.KeyDelete, 0, "a", 9, 8), later(sec(6))),
			verdict: verdict.Fail, count: 1, lines: []int{2, 6}, says: "(create revision 7, lease a) was still there when the history ended",
			metrics: map[string]float64{"orphans_judged": 2, "orphans": 1}},
		{name: "a cut-off client's key may stay until the bound after the cut ends",
			events: failed(fail, namedFault(msec(500), inv, "isolate-client", "client:0"), namedFault(sec(3), ok, "isolate-client", "client:0"),
				keyAt(sec(4)+msec(500), history.KeyDelete, 0, "a", 9, 7), later(sec(8))),
			verdict: verdict.Pass},
		{name: "a cut-off client's key past the bound after the cut ends fails",
			events: failed(fail, namedFault(msec(500), inv, "isolate-client", "client:0"), namedFault(sec(3), ok, "isolate-client", "client:0"),
				keyAt(sec(5)+msec(500), history.KeyDelete, 0, "a", 9, 7), later(sec(8))),
			verdict: verdict.Fail, count: 1, lines: []int{2, 3, 6}, says: "past the 4s bound"},
		{name: "a client that crashes within the bound is left to the expiry check",
			events:  unlocked(ev(sec(2), 0, ok, history.FCrash, 0), later(sec(6))),
			verdict: verdict.Pass, notJudged: true},
		{name: "a history that ends before the bound is not judged",
			events:  unlocked(later(sec(2))),
			verdict: verdict.Pass, notJudged: true},
		{name: "a history without key-op events is not judged",
			events:  []history.Event{ev(0, 0, inv, acq, 0), ev(msec(1), 0, ok, acq, 7), ev(sec(1), 0, inv, rel, 0), ev(sec(1), 0, ok, rel, 0)},
			verdict: verdict.Pass, notJudged: true},
	})
}
