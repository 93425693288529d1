package check

import (
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

func TestResource(t *testing.T) {
	// cs is one holder's critical section of the counter workload, 6
	// events from t: grant, read (value v), write v+1, release invoke.
	cs := func(t int64, p int, tok, v int64) []history.Event {
		return []history.Event{
			ev(t, p, ok, acq, tok), r(t+1, p, inv, 0), r(t+2, p, ok, v),
			w(t+3, p, inv, tok, v+1), w(t+4, p, ok, 0, 0), ev(t+5, p, inv, rel, 0),
		}
	}
	cat := func(parts ...[]history.Event) []history.Event {
		var out []history.Event
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	runCases(t, verdict.Resource, CheckResource, []checkCase{
		{
			name: "no resource operations", notJudged: true,
			events:  []history.Event{ev(0, 0, inv, acq, 0), ev(1, 0, ok, acq, 10)},
			verdict: verdict.Pass,
			note:    "no resource operations",
			absent:  []string{"accepted_writes", "lost_updates"},
		},
		{
			name:    "sequential increments, final read matches",
			events:  cat(cs(0, 0, 10, 0), cs(10, 1, 11, 1), []history.Event{final(20, 2)}),
			verdict: verdict.Pass,
			metrics: map[string]float64{"accepted_writes": 2, "final_value": 2, "lost_updates": 0, "rejected_writes": 0, "unknown_writes": 0},
		},
		{
			name: "two holders read the same value: one update lost",
			events: cat(
				[]history.Event{ev(0, 0, ok, acq, 10), ev(1, 1, ok, acq, 11), r(2, 0, ok, 0), r(3, 1, ok, 0)},
				[]history.Event{w(4, 0, inv, 10, 1), w(5, 0, ok, 0, 0), w(6, 1, inv, 11, 1), w(7, 1, ok, 0, 0)},
				[]history.Event{final(20, 1)},
			),
			verdict: verdict.Fail,
			want: []Violation{{
				Check: verdict.Resource,
				Lock:  "",
				Message: `counter: final value 1 (read at 20ns, line 9) is less than the 2 accepted increments: 1 update(s) lost; ` +
					`accepted writes of the same value: 1 at lines 6 and 8`,
				Lines: []int{6, 8, 9},
			}},
			metrics: map[string]float64{"accepted_writes": 2, "final_value": 1, "lost_updates": 1},
		},
		{
			name:    "accepted writes without a final read are unknown",
			events:  cs(0, 0, 10, 0),
			verdict: verdict.Unknown,
			note:    `no final read (process -1, read ok) of the counter of lock "l"`,
			absent:  []string{"lost_updates", "final_value"},
		},
		{
			name:    "a final read that is not an integer is unknown",
			events:  cat(cs(0, 0, 10, 0), []history.Event{{Time: 9, Process: -1, Type: ok, F: rd, Value: []byte(`"x"`)}}),
			verdict: verdict.Unknown,
			note:    `final read of the counter (line 7) is not an integer`,
		},
		{
			name: "a write of unknown outcome is not a lost update",
			events: cat(cs(0, 0, 10, 0),
				[]history.Event{ev(10, 1, ok, acq, 11), r(11, 1, ok, 1), w(12, 1, inv, 11, 2), w(13, 1, info, 0, 0)},
				[]history.Event{final(20, 1)}),
			verdict: verdict.Pass,
			note:    "1 writes have an unknown outcome (info)",
			metrics: map[string]float64{"accepted_writes": 1, "unknown_writes": 1, "lost_updates": 0},
		},
		{
			name: "rejected writes are not increments",
			events: cat(cs(0, 0, 10, 0),
				[]history.Event{w(10, 0, inv, 10, 2), {Time: 11, Process: 0, Type: fail, F: wr, Lock: "l", Error: "stale token"}},
				[]history.Event{final(20, 1)}),
			verdict: verdict.Pass,
			metrics: map[string]float64{"accepted_writes": 1, "rejected_writes": 1, "lost_updates": 0},
		},
		{
			name: "final reads per lock",
			events: []history.Event{
				{Time: 1, Process: 0, Type: ok, F: acq, Lock: "a", Token: 5},
				{Time: 2, Process: 0, Type: inv, F: wr, Lock: "a", Token: 5, Value: history.IntValue(1)},
				{Time: 3, Process: 0, Type: ok, F: wr, Lock: "a"},
				{Time: 4, Process: 1, Type: ok, F: acq, Lock: "b", Token: 6},
				{Time: 5, Process: 1, Type: inv, F: wr, Lock: "b", Token: 6, Value: history.IntValue(1)},
				{Time: 6, Process: 1, Type: ok, F: wr, Lock: "b"},
				{Time: 7, Process: 1, Type: inv, F: wr, Lock: "b", Token: 6, Value: history.IntValue(2)},
				{Time: 8, Process: 1, Type: ok, F: wr, Lock: "b"},
				{Time: 9, Process: -1, Type: ok, F: rd, Lock: "a", Value: history.IntValue(1)},
				{Time: 9, Process: -1, Type: ok, F: rd, Lock: "b", Value: history.IntValue(1)},
			},
			verdict: verdict.Fail,
			want: []Violation{{
				Check:   verdict.Resource,
				Lock:    "b",
				Message: `counter of lock "b": final value 1 (read at 9ns, line 10) is less than the 2 accepted increments: 1 update(s) lost`,
				Lines:   []int{10},
			}},
			metrics: map[string]float64{"accepted_writes": 3, "lost_updates": 1},
			absent:  []string{"final_value"},
		},
		{
			name: "a write without a lock belongs to the writer's grant",
			events: []history.Event{
				ev(1, 0, ok, acq, 5),
				{Time: 2, Process: 0, Type: inv, F: wr, Token: 5, Value: history.IntValue(1)},
				{Time: 3, Process: 0, Type: ok, F: wr},
				{Time: 9, Process: -1, Type: ok, F: rd, Lock: "l", Value: history.IntValue(1)},
			},
			verdict: verdict.Pass,
			metrics: map[string]float64{"accepted_writes": 1, "lost_updates": 0, "final_value": 1},
		},
	})
}

func TestFencing(t *testing.T) {
	stale := func(writeOutcome history.Event) []history.Event {
		return []history.Event{
			ev(msec(1), 0, inv, acq, 0), ev(msec(2), 0, ok, acq, 10), // p0 holds, then is paused past its lease
			proc(msec(3), 0, info, history.FPause),
			ev(msec(4), 1, inv, acq, 0), ev(msec(5), 1, ok, acq, 11), // p1 is granted after the lease ends
			proc(msec(6), 0, info, history.FResume),
			w(msec(7), 0, inv, 10, 1), writeOutcome, // p0 writes with its old token
		}
	}
	runCases(t, verdict.Fencing, CheckFencing, []checkCase{
		{
			name:    "no writes",
			events:  []history.Event{ev(0, 0, ok, acq, 10), r(1, 0, inv, 0), r(2, 0, ok, 0)},
			verdict: verdict.Pass,
			note:    "no resource operations",
		},
		{
			name: "increasing tokens",
			events: []history.Event{
				ev(1, 0, ok, acq, 10), w(2, 0, inv, 10, 1), w(3, 0, ok, 0, 0), ev(4, 0, inv, rel, 0),
				ev(5, 1, ok, acq, 11), w(6, 1, inv, 11, 2), w(7, 1, ok, 0, 0), w(8, 1, inv, 11, 3), w(9, 1, ok, 0, 0),
			},
			verdict: verdict.Pass,
			metrics: map[string]float64{"accepted_writes": 3, "tokened_writes": 3, "stale_accepted_writes": 0, "token_regressions": 0},
		},
		{
			name:    "a superseded holder's write accepted",
			events:  stale(w(msec(8), 0, ok, 0, 0)),
			verdict: verdict.Fail,
			want: []Violation{{
				Check: verdict.Fencing,
				Lock:  "l",
				Message: `lock "l": process 0's write (invoked at 7ms, line 7) of 1 with token 10 was accepted at 8ms (line 8), ` +
					`but process 1 had been granted the lock with token 11 at 5ms (line 5) before the write was invoked: a stale holder's write`,
				Lines: []int{5, 7, 8},
			}},
			metrics: map[string]float64{"stale_accepted_writes": 1, "token_regressions": 0, "rejected_stale_writes": 0},
		},
		{
			name:    "a superseded holder's write rejected (counter-fenced)",
			events:  stale(history.Event{Time: msec(8), Process: 0, Type: fail, F: wr, Lock: "l", Error: "stale token"}),
			verdict: verdict.Pass,
			metrics: map[string]float64{"stale_accepted_writes": 0, "rejected_stale_writes": 1},
		},
		{
			name:    "a superseded holder's write of unknown outcome",
			events:  stale(w(msec(8), 0, info, 0, 0)),
			verdict: verdict.Pass,
			note:    "1 stale writes have an unknown outcome (info)",
			metrics: map[string]float64{"unknown_stale_writes": 1},
		},
		{
			name: "stale and after a newer accepted write",
			events: []history.Event{
				ev(1, 0, ok, acq, 10), ev(2, 1, ok, acq, 11),
				w(3, 1, inv, 11, 1), w(4, 1, ok, 0, 0),
				w(5, 0, inv, 10, 1), w(6, 0, ok, 0, 0),
			},
			verdict: verdict.Fail,
			want: []Violation{{
				Check: verdict.Fencing,
				Lock:  "l",
				Message: `lock "l": process 0's write (invoked at 5ns, line 5) of 1 with token 10 was accepted at 6ns (line 6), ` +
					`but process 1 had been granted the lock with token 11 at 2ns (line 2) before the write was invoked: a stale holder's write; ` +
					`and process 1's write with token 11 had been accepted at 4ns (line 4) before it: accepted tokens decreased`,
				Lines: []int{2, 4, 5, 6},
			}},
			metrics: map[string]float64{"stale_accepted_writes": 1, "token_regressions": 1},
		},
		{
			name: "accepted tokens decrease (no grants on record)",
			events: []history.Event{
				w(1, 0, inv, 7, 1), w(2, 0, ok, 0, 0),
				w(3, 1, inv, 5, 2), w(4, 1, ok, 0, 0),
			},
			verdict: verdict.Fail,
			want: []Violation{{
				Check: verdict.Fencing,
				Lock:  "l",
				Message: `lock "l": process 1's write (invoked at 3ns, line 3) of 2 with token 5 was accepted at 4ns (line 4), ` +
					`but process 0's write with token 7 had been accepted at 2ns (line 2) before it: accepted tokens decreased`,
				Lines: []int{2, 3, 4},
			}},
			metrics: map[string]float64{"stale_accepted_writes": 0, "token_regressions": 1},
		},
		{
			name: "concurrent writes may be applied in either order",
			events: []history.Event{
				w(1, 0, inv, 7, 1), w(2, 1, inv, 5, 2), w(3, 0, ok, 0, 0), w(4, 1, ok, 0, 0),
			},
			verdict: verdict.Pass,
		},
		{
			name:    "accepted writes without tokens are unknown",
			events:  []history.Event{ev(1, 0, ok, acq, 0), w(2, 0, inv, 0, 1), w(3, 0, ok, 0, 0)},
			verdict: verdict.Unknown,
			note:    "no accepted write carries a token",
		},
		{
			name: "token on the write ok only",
			events: []history.Event{
				ev(1, 0, ok, acq, 10), ev(2, 1, ok, acq, 11), ev(3, 0, ok, wr, 10),
			},
			verdict: verdict.Fail,
			want: []Violation{{
				Check: verdict.Fencing,
				Lock:  "l",
				Message: `lock "l": process 0's write with token 10 was accepted at 3ns (line 3), ` +
					`but process 1 had been granted the lock with token 11 at 2ns (line 2) before the write was invoked: a stale holder's write`,
				Lines: []int{2, 3},
			}},
		},
		{
			name: "tokens are compared per lock",
			events: []history.Event{
				{Time: 1, Process: 0, Type: ok, F: acq, Lock: "a", Token: 20},
				{Time: 2, Process: 1, Type: ok, F: acq, Lock: "b", Token: 10},
				{Time: 3, Process: 1, Type: inv, F: wr, Lock: "b", Token: 10, Value: history.IntValue(1)},
				{Time: 4, Process: 1, Type: ok, F: wr, Lock: "b"},
			},
			verdict: verdict.Pass,
		},
	})
}
