package check

import (
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// TestFairnessFIFO: a strategy that promises FIFO fails on a later request
// granted first, unless the slack, the earlier request's outcome or a
// fault explains it; one that promises nothing does not.
func TestFairnessFIFO(t *testing.T) {
	// Process 0 holds from 1ms to 1s; 1 asks at 100ms, 2 at `second`; 2 is
	// granted first (line 11), then 1 with `outcome` (line 14).
	// Process 1 has been granted once before (lines 1–4): only later
	// requests are judged.
	jump := func(second int64, outcome history.Type, more ...history.Event) []history.Event {
		evs := []history.Event{
			ev(0, 1, inv, acq, 0), ev(0, 1, ok, acq, 5), ev(0, 1, inv, rel, 0), ev(0, 1, ok, rel, 0),
			ev(0, 0, inv, acq, 0), ev(msec(1), 0, ok, acq, 10), ev(msec(100), 1, inv, acq, 0), ev(second, 2, inv, acq, 0),
			ev(sec(1), 0, inv, rel, 0), ev(sec(1)+msec(1), 0, ok, rel, 0), ev(sec(1)+msec(2), 2, ok, acq, 11),
			ev(sec(1)+msec(100), 2, inv, rel, 0), ev(sec(1)+msec(101), 2, ok, rel, 0), ev(sec(1)+msec(102), 1, outcome, acq, 12),
		}
		return append(evs, more...)
	}
	fifo := Options{Order: verdict.FIFO}
	runCases(t, verdict.Fairness, CheckFairness, []checkCase{
		{
			name:    "FIFO: a later request granted first",
			opts:    fifo,
			events:  jump(msec(500), ok),
			verdict: verdict.Fail,
			want: []Violation{{Check: verdict.Fairness, Lock: "l",
				Message: `lock "l": process 1 asked at 100ms (line 7) and was granted at 1.102s (line 14), after 1 request invoked more than 100ms after it, ` +
					`the first process 2's, asked at 500ms (line 8) and granted at 1.002s (line 11); the strategy promises FIFO, and no fault on that process or on the members explains it`,
				Lines: []int{7, 8, 11, 14}}},
			metrics: map[string]float64{"fifo_bypasses": 1, "max_bypass_lead_ms": 400, "max_bypass": 1},
		},
		{
			name:    "no order promised: the same history passes",
			events:  jump(msec(500), ok),
			verdict: verdict.Pass,
			metrics: map[string]float64{"fifo_bypasses": 0, "max_bypass_lead_ms": 400},
		},
		{
			name:    "FIFO: a client's first request is not judged",
			opts:    fifo,
			events:  jump(msec(500), ok)[4:],
			verdict: verdict.Pass,
			metrics: map[string]float64{"fifo_bypasses": 0, "max_bypass": 1},
		},
		{
			name:    "FIFO: the later request invoked within the slack",
			opts:    fifo,
			events:  jump(msec(150), ok),
			verdict: verdict.Pass,
			metrics: map[string]float64{"max_bypass_lead_ms": 50},
		},
		{
			name:    "FIFO: a wider slack",
			opts:    Options{Order: verdict.FIFO, BypassSlack: 500 * 1e6},
			events:  jump(msec(500), ok),
			verdict: verdict.Pass,
		},
		{
			name:    "FIFO: the earlier request gave up",
			opts:    fifo,
			events:  jump(msec(500), fail),
			verdict: verdict.Pass,
		},
		{
			name:    "FIFO: the earlier request's outcome is unknown",
			opts:    fifo,
			events:  jump(msec(500), info),
			verdict: verdict.Pass,
		},
		{
			name: "FIFO: a fault on the earlier request's process",
			opts: fifo,
			events: jump(msec(500), ok, namedFault(msec(50), inv, "delay-client", "client:1"),
				namedFault(msec(60), ok, "delay-client", "client:1")),
			verdict: verdict.Pass,
			absent:  []string{"max_bypass_lead_ms"},
		},
		{
			name: "FIFO: a fault on another process explains nothing",
			opts: fifo,
			events: jump(msec(500), ok, namedFault(msec(50), inv, "delay-client", "client:2"),
				namedFault(msec(60), ok, "delay-client", "client:2")),
			verdict: verdict.Fail,
			metrics: map[string]float64{"fifo_bypasses": 1},
			want: []Violation{{Check: verdict.Fairness, Lock: "l",
				Message: `lock "l": process 1 asked at 100ms (line 7) and was granted at 1.102s (line 14), after 1 request invoked more than 100ms after it, ` +
					`the first process 2's, asked at 500ms (line 8) and granted at 1.002s (line 11); the strategy promises FIFO, and no fault on that process or on the members explains it`,
				Lines: []int{7, 8, 11, 14}}},
		},
		{
			name: "FIFO: a member fault",
			opts: fifo,
			events: jump(msec(500), ok, namedFault(msec(50), inv, "crash-member", "member:1"),
				namedFault(msec(60), ok, "crash-member", "member:1")),
			verdict: verdict.Pass,
		},
	})
}

// TestFairnessLongWait: a wait many rounds of the other clients long fails
// whatever the strategy promises, unless its outcome or a fault explains
// it.
func TestFairnessLongWait(t *testing.T) {
	// Process 1 asks at 0; process 0 is granted every 10ms from 10ms on,
	// n times (4 events each); then process 1's outcome at `end`.
	wait := func(n int, end int64, outcome history.Type, more ...history.Event) []history.Event {
		evs := []history.Event{ev(0, 1, inv, acq, 0)}
		for j := int64(1); j <= int64(n); j++ {
			at := msec(10) * j
			evs = append(evs, ev(at, 0, inv, acq, 0), ev(at+1, 0, ok, acq, 10+j), ev(at+2, 0, inv, rel, 0), ev(at+3, 0, ok, rel, 0))
		}
		if outcome != 0 {
			evs = append(evs, ev(end, 1, outcome, acq, 9999))
		}
		return append(evs, more...)
	}
	const bound = "the long-wait bound is 1s (max(1s, 50 × 2 clients × the median 10ms between grants))"
	runCases(t, verdict.Fairness, CheckFairness, []checkCase{
		{
			name:    "granted after 1.5s while the other was granted 149 times",
			events:  wait(149, msec(1500), ok),
			verdict: verdict.Fail,
			want: []Violation{{Check: verdict.Fairness, Lock: "l",
				Message: `lock "l": process 1 waited 1.5s, from 0s (line 1) to 1.5s (line 598), when it was granted, while other processes were granted it 149 times; ` + bound,
				Lines:   []int{1, 598}}},
			metrics: map[string]float64{"long_waits": 1, "long_wait_bound_ms": 1000, "wait_bound_ratio": 1.5, "starved_clients": 0},
		},
		{
			name:    "FIFO: the same long wait (a first request: no bypass judged)",
			opts:    Options{Order: verdict.FIFO},
			events:  wait(149, msec(1500), ok),
			verdict: verdict.Fail,
			metrics: map[string]float64{"long_waits": 1, "fifo_bypasses": 0},
			want: []Violation{{Check: verdict.Fairness, Lock: "l",
				Message: `lock "l": process 1 waited 1.5s, from 0s (line 1) to 1.5s (line 598), when it was granted, while other processes were granted it 149 times; ` + bound,
				Lines:   []int{1, 598}}},
		},
		{
			name:    "still waiting at the end",
			events:  wait(149, 0, 0, final(msec(1500), 0)),
			verdict: verdict.Fail,
			want: []Violation{{Check: verdict.Fairness, Lock: "l",
				Message: `lock "l": process 1 waited 1.5s, from 0s (line 1) to the end of the history, still waiting, while other processes were granted it 149 times; ` + bound,
				Lines:   []int{1}}},
		},
		{
			name:    "gave up",
			events:  wait(149, msec(1500), fail),
			verdict: verdict.Fail,
			metrics: map[string]float64{"long_waits": 1},
			want: []Violation{{Check: verdict.Fairness, Lock: "l",
				Message: `lock "l": process 1 waited 1.5s, from 0s (line 1) to 1.5s (line 598), when it gave up, while other processes were granted it 149 times; ` + bound,
				Lines:   []int{1, 598}}},
		},
		{
			name:    "granted within the bound",
			events:  wait(89, msec(900), ok),
			verdict: verdict.Pass,
			metrics: map[string]float64{"long_waits": 0, "wait_bound_ratio": 0.9},
		},
		{
			name:    "the bound grows with the time between grants",
			events:  append(wait(0, 0, 0), longCycles(30, msec(40))...),
			verdict: verdict.Pass,
			metrics: map[string]float64{"long_wait_bound_ms": 4000},
		},
		{
			name:    "an outcome of unknown outcome is not judged",
			events:  wait(149, msec(1500), info),
			verdict: verdict.Pass,
		},
		{
			name:    "a fault on the waiter explains it",
			events:  wait(149, msec(1500), ok, namedFault(msec(700), inv, "isolate-client", "client:1"), namedFault(msec(800), ok, "isolate-client", "client:1")),
			verdict: verdict.Pass,
		},
		{
			name:    "too few grants to the others",
			events:  []history.Event{ev(0, 1, inv, acq, 0), ev(msec(10), 0, ok, acq, 10), ev(sec(2), 0, inv, rel, 0), ev(sec(2)+1, 0, ok, rel, 0), ev(sec(2)+2, 1, ok, acq, 11)},
			verdict: verdict.Pass,
		},
	})
}

// longCycles: process 0 granted n times, every gap; process 1 asks at 0
// and is granted after the last.
func longCycles(n int, gap int64) []history.Event {
	var evs []history.Event
	for j := int64(1); j <= int64(n); j++ {
		at := gap * j
		evs = append(evs, ev(at, 0, inv, acq, 0), ev(at+1, 0, ok, acq, 10+j), ev(at+2, 0, inv, rel, 0), ev(at+3, 0, ok, rel, 0))
	}
	return append(evs, ev(gap*int64(n+1), 1, ok, acq, 9999))
}
