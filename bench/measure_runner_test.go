package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/stats"
)

// TestMeasureRunnerTax is a measurement, not a check: it runs only with
// LOCKBENCH_MEASURE=runner. It measures what the runner costs a lock's
// throughput — the harness's own share of the gap to the ideal handoff.
// On one 3-member cluster (fsync on), each round runs an ideal-handoff
// slice, then in rotating order the bench's target cell (queue, 8
// clients, recording on, timed over a window after its first grant and a
// warm-up, as the paired rounds time it) and the same lock in a bare
// Lock/Unlock loop per client timed over the same kind of window. It
// prints each as a ratio to the round's ideal, the runner ÷ bare ratio
// per round, and the process CPU and bytes allocated per acquisition
// (members included), as medians (docs/measurements.md, "The runner's
// share").
//
//	LOCKBENCH_MEASURE=runner go test -run TestMeasureRunnerTax -v ./harness
func TestMeasureRunnerTax(t *testing.T) {
	if os.Getenv("LOCKBENCH_MEASURE") != "runner" || testing.Short() {
		t.Skip("set LOCKBENCH_MEASURE=runner to measure")
	}
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	spec := BenchSpec{TargetLock: "queue", TargetClients: 8, PairedSlice: DefaultPairedSlice, Seed: 1}
	const rounds = 20
	var runnerX, bareX, rel, runnerCPU, bareCPU, runnerKB, bareKB []float64
	for r := range rounds {
		id, err := harness.MeasureIdeal(ctx, clientv3.Config{Endpoints: c.DirectEndpoints()}, fmt.Sprintf("/measure-runner/ideal/%d/", r), spec.TargetClients, spec.PairedSlice)
		if err != nil {
			t.Fatal(err)
		}
		run := func() (windowCost, error) {
			return runnerWindow(ctx, c, spec, fmt.Sprintf("/measure-runner/runner/%d/", r))
		}
		bare := func() (windowCost, error) {
			return bareWindow(ctx, c.DirectEndpoints(), fmt.Sprintf("/measure-runner/bare/%d/", r), spec)
		}
		if r%2 == 1 {
			run, bare = bare, run // rotate, then swap the figures back
		}
		a, err := run()
		if err != nil {
			t.Fatal(err)
		}
		b, err := bare()
		if err != nil {
			t.Fatal(err)
		}
		if r%2 == 1 {
			a, b = b, a
		}
		runnerX, bareX, rel = append(runnerX, a.rate/id.RatePerS), append(bareX, b.rate/id.RatePerS), append(rel, a.rate/b.rate)
		runnerCPU, bareCPU = append(runnerCPU, a.cpuUS), append(bareCPU, b.cpuUS)
		runnerKB, bareKB = append(runnerKB, a.allocKB), append(bareKB, b.allocKB)
		t.Logf("round %2d: ideal %4.0f steps/s | runner ×%.3f (%4.0f µs CPU, %5.1f KB/acq) | bare ×%.3f (%4.0f µs, %5.1f KB) | runner ÷ bare %.3f",
			r, id.RatePerS, a.rate/id.RatePerS, a.cpuUS, a.allocKB, b.rate/id.RatePerS, b.cpuUS, b.allocKB, a.rate/b.rate)
	}
	below := 0
	for _, x := range rel {
		if x < 1 {
			below++
		}
	}
	t.Logf("runner × ideal median %.3f, bare × ideal median %.3f; runner ÷ bare median %.3f (%.3f–%.3f), runner below in %d of %d rounds; per acquisition median runner %.0f µs CPU and %.1f KB allocated, bare %.0f µs and %.1f KB",
		stats.Median(runnerX), stats.Median(bareX), stats.Median(rel), slices.Min(rel), slices.Max(rel), below, rounds,
		stats.Median(runnerCPU), stats.Median(runnerKB), stats.Median(bareCPU), stats.Median(bareKB))
}

// runnerWindow runs the target cell as the paired rounds do and measures
// one window of it.
func runnerWindow(ctx context.Context, c cluster.Members, spec BenchSpec, prefix string) (windowCost, error) {
	s, err := startSliced(ctx, c, spec, prefix, recordWarmup+spec.PairedSlice+5*time.Second, true)
	if err != nil {
		return windowCost{}, err
	}
	var g int64
	var t0, t1 time.Time
	var m0 meter
	werr := s.warmedUp()
	if werr == nil {
		m0 = readMeter()
		g, t0, t1, werr = s.window(spec.PairedSlice)
	}
	var wc windowCost
	if werr == nil && g > 0 {
		wc = m0.cost(g, t1.Sub(t0))
	}
	if err := s.stop(); werr == nil {
		werr = err
	}
	if werr != nil || g == 0 {
		return windowCost{}, fmt.Errorf("runner window: %d grants, %v", g, werr)
	}
	return wc, nil
}
