package check

import (
	"testing"

	"github.com/lockbench/lockbench/history"
)

func TestPair(t *testing.T) {
	e := func(tm int64, p int, ty history.Type, f history.Function) history.Event {
		x := history.Event{Time: tm, Process: int32(p), Type: ty, F: f}
		if p >= 0 {
			x.Lock = "l"
		}
		return x
	}
	evs := []history.Event{
		e(1, 0, history.Invoke, history.FAcquire),
		e(2, 1, history.Invoke, history.FAcquire),
		e(3, 0, history.OK, history.FAcquire),
		e(4, -1, history.Invoke, history.FFault),
		e(5, 0, history.Invoke, history.FRelease),
		e(6, 0, history.OK, history.FRelease),
		e(7, 1, history.Info, history.FCrash), // aborts process 1's acquire
		e(8, -1, history.OK, history.FFault),
		e(9, 0, history.OK, history.FPause),
	}
	o := Pair(evs)
	if len(o.Acquires) != 2 || o.Acquires[0].Outcome != OutcomeOK || o.Acquires[0].Done != 2 ||
		o.Acquires[1].Outcome != OutcomeAborted || o.Acquires[1].Done != 6 {
		t.Errorf("acquires = %+v", o.Acquires)
	}
	// by start: process 1's possible hold from its invoke, then 0's
	if len(o.Holds) != 2 || o.Holds[0].Certain || o.Holds[0].End != EndNextEvent || o.Holds[0].To != 7 ||
		!o.Holds[1].Certain || o.Holds[1].End != EndRelease || o.Holds[1].To != 5 {
		t.Errorf("holds = %+v", o.Holds)
	}
	if len(o.Faults) != 1 || o.Faults[0].From != 4 || o.Faults[0].To != 8 {
		t.Errorf("faults = %+v", o.Faults)
	}
	if len(o.Crashes) != 1 || len(o.Pauses) != 1 || o.Pauses[0].Stop != -1 || len(o.Releases) != 1 {
		t.Errorf("crashes %+v pauses %+v releases %+v", o.Crashes, o.Pauses, o.Releases)
	}
	if g := o.Grants(); len(g) != 1 || g[0].To != 3 {
		t.Errorf("grants = %+v", g)
	}
}
