package check

import (
	"time"

	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

func TestLiveness(t *testing.T) {
	// held: process 0 holds from 1ms to its release at 1s (done at
	// 1.001s); process 1 waits from 500ms.
	held := []history.Event{
		ev(0, 0, inv, acq, 0), ev(msec(1), 0, ok, acq, 10), ev(msec(500), 1, inv, acq, 0),
		ev(sec(1), 0, inv, rel, 0), ev(sec(1)+msec(1), 0, ok, rel, 0),
	}
	with := func(more ...history.Event) []history.Event {
		return append(append([]history.Event(nil), held...), more...)
	}
	stall := Violation{
		Check: verdict.Liveness,
		Lock:  "l",
		Message: `lock "l" was free for 6.999s, from 1.001s (line 5) to 8s (line 6), while process 1 waited ` +
			`(process 1 since 500ms, line 3); the bound is 5.5s, plus the windows faults excuse`,
		Lines: []int{3, 5, 6},
	}
	runCases(t, verdict.Liveness, CheckLiveness, []checkCase{
		{
			name:    "prompt handoff",
			events:  with(ev(sec(1)+msec(3), 1, ok, acq, 11)),
			verdict: verdict.Pass,
			metrics: map[string]float64{"stalls": 0, "max_stall_ms": 2, "bound_ms": 5500},
		},
		{
			name:    "free and waited for 7s",
			events:  with(ev(sec(8), 1, ok, acq, 11)),
			verdict: verdict.Fail,
			want:    []Violation{stall},
			metrics: map[string]float64{"stalls": 1, "max_stall_ms": 6999},
		},
		{
			name:    "a fault excuses up to the bound + slack after its start and its end",
			events:  with(fault(sec(2), inv), fault(sec(4), ok), ev(sec(8), 1, ok, acq, 11)),
			verdict: verdict.Pass,
			metrics: map[string]float64{"stalls": 0, "max_stall_ms": 6999},
		},
		{
			name:    "a fault that never ends excuses only its start",
			events:  with(fault(sec(2), inv), ev(sec(8), 1, ok, acq, 11)),
			verdict: verdict.Pass,
			metrics: map[string]float64{"max_stall_ms": 6999},
		},
		{
			name:    "a permanent fault is judged after its window",
			events:  with(fault(sec(2), inv), ev(sec(9), 1, ok, acq, 11)),
			verdict: verdict.Fail,
			want: []Violation{{
				Check: verdict.Liveness,
				Lock:  "l",
				Message: `lock "l" was free for 7.999s, from 1.001s (line 5) to 9s (line 7), while process 1 waited ` +
					`(process 1 since 500ms, line 3); the bound is 5.5s, plus the windows faults excuse`,
				Lines: []int{3, 5, 7},
			}},
			metrics: map[string]float64{"stalls": 1, "max_stall_ms": 7999},
		},
		{
			name:    "a fault ended by info",
			events:  with(fault(sec(2), inv), fault(sec(2)+msec(100), info), ev(sec(12), 1, ok, acq, 11)),
			verdict: verdict.Fail,
			want: []Violation{{
				Check: verdict.Liveness,
				Lock:  "l",
				Message: `lock "l" was free for 10.999s, from 1.001s (line 5) to 12s (line 8), while process 1 waited ` +
					`(process 1 since 500ms, line 3); the bound is 5.5s, plus the windows faults excuse`,
				Lines: []int{3, 5, 8},
			}},
		},
		{
			name:    "a pause counts as a fault",
			events:  with(proc(sec(2), 1, info, history.FPause), proc(sec(7), 1, info, history.FResume), ev(sec(8), 1, ok, acq, 11)),
			verdict: verdict.Pass,
			metrics: map[string]float64{"max_stall_ms": 6999},
		},
		{
			name:    "still waiting at the end of the history",
			events:  with(final(sec(10), 0)),
			verdict: verdict.Fail,
			want: []Violation{{
				Check: verdict.Liveness,
				Lock:  "l",
				Message: `lock "l" was free for 8.999s, from 1.001s (line 5) to the end of the history, while process 1 waited ` +
					`(process 1 since 500ms, line 3); the bound is 5.5s, plus the windows faults excuse`,
				Lines: []int{3, 5},
			}},
		},
		{
			name:    "the waiter gives up: the stretch ends",
			events:  with(ev(sec(3), 1, fail, acq, 0), final(sec(10), 0)),
			verdict: verdict.Pass,
			metrics: map[string]float64{"max_stall_ms": 1999},
		},
		{
			name: "an acquire of unknown outcome may hold the lock",
			events: with(ev(sec(1)+msec(500), 2, inv, acq, 0), ev(sec(2), 2, info, acq, 0),
				ev(sec(7), 2, inv, rel, 0), ev(sec(8), 1, ok, acq, 11)),
			verdict: verdict.Pass,
			note:    "1 acquire of unknown outcome counts as holding their lock",
			metrics: map[string]float64{"max_stall_ms": 1000},
		},
		{
			name: "a release in flight still holds",
			events: []history.Event{
				ev(0, 0, ok, acq, 10), ev(msec(500), 1, inv, acq, 0),
				ev(sec(1), 0, inv, rel, 0), ev(sec(9), 0, ok, rel, 0), ev(sec(9)+msec(1), 1, ok, acq, 11),
			},
			verdict: verdict.Pass,
			metrics: map[string]float64{"max_stall_ms": 1},
		},
		{
			name: "a crashed holder's lease outlives it within the bound",
			events: []history.Event{
				ev(0, 0, ok, acq, 10), ev(msec(500), 1, inv, acq, 0),
				proc(sec(1), 0, info, history.FCrash), ev(sec(6), 1, ok, acq, 11),
			},
			verdict: verdict.Pass,
			metrics: map[string]float64{"max_stall_ms": 5000},
		},
		{
			name: "a crashed holder with a shorter bound",
			opts: Options{LivenessBound: time.Second * 4},
			events: []history.Event{
				ev(0, 0, ok, acq, 10), ev(msec(500), 1, inv, acq, 0),
				proc(sec(1), 0, info, history.FCrash), ev(sec(6), 1, ok, acq, 11),
			},
			verdict: verdict.Fail,
			want: []Violation{{
				Check: verdict.Liveness,
				Lock:  "l",
				Message: `lock "l" was free for 5s, from 1s (line 3) to 6s (line 4), while process 1 waited ` +
					`(process 1 since 500ms, line 2); the bound is 4s, plus the windows faults excuse`,
				Lines: []int{2, 3, 4},
			}},
			metrics: map[string]float64{"bound_ms": 4000},
		},
		{
			name:    "stall violations off",
			opts:    Options{LivenessBound: -1},
			events:  with(ev(sec(8), 1, ok, acq, 11)),
			verdict: verdict.Pass,
			metrics: map[string]float64{"stalls": 0, "max_stall_ms": 6999},
			absent:  []string{"bound_ms"},
		},
		{
			name: "two waiters, one lock of two",
			events: []history.Event{
				{Time: 0, Process: 3, Type: ok, F: acq, Lock: "m", Token: 5},
				ev(msec(100), 1, inv, acq, 0), ev(msec(200), 2, inv, acq, 0),
				{Time: sec(9), Process: 3, Type: inv, F: rel, Lock: "m"},
				ev(sec(9), 2, ok, acq, 11),
			},
			verdict: verdict.Fail,
			want: []Violation{{
				Check: verdict.Liveness,
				Lock:  "l",
				Message: `lock "l" was free for 8.9s, from 100ms (line 2) to 9s (line 5), while processes 1, 2 waited ` +
					`(process 1 since 100ms, line 2); the bound is 5.5s, plus the windows faults excuse`,
				Lines: []int{2, 5},
			}},
		},
	})
}
