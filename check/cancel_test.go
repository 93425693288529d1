package check

import (
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

func TestCancel(t *testing.T) {
	// p0 holds from 1ms; p1 and p2 wait from 100ms; cancel-waiters is
	// invoked at 1s and done at 1.001s. Under the default options the
	// bound is 1s + 2 × max(1s, 2s) = 5s.
	waiting := []history.Event{
		ev(0, 0, inv, acq, 0), ev(msec(1), 0, ok, acq, 10),
		ev(msec(100), 1, inv, acq, 0), ev(msec(100), 2, inv, acq, 0),
	}
	cancelled := func(more ...history.Event) []history.Event {
		return cat(waiting, []history.Event{
			namedFault(sec(1), inv, "cancel-waiters", ""), namedFault(sec(1)+msec(1), ok, "cancel-waiters", ""),
		}, more)
	}
	gaveUp := func(t int64, p int) history.Event { return errEv(ev(t, p, fail, acq, 0), "context canceled") }
	quick := []history.Event{gaveUp(sec(1)+msec(3), 1), gaveUp(sec(1)+msec(4), 2)}
	runCases(t, verdict.Cancel, CheckCancel, []checkCase{
		{
			name: "nothing cancelled: not judged", events: waiting, verdict: verdict.Pass,
			note: "no acquire was cancelled", notJudged: true,
			metrics: map[string]float64{"cancelled": 0, "cancel_bound_ms": 5000}, absent: []string{"cancel_return_ms_max"},
		},
		{
			name: "both waiters return at once", events: cancelled(quick...), verdict: verdict.Pass,
			metrics: map[string]float64{"cancelled": 2, "cancel_return_ms_max": 3, "cancel_return_ms_p50": 2},
		},
		{
			name:    "a waiter whose cleanup waits for the members (etcd #18082)",
			events:  cancelled(gaveUp(sec(1)+msec(3), 1), errEv(ev(sec(9), 2, info, acq, 0), "context canceled")),
			verdict: verdict.Fail,
			want: []Violation{{Check: verdict.Cancel, Lock: "l", Lines: []int{4, 6, 8},
				Message: `process 2's acquire of "l" (invoked at 100ms) was cancelled by 1.001s and returned only at 9s — ` +
					`7.999s after the cancellation (time paused not counted), past the 5s a cancelled call may take to return`}},
			metrics: map[string]float64{"cancelled": 2, "cancel_return_ms_max": 7999},
		},
		{
			name:    "exactly at the bound passes",
			events:  cancelled(gaveUp(sec(6)+msec(1), 1), gaveUp(sec(1)+msec(4), 2)),
			verdict: verdict.Pass,
		},
		{
			name:    "never returned: judged to the history's end",
			events:  cancelled(gaveUp(sec(1)+msec(3), 1), ev(sec(8), 0, inv, rel, 10), ev(sec(8)+msec(1), 0, ok, rel, 10)),
			verdict: verdict.Fail,
			want: []Violation{{Check: verdict.Cancel, Lock: "l", Lines: []int{4, 6},
				Message: `process 2's acquire of "l" (invoked at 100ms) was cancelled by 1.001s and had still not returned when the history ended — ` +
					`7s after the cancellation (time paused not counted), past the 5s a cancelled call may take to return`}},
		},
		{
			name:    "crashed while still in the call",
			events:  cancelled(gaveUp(sec(1)+msec(3), 1), proc(sec(7), 2, info, history.FCrash)),
			verdict: verdict.Fail,
			want: []Violation{{Check: verdict.Cancel, Lock: "l", Lines: []int{4, 6, 8},
				Message: `process 2's acquire of "l" (invoked at 100ms) was cancelled by 1.001s and had still not returned when its process crashed or did something else at 7s — ` +
					`5.999s after the cancellation (time paused not counted), past the 5s a cancelled call may take to return`}},
		},
		{
			name: "time paused does not count",
			events: cancelled(gaveUp(sec(1)+msec(3), 1), proc(sec(2), 2, ok, history.FPause), proc(sec(6), 2, ok, history.FResume),
				gaveUp(sec(6)+msec(500), 2)),
			verdict: verdict.Pass,
			metrics: map[string]float64{"cancel_return_ms_max": 1499},
		},
		{
			name:    "the bound follows the request deadline",
			opts:    Options{RequestTimeout: 3 * time.Second},
			events:  cancelled(gaveUp(sec(1)+msec(3), 1), gaveUp(sec(7), 2)),
			verdict: verdict.Pass, metrics: map[string]float64{"cancel_bound_ms": 7000},
		},
		{
			name:    "no deadline: the cleanup timeout sets it",
			opts:    Options{RequestTimeout: -1},
			events:  cancelled(quick...),
			verdict: verdict.Pass, metrics: map[string]float64{"cancel_bound_ms": 5000},
		},
		{
			name:    "a tighter bound",
			opts:    Options{CancelBound: 500 * time.Millisecond},
			events:  cancelled(gaveUp(sec(2), 1), gaveUp(sec(1)+msec(4), 2)),
			verdict: verdict.Fail,
			want: []Violation{{Check: verdict.Cancel, Lock: "l", Lines: []int{3, 6, 7},
				Message: `process 1's acquire of "l" (invoked at 100ms) was cancelled by 1.001s and returned only at 2s — ` +
					`999ms after the cancellation (time paused not counted), past the 500ms a cancelled call may take to return`}},
		},
		{
			name:    "negative bound: figures only",
			opts:    Options{CancelBound: -1},
			events:  cancelled(gaveUp(sec(20), 1), gaveUp(sec(1)+msec(4), 2)),
			verdict: verdict.Pass, metrics: map[string]float64{"cancel_return_ms_max": 18999},
		},
		{
			name: "an acquire invoked after the fault began is not judged", notJudged: true,
			events: cat(waiting[:2], []history.Event{
				namedFault(sec(1), inv, "cancel-waiters", ""), ev(sec(1), 1, inv, acq, 0),
				namedFault(sec(1)+msec(1), ok, "cancel-waiters", ""), ev(sec(9), 1, ok, acq, 11),
			}),
			verdict: verdict.Pass, metrics: map[string]float64{"cancelled": 0},
		},
		{
			name: "a cancel-waiters that failed cancelled nothing", notJudged: true,
			events:  cat(waiting, []history.Event{namedFault(sec(1), inv, "cancel-waiters", ""), namedFault(sec(1), fail, "cancel-waiters", ""), ev(sec(9), 1, ok, acq, 11)}),
			verdict: verdict.Pass, metrics: map[string]float64{"cancelled": 0},
		},
		{
			name: "another fault cancels nothing", notJudged: true,
			events:  cat(waiting, clientFault(sec(1), sec(2), "isolate-client", 1), []history.Event{ev(sec(9), 1, ok, acq, 11)}),
			verdict: verdict.Pass, metrics: map[string]float64{"cancelled": 0},
		},
	})
}
