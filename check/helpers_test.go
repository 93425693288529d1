package check

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// Terse builders for literal histories; every client event is on lock "l".

const (
	rd   = history.FRead
	wr   = history.FWrite
	flt  = history.FFault
	wake = history.FWakeup
)

func msec(x int64) int64 { return x * 1_000_000 }
func sec(x int64) int64  { return x * 1_000_000_000 }

// w is a write event with a value and token.
func w(t int64, p int, typ history.Type, token, value int64) history.Event {
	e := ev(t, p, typ, wr, token)
	if typ == inv {
		e.Value = history.IntValue(value)
	}
	return e
}

// r is a read event; value only on ok.
func r(t int64, p int, typ history.Type, value int64) history.Event {
	e := ev(t, p, typ, rd, 0)
	if typ == ok {
		e.Value = history.IntValue(value)
	}
	return e
}

// final is the nemesis's read of the counter at the end.
func final(t int64, value int64) history.Event {
	return history.Event{Time: t, Process: history.NemesisProcess, Type: ok, F: rd, Value: history.IntValue(value)}
}

func fault(t int64, typ history.Type) history.Event {
	return history.Event{Time: t, Process: history.NemesisProcess, Type: typ, F: flt,
		Value: history.FaultValue(history.Fault{Fault: "partition", Target: "leader"})}
}

func proc(t int64, p int, typ history.Type, f history.Function) history.Event {
	return history.Event{Time: t, Process: int32(p), Type: typ, F: f}
}

// checkCase is one literal history and what one check must say about it.
type checkCase struct {
	name    string
	opts    Options
	events  []history.Event
	verdict verdict.Verdict
	// want are the exact violations, in order.
	want []Violation
	// metrics that must have exactly these values (others are not checked).
	metrics map[string]float64
	// absent lists metrics that must not be set.
	absent []string
	note   string // if set, the exact note
	// notJudged: the history holds nothing the check judges.
	notJudged bool
}

func runCases(t *testing.T, name string, fn func([]history.Event, Options) Result, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := fn(tc.events, tc.opts)
			if res.Verdict != tc.verdict {
				t.Errorf("verdict = %s, want %s (note %q)", res.Verdict, tc.verdict, res.Note)
			}
			if !reflect.DeepEqual(res.Violations, tc.want) {
				got, _ := json.MarshalIndent(res.Violations, "", "  ")
				want, _ := json.MarshalIndent(tc.want, "", "  ")
				t.Errorf("violations:\n%s\nwant:\n%s", got, want)
			}
			if res.Count != len(tc.want) {
				t.Errorf("count = %d, want %d", res.Count, len(tc.want))
			}
			for k, v := range tc.metrics {
				if got, ok := res.Metrics[k]; !ok || got != v {
					t.Errorf("metric %s = %v (set %v), want %v", k, got, ok, v)
				}
			}
			for _, k := range tc.absent {
				if v, ok := res.Metrics[k]; ok {
					t.Errorf("metric %s = %v, want it absent", k, v)
				}
			}
			if res.NotJudged != tc.notJudged {
				t.Errorf("not judged = %v, want %v (note %q)", res.NotJudged, tc.notJudged, res.Note)
			}
			if tc.note != "" && res.Note != tc.note {
				t.Errorf("note = %q, want %q", res.Note, tc.note)
			}
			// The same check inside Check gives the same result.
			if all := Check(tc.events, tc.opts).Checks[name]; !reflect.DeepEqual(all, res) {
				t.Errorf("Check().Checks[%q] = %+v, differs from the check alone %+v", name, all, res)
			}
		})
	}
}

// TestOpCodesAreFunctions: opOf reads a Function's value as its op code,
// so each code must be the value of the Function it names.
func TestOpCodesAreFunctions(t *testing.T) {
	for _, c := range []struct {
		op uint8
		f  history.Function
	}{{opAcquire, history.FAcquire}, {opRelease, history.FRelease}, {opRead, history.FRead},
		{opWrite, history.FWrite}, {opCrash, history.FCrash}, {opPause, history.FPause},
		{opResume, history.FResume}, {opLeaseLost, history.FLeaseLost}, {opWakeup, history.FWakeup},
		{opFault, history.FFault}, {opRPCs, history.FRPCs}, {opKeyDeleted, history.FKeyDeleted},
		{opClock, history.FClock}, {opLeaseOp, history.FLeaseOp}, {opKeyOp, history.FKeyOp}} {
		if got := opOf(c.f); got != c.op {
			t.Errorf("opOf(%s) = %d, want %d", c.f, got, c.op)
		}
	}
	for _, f := range []history.Function{0, history.FKeyOp + 1, 255} {
		if got := opOf(f); got != opOther {
			t.Errorf("opOf(%d) = %d, want opOther", f, got)
		}
	}
}
