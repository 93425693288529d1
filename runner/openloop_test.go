package runner

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lockbench/lockbench/etcd"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/scenarios"
)

// TestOpenLoopRun runs an open-loop workload on a real cluster: every
// acquire invoke carries its arrival's intended start, the intended
// starts are the schedule's in order (one per acquisition asked, none
// after the run's end), no call starts before its arrival, and the
// clients asked about as often as the rate says, not as fast as the lock
// allows.
func TestOpenLoopRun(t *testing.T) {
	c := startCluster(t)
	sc, err := scenarios.Lookup("contention")
	if err != nil {
		t.Fatal(err)
	}
	const rate = 40
	sc.Clients, sc.Duration = 3, scenarios.Duration(1500*time.Millisecond)
	sc.Workload.Think, sc.Workload.Rate = 0, rate
	out, err := Run(context.Background(), Config{Backend: etcd.Backend{}, Scenario: sc, Lock: "queue", Seed: 3, Prefix: "/lockbench/test-open/",
		Endpoints: c.Endpoints(), Cluster: etcd.Members{Members: c}})
	if err != nil {
		t.Fatal(err)
	}
	var intended []int64
	for _, e := range out.Events {
		if e.F != history.FAcquire || e.Type != history.Invoke {
			continue
		}
		at, ok := history.ParseIntended(e.Value)
		if !ok {
			t.Fatalf("acquire invoke without an intended start: %+v", e)
		}
		if e.Time < at {
			t.Errorf("process %d called Lock at %v, before its arrival at %v", e.Process, time.Duration(e.Time), time.Duration(at))
		}
		intended = append(intended, at)
	}
	want := schedule(sc.Workload, 3, len(intended))
	got := append([]int64(nil), intended...)
	slices.Sort(got) // clients take arrivals in order but record their invokes as they run
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("intended starts %v, want the schedule %v", got, want)
		}
	}
	// 40/s for 1.5 s is 60 arrivals, the last at 1.475 s: never more, and a
	// closed loop of 3 clients on queue asks hundreds of times. (Fewer when
	// a loaded machine keeps all 3 clients busy past the end.)
	if n := len(got); n < 30 || n > 60 {
		t.Errorf("%d acquisitions asked in 1.5 s at %d/s: want ≤ 60 (the schedule's), and ≥ 30", n, rate)
	}
	requireExclusion(t, out.Events, sc, c)
}
