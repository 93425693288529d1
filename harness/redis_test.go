package harness

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/redis/redisrun"
	"github.com/lockbench/lockbench/verdict"
)

// TestExclusionExample: a cell's example names both holders and the
// failover between their grants, and nothing for a history that passes.
func TestExclusionExample(t *testing.T) {
	s := time.Second.Nanoseconds()
	crash := history.FaultValue(history.Fault{Fault: "redis-crash-primary", Target: "member:0"})
	cut := history.FaultValue(history.Fault{Fault: "redis-cut-replication", Target: "replicas"})
	ev := func(at int64, p int, ty history.Type, f history.Function, tok int64) history.Event {
		return history.Event{Time: at, Process: int32(p), Type: ty, F: f, Lock: "lock", Token: tok}
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

// TestRedisCells: a fault with no meaning for a lock is skipped with one
// line however often the spec is checked, holder-pause is skipped when it
// was not named and the workload given leaves it no room, and refused
// when it was named.
func TestRedisCells(t *testing.T) {
	spec := RedisSpec{Locks: []string{redisrun.Redlock}, Faults: []string{redisrun.NoFault, redisrun.PrimaryCrash}, Seeds: 1}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	cells, err := spec.redisCells()
	if err != nil || len(cells) != 1 || len(spec.skipped) != 1 {
		t.Errorf("cells %v, skipped %q, %v: want one cell and one skipped line", cells, spec.skipped, err)
	}
	long := redisrun.Spec{TTL: 30 * time.Second}
	spec = RedisSpec{Locks: []string{redisrun.SetNX}, Seeds: 1, Run: long}
	cells, err = spec.redisCells()
	if err != nil || slices.Contains(cells, [2]string{redisrun.SetNX, redisrun.PauseHolder}) ||
		len(spec.skipped) != 1 || !strings.Contains(spec.skipped[0], "holder-pause on redis-setnx: not run: ") {
		t.Errorf("cells %v, skipped %q, %v: want holder-pause skipped, with why", cells, spec.skipped, err)
	}
	spec.Faults = []string{redisrun.PauseHolder}
	if _, err := spec.redisCells(); err == nil || !strings.Contains(err.Error(), "must expire while the others ask") {
		t.Errorf("holder-pause named with a 30 s key: %v, want it refused", err)
	}
}

// TestStudyCellRecord: a cell is as expected only when every expected
// check is in the report with the verdict expected.
func TestStudyCellRecord(t *testing.T) {
	want := map[string]verdict.Verdict{verdict.Exclusion: verdict.Fail, verdict.Fencing: verdict.Pass}
	for _, tt := range []struct {
		name   string
		checks map[string]check.Result
		as     bool
	}{
		{"as predicted", map[string]check.Result{verdict.Exclusion: {Verdict: verdict.Fail}, verdict.Fencing: {Verdict: verdict.Pass}}, true},
		{"exclusion passed", map[string]check.Result{verdict.Exclusion: {Verdict: verdict.Pass}, verdict.Fencing: {Verdict: verdict.Pass}}, false},
		{"fencing absent", map[string]check.Result{verdict.Exclusion: {Verdict: verdict.Fail}}, false},
	} {
		c := StudyCell{Expect: want, Failed: map[string]int{}, AsExpected: true}
		c.record(check.Report{Checks: tt.checks}, "r")
		if c.AsExpected != tt.as || c.Failed[verdict.Exclusion] != 1 && tt.checks[verdict.Exclusion].Verdict == verdict.Fail {
			t.Errorf("%s: as expected %v, failed %v; want %v", tt.name, c.AsExpected, c.Failed, tt.as)
		}
	}
}
