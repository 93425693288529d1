package check

import (
	"time"

	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// namedFault is a fault of this build's catalogue on target (resolved).
func namedFault(t int64, typ history.Type, name, target string) history.Event {
	return history.Event{Time: t, Process: history.NemesisProcess, Type: typ, F: flt,
		Value: history.FaultValue(history.Fault{Fault: name, Target: target, Resolved: target})}
}

func TestLiveness(t *testing.T) {
	// held: process 0 holds from 1ms to its release at 1s (done at
	// 1.001s: a release latency of 1ms, so the fault-free bound is its
	// floor, 1s); process 1 waits from 500ms.
	held := []history.Event{
		ev(0, 0, inv, acq, 0), ev(msec(1), 0, ok, acq, 10), ev(msec(500), 1, inv, acq, 0),
		ev(sec(1), 0, inv, rel, 0), ev(sec(1)+msec(1), 0, ok, rel, 0),
	}
	with := func(more ...history.Event) []history.Event {
		return append(append([]history.Event(nil), held...), more...)
	}
	const quiet = "outside the faults' windows the bound is 1s (max(1s, 20 × the median release latency 1ms, 3 × the longest 1ms))"
	// Default options: a client fault costs 5.5s + 1s, a member fault
	// 2 × 500ms + 1s + 1s, each widened by the 1s fault-free bound.
	runCases(t, verdict.Liveness, CheckLiveness, []checkCase{
		{
			name:    "prompt handoff",
			events:  with(ev(sec(1)+msec(3), 1, ok, acq, 11)),
			verdict: verdict.Pass,
			metrics: map[string]float64{"stalls": 0, "max_stall_ms": 2, "bound_ms": 1000,
				"lease_bound_ms": 6500, "member_bound_ms": 3000, "release_p50_ms": 1},
		},
		{
			name:    "free for 900ms with no fault: within the fault-free bound",
			events:  with(ev(sec(1)+msec(901), 1, ok, acq, 11)),
			verdict: verdict.Pass,
			metrics: map[string]float64{"stalls": 0, "max_stall_ms": 900},
		},
		{
			name:    "free for 1.5s with no fault: a stall",
			events:  with(ev(sec(2)+msec(501), 1, ok, acq, 11)),
			verdict: verdict.Fail,
			want: []Violation{{Check: verdict.Liveness, Lock: "l",
				Message: `lock "l" was free for 1.5s, from 1.001s (line 5) to 2.501s (line 6), while process 1 waited ` +
					`(process 1 since 500ms, line 3); no fault excuses it after 2.001s, and ` + quiet,
				Lines: []int{3, 5, 6}}},
			metrics: map[string]float64{"stalls": 1, "max_stall_ms": 1500, "max_handoff_stall_ms": 1500},
		},
		{
			name:    "the fault-free bound grows with the release latency",
			events:  append(held[:3:3], ev(sec(1), 0, inv, rel, 0), ev(sec(1)+msec(100), 0, ok, rel, 0), ev(sec(2)+msec(600), 1, ok, acq, 11)),
			verdict: verdict.Pass,
			metrics: map[string]float64{"bound_ms": 2000, "release_p50_ms": 100, "max_stall_ms": 1500},
		},
		{
			name: "the fault-free bound grows with the longest release",
			events: append(with(ev(sec(1)+msec(2), 0, inv, rel, 0), ev(sec(1)+msec(402), 0, ok, rel, 0),
				ev(sec(1)+msec(403), 0, inv, rel, 0), ev(sec(1)+msec(404), 0, ok, rel, 0)), ev(sec(2)+msec(101), 1, ok, acq, 11)),
			verdict: verdict.Pass,
			metrics: map[string]float64{"bound_ms": 1200, "release_p50_ms": 1, "release_max_ms": 400, "max_stall_ms": 1100},
		},
		{
			name:    "a bound set by the options",
			opts:    Options{QuietBound: 200 * time.Millisecond},
			events:  with(ev(sec(1)+msec(301), 1, ok, acq, 11)),
			verdict: verdict.Fail,
			want: []Violation{{Check: verdict.Liveness, Lock: "l",
				Message: `lock "l" was free for 300ms, from 1.001s (line 5) to 1.301s (line 6), while process 1 waited ` +
					`(process 1 since 500ms, line 3); no fault excuses it after 1.201s, and outside the faults' windows the bound is 200ms (set by the options)`,
				Lines: []int{3, 5, 6}}},
		},
		{
			name: "a crashed holder's key may outlive it by the lease bound",
			events: []history.Event{
				ev(0, 0, ok, acq, 10), ev(msec(500), 1, inv, acq, 0),
				namedFault(sec(1), inv, "crash-client", "client:0"), proc(sec(1), 0, info, history.FCrash),
				ev(sec(8), 1, ok, acq, 11),
			},
			verdict: verdict.Pass,
			metrics: map[string]float64{"max_stall_ms": 7000},
		},
		{
			name: "a crashed holder whose lock moves later than the lease bound + the fault-free bound",
			events: []history.Event{
				ev(0, 0, ok, acq, 10), ev(msec(500), 1, inv, acq, 0),
				namedFault(sec(1), inv, "crash-client", "client:0"), proc(sec(1), 0, info, history.FCrash),
				ev(sec(9), 1, ok, acq, 11),
			},
			verdict: verdict.Fail,
			want: []Violation{{Check: verdict.Liveness, Lock: "l",
				Message: `lock "l" was free for 8s, from 1s (line 4) to 9s (line 5), while process 1 waited ` +
					`(process 1 since 500ms, line 2); no fault excuses it after 8.5s, and outside the faults' windows the bound is 1s (the floor 1s: no release ended ok to derive it from)`,
				Lines: []int{2, 4, 5}}},
		},
		{
			name:    "a member fault costs two elections and a request deadline, not a lease",
			events:  with(namedFault(sec(2), inv, "crash-member", "member:0"), namedFault(sec(3), ok, "crash-member", "member:0"), ev(sec(6)+msec(900), 1, ok, acq, 11)),
			verdict: verdict.Pass,
			metrics: map[string]float64{"max_stall_ms": 5899},
		},
		{
			name:    "a member fault: the lock still free 4s after its end",
			events:  with(namedFault(sec(2), inv, "crash-member", "member:0"), namedFault(sec(3), ok, "crash-member", "member:0"), ev(sec(7)+msec(100), 1, ok, acq, 11)),
			verdict: verdict.Fail,
			want: []Violation{{Check: verdict.Liveness, Lock: "l",
				Message: `lock "l" was free for 6.099s, from 1.001s (line 5) to 7.1s (line 8), while process 1 waited ` +
					`(process 1 since 500ms, line 3); no fault excuses it after 7s, and ` + quiet,
				Lines: []int{3, 5, 8}}},
		},
		{
			name:    "without a request deadline a member fault costs a lease",
			opts:    Options{RequestTimeout: -1},
			events:  with(namedFault(sec(2), inv, "crash-member", "member:0"), namedFault(sec(3), ok, "crash-member", "member:0"), ev(sec(7)+msec(100), 1, ok, acq, 11)),
			verdict: verdict.Pass,
			metrics: map[string]float64{"member_bound_ms": 6500},
		},
		{
			name:    "cancelled waits excuse nothing",
			events:  with(namedFault(sec(1)+msec(100), inv, "cancel-waiters", ""), namedFault(sec(1)+msec(101), ok, "cancel-waiters", ""), ev(sec(2)+msec(501), 1, ok, acq, 11)),
			verdict: verdict.Fail,
			metrics: map[string]float64{"stalls": 1},
			want: []Violation{{Check: verdict.Liveness, Lock: "l",
				Message: `lock "l" was free for 1.5s, from 1.001s (line 5) to 2.501s (line 8), while process 1 waited ` +
					`(process 1 since 500ms, line 3); no fault excuses it after 2.001s, and ` + quiet,
				Lines: []int{3, 5, 8}}},
		},
		{
			name:    "a compaction excuses nothing",
			events:  with(namedFault(sec(1)+msec(100), inv, "compact", ""), namedFault(sec(1)+msec(101), ok, "compact", ""), ev(sec(2)+msec(501), 1, ok, acq, 11)),
			verdict: verdict.Fail,
			metrics: map[string]float64{"stalls": 1},
			want: []Violation{{Check: verdict.Liveness, Lock: "l",
				Message: `lock "l" was free for 1.5s, from 1.001s (line 5) to 2.501s (line 8), while process 1 waited ` +
					`(process 1 since 500ms, line 3); no fault excuses it after 2.001s, and ` + quiet,
				Lines: []int{3, 5, 8}}},
		},
		{
			name:    "a slowdown excuses its length + the request deadline + slack",
			events:  with(namedFault(sec(1), inv, "delay-client", "client:1"), namedFault(sec(3), ok, "delay-client", "client:1"), ev(sec(5)+msec(900), 1, ok, acq, 11)),
			verdict: verdict.Pass,
		},
		{
			name:    "an unknown fault excuses the lease bound after its start and its end",
			events:  with(fault(sec(2), inv), fault(sec(4), ok), ev(sec(11), 1, ok, acq, 11)),
			verdict: verdict.Pass,
			metrics: map[string]float64{"stalls": 0, "max_stall_ms": 9999},
		},
		{
			name:    "a permanent fault is judged after its window",
			events:  with(fault(sec(2), inv), ev(sec(10), 1, ok, acq, 11)),
			verdict: verdict.Fail,
			want: []Violation{{Check: verdict.Liveness, Lock: "l",
				Message: `lock "l" was free for 8.999s, from 1.001s (line 5) to 10s (line 7), while process 1 waited ` +
					`(process 1 since 500ms, line 3); no fault excuses it after 9.5s, and ` + quiet,
				Lines: []int{3, 5, 7}}},
			metrics: map[string]float64{"stalls": 1, "max_stall_ms": 8999},
		},
		{
			name:    "a pause counts as a client fault",
			events:  with(proc(sec(2), 1, info, history.FPause), proc(sec(7), 1, info, history.FResume), ev(sec(9), 1, ok, acq, 11)),
			verdict: verdict.Pass,
			metrics: map[string]float64{"max_stall_ms": 7999},
		},
		{
			name:    "still waiting at the end of the history",
			events:  with(final(sec(3), 0)),
			verdict: verdict.Fail,
			want: []Violation{{Check: verdict.Liveness, Lock: "l",
				Message: `lock "l" was free for 1.999s, from 1.001s (line 5) to the end of the history, while process 1 waited ` +
					`(process 1 since 500ms, line 3); no fault excuses it after 2.001s, and ` + quiet,
				Lines: []int{3, 5}}},
		},
		{
			name:    "the waiter gives up: the stretch ends",
			events:  with(ev(sec(1)+msec(801), 1, fail, acq, 0), final(sec(10), 0)),
			verdict: verdict.Pass,
			metrics: map[string]float64{"max_stall_ms": 800},
		},
		{
			name: "an acquire of unknown outcome may hold the lock",
			events: with(ev(sec(1)+msec(500), 2, inv, acq, 0), ev(sec(2), 2, info, acq, 0),
				ev(sec(7), 2, inv, rel, 0), ev(sec(7)+msec(500), 1, ok, acq, 11)),
			verdict: verdict.Pass,
			note:    "1 acquire of unknown outcome counts as holding their lock",
			metrics: map[string]float64{"max_stall_ms": 500},
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
			want: []Violation{{Check: verdict.Liveness, Lock: "l",
				Message: `lock "l" was free for 8.9s, from 100ms (line 2) to 9s (line 5), while processes 1, 2 waited ` +
					`(process 1 since 100ms, line 2); no fault excuses it after 6.6s, and before the lock's first grant (every client's first acquire sets up its lease) the bound is a client fault's, 6.5s`,
				Lines: []int{2, 5}}},
		},
		{
			name:    "the first grant may wait for the clients' leases",
			events:  []history.Event{ev(0, 1, inv, acq, 0), ev(0, 2, inv, acq, 0), ev(sec(3), 1, ok, acq, 10)},
			verdict: verdict.Pass,
			metrics: map[string]float64{"max_stall_ms": 3000, "max_handoff_stall_ms": 0},
		},
	})
}
