package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
)

// TestExclusionExample: a cell's example names both holders and the
// failover between their grants, and nothing for a history that passes.
func TestExclusionExample(t *testing.T) {
	s := time.Second.Nanoseconds()
	crash := history.FaultValue(history.Fault{Fault: "redis-crash-primary", Target: "member:0"})
	cut := history.FaultValue(history.Fault{Fault: "redis-cut-replication", Target: "replicas"})
	ev := func(at int64, p int, ty history.Type, f string, tok int64) history.Event {
		return history.Event{Time: at, Process: p, Type: ty, F: f, Lock: "lock", Token: tok}
	}
	fault := func(at int64, ty history.Type, v []byte) history.Event {
		return history.Event{Time: at, Process: history.NemesisProcess, Type: ty, F: history.FFault, Value: v}
	}
	events := []history.Event{
		fault(s/2, history.Invoke, cut), fault(s/2+1, history.OK, cut),
		ev(s, 0, history.Invoke, history.FAcquire, 0), ev(s+1, 0, history.OK, history.FAcquire, 2),
		ev(s+2, 1, history.Invoke, history.FAcquire, 0),
		fault(s+3, history.Invoke, crash), fault(3*s, history.OK, crash),
		ev(3*s+s/5, 1, history.OK, history.FAcquire, 2),
		ev(5*s, 0, history.Invoke, history.FRelease, 0), ev(5*s+1, 0, history.OK, history.FRelease, 0),
		ev(6*s, 1, history.Invoke, history.FRelease, 0), ev(6*s+1, 1, history.OK, history.FRelease, 0),
	}
	rep := check.Check(events, check.Options{}).Report
	got := exclusionExample("redis-setnx-primary-crash-unreplicated-s0", rep, events)
	for _, want := range []string{"redis-setnx-primary-crash-unreplicated-s0: ", "process 0 (token 2)", "process 1 (token 2)",
		"faults between the two grants: redis-crash-primary 1s–3s"} {
		if !strings.Contains(got, want) {
			t.Errorf("example lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "redis-cut-replication") {
		t.Errorf("example names a fault that ended before the first grant:\n%s", got)
	}
	if got := exclusionExample("x", check.Check(events[:4], check.Options{}).Report, events[:4]); got != "" {
		t.Errorf("example of a passing history: %q", got)
	}
}
