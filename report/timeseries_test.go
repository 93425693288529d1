package report

import (
	"math"
	"testing"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/stats"
)

func TestSeriesFixture(t *testing.T) {
	f := defaultFixture()
	ev := f.events()
	ts := Series(check.Pair(ev))
	// The fixture spans about 160ms: 60 intervals would be 2.7ms, rounded
	// up to 5ms.
	if ts.IntervalS != 0.005 {
		t.Fatalf("interval %vs, want 0.005", ts.IntervalS)
	}
	total := 0
	for _, n := range ts.Grants {
		total += n
	}
	if total != 41 {
		t.Errorf("%d grants over the intervals, want 41", total)
	}
	// No grant during the fault (40ms–60ms, the first after it at 65ms).
	for i := 8; i < 13; i++ {
		if ts.Grants[i] != 0 {
			t.Errorf("interval %d (%vs) has %d grants during the fault", i, float64(i)*ts.IntervalS, ts.Grants[i])
		}
	}
	if len(ts.Faults) != 1 || ts.Faults[0].FromS != 0.04 || ts.Faults[0].ToS != 0.06 || ts.Faults[0].Label != "kill leader (m1)" {
		t.Errorf("faults %+v", ts.Faults)
	}
	// The fault's gap is the largest handoff, in the interval of the first
	// grant after it (65ms → interval 13).
	var worst IntervalLatency
	n := 0
	for _, l := range ts.Handoff {
		n += l.N
		if l.Max > worst.Max {
			worst = l
		}
	}
	if n != 39 || worst.I != 13 || math.Abs(worst.Max-24.5) > 1e-9 {
		t.Errorf("handoffs %d, worst %+v; want 39 and 24.5ms in interval 13", n, worst)
	}
	acq := 0
	for _, l := range ts.Acquire {
		acq += l.N
		if l.P50 > l.P99 || l.P99 > l.Max {
			t.Errorf("interval %d: p50 %v p99 %v max %v out of order", l.I, l.P50, l.P99, l.Max)
		}
	}
	if acq != 41 {
		t.Errorf("%d acquire samples, want 41", acq)
	}
}

func TestSeriesEdges(t *testing.T) {
	ts := Series(check.Pair(nil))
	if len(ts.Grants) != 1 || ts.IntervalS != 0.001 || ts.Acquire != nil {
		t.Errorf("empty history: %+v", ts)
	}
	for _, c := range []struct {
		end, want int64
	}{{0, 1e6}, {59e6, 1e6}, {61e6, 2e6}, {10e9, 200e6}, {3600e9, 100e9}} {
		if got := seriesInterval(c.end); got != c.want {
			t.Errorf("seriesInterval(%d) = %d, want %d", c.end, got, c.want)
		}
	}
	if got := stats.NearestRank([]int64{1, 2, 3, 4}, 0.5); got != 2 {
		t.Errorf("p50 of 1..4 = %d", got)
	}
	if got := stats.NearestRank([]int64{1, 2, 3, 4}, 0.99); got != 4 {
		t.Errorf("p99 of 1..4 = %d", got)
	}
}

// TestLeaseOverrunNegative: a crashed holder whose lock came free sooner
// than the TTL gives a negative overrun, kept as it is.
func TestLeaseOverrunNegative(t *testing.T) {
	ms := func(x int64) int64 { return x * msNS }
	ev := []history.Event{
		{Time: 0, Process: 0, Type: history.Invoke, F: history.FAcquire, Lock: "l"},
		{Time: ms(1), Process: 0, Type: history.OK, F: history.FAcquire, Lock: "l", Token: 1},
		{Time: ms(2), Process: 1, Type: history.Invoke, F: history.FAcquire, Lock: "l"},
		{Time: ms(10), Process: 0, Type: history.Info, F: history.FCrash},
		{Time: ms(1010), Process: 1, Type: history.OK, F: history.FAcquire, Lock: "l", Token: 2}, // TTL 2s: 1s early
		{Time: ms(1020), Process: 1, Type: history.Info, F: history.FCrash},
		{Time: ms(1030), Process: 0, Type: history.Invoke, F: history.FAcquire, Lock: "l"},
		{Time: ms(3520), Process: 0, Type: history.OK, F: history.FAcquire, Lock: "l", Token: 3}, // 0.5s late
	}
	s := Summarize(RunInfo{Run: rundir.Run{Lock: "l"}, LeaseTTL: 2 * time.Second}, check.Check(ev, check.Options{}))
	l := s.LatencyMS[LatLeaseOverrun]
	// The histogram keeps 3 significant digits of the gap (crash → grant),
	// not of the overrun: ±0.1% of 1s and 2.5s.
	near := func(a, b float64) bool { return math.Abs(a-b) <= 3 }
	if l.Count != 2 || !near(l.CDF[0].MS, -1000) || !near(l.Max, 500) {
		t.Fatalf("lease_overrun %+v, want 2 samples: −1000ms and 500ms", l)
	}
	if len(l.Samples) != 2 || l.Samples[0] != -1000 || l.Samples[1] != 500 {
		t.Errorf("samples %v", l.Samples)
	}
	if pts := l.Points(); len(pts) < 2 || pts[0].MS >= 0 {
		t.Errorf("points drop the negative value: %v", pts)
	}
}

func TestLatencySamples(t *testing.T) {
	h := newHist()
	for i := range SampleLimit {
		h.record(int64(SampleLimit-i) * 1e6)
	}
	l := h.latency()
	if len(l.Samples) != SampleLimit || l.Samples[0] != 1 || l.Samples[SampleLimit-1] != SampleLimit {
		t.Errorf("samples %v", l.Samples)
	}
	h.record(1e6)
	if l := h.latency(); l.Samples != nil {
		t.Errorf("%d samples kept past the limit", len(l.Samples))
	}
}
