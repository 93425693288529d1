package check

import (
	"time"

	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

func TestFairness(t *testing.T) {
	// starve: process 1 asks at 0 and waits while process 0 is granted
	// three times; then process 1's acquire ends with outcome.
	starve := func(outcome ...history.Event) []history.Event {
		evs := []history.Event{ev(0, 1, inv, acq, 0)}
		for j := int64(0); j < 3; j++ {
			at := msec(500) * (j + 1)
			evs = append(evs, ev(at, 0, inv, acq, 0), ev(at+1, 0, ok, acq, 10+j), ev(at+2, 0, inv, rel, 0), ev(at+3, 0, ok, rel, 0))
		}
		return append(evs, outcome...)
	}
	// FIFO: the starvation threshold is StarvationGrants itself.
	short := Options{StarvationMin: time.Second * 1, StarvationGrants: 3, Order: verdict.FIFO}
	runCases(t, verdict.Fairness, CheckFairness, []checkCase{
		{
			name: "no acquires", notJudged: true,
			events:  []history.Event{final(1, 0)},
			verdict: verdict.Pass,
			note:    "no acquire operations",
		},
		{
			name: "grants in request order",
			events: []history.Event{
				ev(1, 0, inv, acq, 0), ev(2, 1, inv, acq, 0), ev(3, 2, inv, acq, 0),
				ev(4, 0, ok, acq, 10), ev(5, 0, inv, rel, 0),
				ev(6, 1, ok, acq, 11), ev(7, 1, inv, rel, 0),
				ev(8, 2, ok, acq, 12), ev(9, 2, inv, rel, 0),
			},
			verdict: verdict.Pass,
			metrics: map[string]float64{
				"requests": 3, "grants": 3, "clients": 3, "inversions": 0, "max_bypass": 0, "jain_index": 1,
				"max_wait_ms": 5e-6, "p99_wait_ms": 5e-6, "p50_wait_ms": 4e-6, "mean_wait_ms": 4e-6, "starved_clients": 0,
			},
		},
		{
			name: "grants in reverse request order",
			events: []history.Event{
				ev(1, 0, inv, acq, 0), ev(2, 1, inv, acq, 0), ev(3, 2, inv, acq, 0),
				ev(4, 2, ok, acq, 10), ev(5, 2, inv, rel, 0),
				ev(6, 1, ok, acq, 11), ev(7, 1, inv, rel, 0),
				ev(8, 0, ok, acq, 12), ev(9, 0, inv, rel, 0),
			},
			verdict: verdict.Pass,
			metrics: map[string]float64{"inversions": 3, "max_bypass": 2, "max_wait_ms": 7e-6},
		},
		{
			name: "a waiter that gives up was still bypassed",
			events: []history.Event{
				ev(1, 0, inv, acq, 0), ev(2, 1, inv, acq, 0), ev(3, 1, ok, acq, 10), ev(4, 0, fail, acq, 0),
			},
			verdict: verdict.Pass,
			metrics: map[string]float64{"inversions": 1, "max_bypass": 1, "requests": 2, "grants": 1},
		},
		{
			name: "a waiter still waiting at the end was bypassed",
			events: []history.Event{
				ev(1, 0, inv, acq, 0), ev(2, 1, ok, acq, 10), ev(3, 1, inv, rel, 0), ev(4, 2, ok, acq, 11),
			},
			verdict: verdict.Pass,
			metrics: map[string]float64{"inversions": 2, "max_bypass": 2, "requests": 3, "grants": 2, "clients": 3, "jain_index": 2.0 * 2.0 / (3 * 2)},
		},
		{
			name: "Jain's index of uneven grants",
			events: []history.Event{
				ev(1, 0, ok, acq, 10), ev(2, 0, inv, rel, 0), ev(3, 0, ok, acq, 11), ev(4, 0, inv, rel, 0),
				ev(5, 0, ok, acq, 12), ev(6, 0, inv, rel, 0), ev(7, 1, ok, acq, 13), ev(8, 1, inv, rel, 0),
			},
			verdict: verdict.Pass,
			metrics: map[string]float64{"jain_index": 0.8, "grants": 4, "clients": 2},
		},
		{
			name:    "starved: never granted while others were",
			opts:    short,
			events:  starve(ev(sec(2), 1, fail, acq, 0)),
			verdict: verdict.Fail,
			want: []Violation{{
				Check: verdict.Fairness,
				Lock:  "l",
				Message: `lock "l": process 1 starved: it requested the lock from 0s (line 1) until 2s (line 14), 2s, ` +
					`and was never granted it, while other processes were granted it 3 times`,
				Lines: []int{1, 14},
			}},
			metrics: map[string]float64{"starved_clients": 1},
		},
		{
			name:    "starved: still waiting at the end",
			opts:    short,
			events:  starve(final(sec(3), 0)),
			verdict: verdict.Fail,
			want: []Violation{{
				Check: verdict.Fairness,
				Lock:  "l",
				Message: `lock "l": process 1 starved: it requested the lock from 0s (line 1) until the end of the history, 3s, ` +
					`and was never granted it, while other processes were granted it 3 times`,
				Lines: []int{1},
			}},
		},
		{
			name:    "not starved: an acquire of unknown outcome may have held",
			opts:    short,
			events:  starve(ev(sec(2), 1, info, acq, 0)),
			verdict: verdict.Pass,
		},
		{
			name:    "not starved: crashed",
			opts:    short,
			events:  starve(proc(sec(2), 1, info, history.FCrash)),
			verdict: verdict.Pass,
		},
		{
			name:    "not starved: span too short",
			opts:    Options{StarvationMin: time.Second * 3, StarvationGrants: 3},
			events:  starve(ev(sec(2), 1, fail, acq, 0)),
			verdict: verdict.Pass,
		},
		{
			name:    "not starved: too few grants to others",
			opts:    Options{StarvationMin: time.Second * 1, StarvationGrants: 4, Order: verdict.FIFO},
			events:  starve(ev(sec(2), 1, fail, acq, 0)),
			verdict: verdict.Pass,
		},
		{
			name:    "no order promised: 3 grants to one other in a row may be luck",
			opts:    Options{StarvationMin: time.Second * 1, StarvationGrants: 3},
			events:  starve(ev(sec(2), 1, fail, acq, 0)),
			verdict: verdict.Pass,
		},
		{
			name:    "no order promised: 7 grants to one other are not",
			opts:    Options{StarvationMin: time.Second * 1, StarvationGrants: 3},
			events:  sevenTimes(),
			verdict: verdict.Fail,
			metrics: map[string]float64{"starved_clients": 1},
			want: []Violation{{Check: verdict.Fairness, Lock: "l",
				Message: `lock "l": process 1 starved: it requested the lock from 0s (line 1) until 2.5s (line 30), 2.5s, ` +
					`and was never granted it, while other processes were granted it 7 times`,
				Lines: []int{1, 30}}},
		},
		{
			name:    "not starved by default under 11s",
			events:  starve(ev(sec(2), 1, fail, acq, 0)),
			verdict: verdict.Pass,
		},
		{
			name:    "starvation off",
			opts:    Options{StarvationMin: -1, StarvationGrants: 1},
			events:  starve(ev(sec(2), 1, fail, acq, 0)),
			verdict: verdict.Pass,
		},
	})
}

// sevenTimes: process 1 asks at 0 and gives up at 2.5s, while process 0
// is granted 7 times, every 300ms.
func sevenTimes() []history.Event {
	evs := []history.Event{ev(0, 1, inv, acq, 0)}
	for j := int64(1); j <= 7; j++ {
		at := msec(300) * j
		evs = append(evs, ev(at, 0, inv, acq, 0), ev(at+1, 0, ok, acq, 10+j), ev(at+2, 0, inv, rel, 0), ev(at+3, 0, ok, rel, 0))
	}
	return append(evs, ev(sec(2)+msec(500), 1, fail, acq, 0))
}

func TestFairnessPerProcess(t *testing.T) {
	res := CheckFairness([]history.Event{
		ev(1, 0, ok, acq, 10), ev(2, 0, inv, rel, 0), ev(3, 0, ok, acq, 11), ev(4, 0, inv, rel, 0),
		ev(5, 2, inv, acq, 0), ev(6, 2, fail, acq, 0),
	}, Options{})
	want := map[int]float64{0: 2, 2: 0}
	if got := res.PerProcess["grants"]; len(got) != 2 || got[0] != want[0] || got[2] != want[2] {
		t.Errorf("grants per process = %v, want %v", got, want)
	}
}
