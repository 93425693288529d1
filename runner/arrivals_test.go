package runner

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/scenarios"
)

func TestScheduleIsTheSeeds(t *testing.T) {
	uni := scenarios.Workload{Kind: scenarios.WorkloadHold, Rate: 200}
	got := schedule(uni, 7, 5)
	want := []int64{0, 5e6, 10e6, 15e6, 20e6}
	if !slices.Equal(got, want) {
		t.Errorf("uniform 200/s: %v, want %v", got, want)
	}
	poi := scenarios.Workload{Kind: scenarios.WorkloadHold, Rate: 200, Arrivals: scenarios.ArrivalsPoisson}
	a, b, c := schedule(poi, 7, 50), schedule(poi, 7, 50), schedule(poi, 8, 50)
	if !slices.Equal(a, b) {
		t.Error("poisson: the same seed gave two schedules")
	}
	if slices.Equal(a, c) {
		t.Error("poisson: seeds 7 and 8 gave the same schedule")
	}
	if !slices.IsSorted(a) || a[0] < 0 {
		t.Errorf("poisson schedule not ascending from ≥ 0: %v", a[:5])
	}
	if schedule(scenarios.Workload{Kind: scenarios.WorkloadHold}, 7, 3) != nil {
		t.Error("a closed-loop workload has a schedule")
	}
}

// Poisson gaps are exponential of mean 1/rate: their mean and standard
// deviation both ≈ 1/rate (a uniform schedule's deviation is 0).
func TestPoissonGaps(t *testing.T) {
	const n, rate = 20000, 500.0
	ts := schedule(scenarios.Workload{Kind: scenarios.WorkloadHold, Rate: rate, Arrivals: scenarios.ArrivalsPoisson}, 1, n+1)
	var sum, sq float64
	for i := 1; i <= n; i++ {
		g := float64(ts[i] - ts[i-1])
		sum += g
		sq += g * g
	}
	mean := sum / n
	sd := math.Sqrt(sq/n - mean*mean)
	if want := 1e9 / rate; math.Abs(mean-want) > 0.03*want || math.Abs(sd-want) > 0.05*want {
		t.Errorf("gaps: mean %.0f ns, sd %.0f ns; want both ≈ %.0f", mean, sd, want)
	}
}

// synthetic is a lock with a known service time: it grants one request
// at a time, exactly s after it began serving it, in request order (hold
// 0: the grant is released at once). simulate drives it in virtual time
// the way the runner drives a lock, so that the arithmetic of open-loop
// latency can be checked without etcd or a clock.
type synthetic struct{ s int64 }

// simulate runs clients against the lock until end ns and returns the
// history the runner would record. Open loop (w.Rate set): arrivals come
// from the runner's own schedule; the first free client takes the next
// one, calls Lock at its intended start or when it came free, whichever
// is later, and its invoke carries the intended start. Closed loop: each
// client calls again think after its release.
func (l synthetic) simulate(w scenarios.Workload, clients int, think, end int64) []history.Event {
	free := make([]int64, clients) // when each client is free again
	var lockFree int64
	var events []history.Event
	arr := newArrivals(w, 1)
	for {
		c := 0
		for i := range free {
			if free[i] < free[c] {
				c = i
			}
		}
		invoke, intended := free[c], int64(-1)
		if arr != nil {
			intended = arr.take()
			invoke = max(invoke, intended)
		}
		grant := max(invoke, lockFree) + l.s
		if grant >= end {
			return events
		}
		inv := history.Event{Time: invoke, Process: int32(c), Type: history.Invoke, F: history.FAcquire, Lock: "lock"}
		if intended >= 0 {
			inv.Value = history.IntendedValue(intended)
		}
		events = append(events, inv,
			history.Event{Time: grant, Process: int32(c), Type: history.OK, F: history.FAcquire, Lock: "lock", Token: int64(len(events) + 1)},
			history.Event{Time: grant, Process: int32(c), Type: history.Invoke, F: history.FRelease, Lock: "lock"},
			history.Event{Time: grant, Process: int32(c), Type: history.OK, F: history.FRelease, Lock: "lock"})
		lockFree, free[c] = grant, grant+think
	}
}

// summarize is the summary of a simulated history, by the report's own
// code (check.Check pairs it, report.Summarize measures it).
func summarize(t *testing.T, events []history.Event, clients int, end int64) report.Summary {
	t.Helper()
	slices.SortStableFunc(events, func(a, b history.Event) int { return int(a.Time - b.Time) })
	c := check.Check(events, check.Options{})
	if v := c.Report.Checks["exclusion"].Verdict; v != "pass" {
		t.Fatalf("the synthetic lock's history fails exclusion: %v", c.Report.Checks["exclusion"])
	}
	return report.Summarize(report.RunInfo{Scenario: "synthetic", Clients: clients, Elapsed: time.Duration(end)}, c)
}

// TestOpenLoopArithmetic checks coordinated omission corrected, on a lock
// that serves one request every S: its capacity is 1/S. Below it, an
// open-loop arrival waits only for the lock (uniform: exactly S; Poisson:
// more, when arrivals bunch). Above it, the queue of arrivals grows for
// the whole run, and so does the open-loop latency, while the latency
// measured from the call (what a closed-loop tool reports) stays bounded
// by the clients in the lock's queue × S. And at every rate, the
// open-loop latency is never below the closed-loop latency of one client
// at the same throughput (think chosen to match it), which is S.
func TestOpenLoopArithmetic(t *testing.T) {
	const s = int64(10 * time.Millisecond)
	lock := synthetic{s: s}
	for _, arrivals := range []string{scenarios.ArrivalsUniform, scenarios.ArrivalsPoisson} {
		for _, clients := range []int{1, 4} {
			for _, load := range []float64{0.25, 0.5, 0.8, 0.95, 1.5, 3} { // × capacity
				name := fmt.Sprintf("%s/%d clients/%.2f×capacity", arrivals, clients, load)
				t.Run(name, func(t *testing.T) {
					checkOpenLoop(t, lock, arrivals, clients, load)
				})
			}
		}
	}
}

func checkOpenLoop(t *testing.T, lock synthetic, arrivals string, clients int, load float64) {
	s, end := lock.s, 400*lock.s
	sMS := float64(s) / 1e6
	w := scenarios.Workload{Kind: scenarios.WorkloadHold, Rate: scenarios.Rate(load * 1e9 / float64(s)), Arrivals: arrivals}
	open := summarize(t, lock.simulate(w, clients, 0, end), clients, end)
	acq, ol := open.LatencyMS[report.LatAcquire], open.OpenLoop
	if ol == nil || ol.Grants != open.Acquisitions {
		t.Fatalf("open-loop figures %+v for %d grants", ol, open.Acquisitions)
	}
	// The same throughput in a closed loop: one client, think = 1/X − S.
	x := open.ThroughputPerS
	think := max(int64(1e9/x)-s, 0)
	closed := summarize(t, lock.simulate(scenarios.Workload{Kind: scenarios.WorkloadHold}, 1, think, end), 1, end)
	cl := closed.LatencyMS[report.LatAcquire]
	if !near(cl.P50, sMS) || !near(cl.P99, sMS) || closed.OpenLoop != nil {
		t.Fatalf("closed loop: acquire p50 %v p99 %v ms (open-loop figures %v): want exactly S = %v", cl.P50, cl.P99, closed.OpenLoop, sMS)
	}
	if acq.P50 < cl.P50 || acq.P99 < cl.P99 {
		t.Errorf("open-loop acquire p50 %v p99 %v ms below the closed loop's %v, %v at the same %.1f/s", acq.P50, acq.P99, cl.P50, cl.P99, x)
	}
	// Latency from the call is bounded by the lock's queue, whatever the rate.
	if bound := float64(clients) * sMS; ol.ServiceMS.Max > bound && !near(ol.ServiceMS.Max, bound) {
		t.Errorf("service (invoke → grant) max %v ms: want ≤ clients × S = %v", ol.ServiceMS.Max, bound)
	}
	// acquire = queued + service, grant by grant, so the distributions nest.
	if acq.Max < ol.QueuedMS.Max || acq.Max < ol.ServiceMS.Max {
		t.Errorf("acquire max %v ms below its parts' (queued %v, service %v)", acq.Max, ol.QueuedMS.Max, ol.ServiceMS.Max)
	}
	switch {
	case load > 1:
		// The backlog grows as (rate − 1/S) × t: the wait of the arrivals
		// served last is about (1 − 1/(rate·S)) × the run.
		grow := (1 - 1/load) * float64(end) / 1e6
		if acq.Max < 0.9*grow || ol.LateP50MS < 2.5*ol.EarlyP50MS {
			t.Errorf("above capacity: acquire max %v ms (want ≈ %.0f), p50 early %v late %v: want the late ≥ 2.5 × the early", acq.Max, grow, ol.EarlyP50MS, ol.LateP50MS)
		}
		if want := 1e9 / float64(s); math.Abs(x-want) > 0.02*want {
			t.Errorf("above capacity: achieved %.1f/s, want the capacity %.1f/s", x, want)
		}
	case load <= 0.8 && ol.LateP50MS > 2*ol.EarlyP50MS+10:
		// (Nearer capacity a Poisson queue wanders for longer than this
		// run: at 0.95 its relaxation time is ~1/(1−ρ)² = 400 services.)
		t.Errorf("below capacity: p50 early %v late %v ms: the queue grew", ol.EarlyP50MS, ol.LateP50MS)
	case arrivals == scenarios.ArrivalsUniform:
		// Evenly spaced arrivals below capacity never queue.
		if !near(acq.P99, sMS) || !near(acq.Max, sMS) {
			t.Errorf("uniform below capacity: acquire p99 %v max %v ms, want exactly S = %v", acq.P99, acq.Max, sMS)
		}
	case load >= 0.8:
		// Poisson arrivals bunch: near capacity they queue (M/D/1).
		if acq.P99 < 2*sMS {
			t.Errorf("poisson at %.2f × capacity: acquire p99 %v ms, want ≥ 2 × S (arrivals that bunch wait)", load, acq.P99)
		}
	}
}

// near is a ≈ b within the summary's histogram resolution (3 significant
// digits).
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-3*b }
