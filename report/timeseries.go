package report

import (
	"math"
	"slices"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/stats"
)

// SeriesIntervals is about how many intervals a run's TimeSeries has: the
// interval is the run's span over this, rounded up to 1, 2 or 5 × 10^k ms,
// so a chart has enough points to show a dip without noise per grant.
const SeriesIntervals = 60

// TimeSeries is a run over time: grants and latency per interval, and the
// faults, so a reader sees what a fault did to throughput and latency and
// when the run recovered. Interval i covers [i, i+1) × IntervalS seconds
// since the run's start.
type TimeSeries struct {
	IntervalS float64 `json:"interval_s"`
	// SpanS is the run's span: the last interval covers only its part up
	// to SpanS.
	SpanS float64 `json:"span_s"`
	// Grants counts the acquires granted in each interval.
	Grants []int `json:"grants"`
	// Acquire (invoke → ok) and Handoff (release invoke → next grant) are
	// the latencies of the grants of each interval that had any, by the
	// grant's time.
	Acquire []IntervalLatency `json:"acquire,omitempty"`
	Handoff []IntervalLatency `json:"handoff,omitempty"`
	// Faults are the run's faults, in seconds since its start.
	Faults []FaultSpan `json:"faults,omitempty"`
}

// IntervalLatency is one interval's latency distribution, in ms.
type IntervalLatency struct {
	// I is the interval's index, N its sample count.
	I   int     `json:"i"`
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// FaultSpan is a fault in seconds since the run's start; Open when it was
// still on at the end (To is then the end).
type FaultSpan struct {
	FromS float64 `json:"from_s"`
	ToS   float64 `json:"to_s"`
	Label string  `json:"label"`
	Open  bool    `json:"open,omitempty"`
}

// EndS is the series' span in seconds.
func (t TimeSeries) EndS() float64 {
	if t.SpanS > 0 {
		return t.SpanS
	}
	return float64(len(t.Grants)) * t.IntervalS
}

// covered is how much of interval i lies within the run, in seconds.
func (t TimeSeries) covered(i int) float64 {
	return min(t.IntervalS, t.EndS()-float64(i)*t.IntervalS)
}

// Series computes a run's TimeSeries from its paired history: a pure
// function of ops (see check.Pair), so figures, checks and charts speak of
// the same grants.
func Series(ops *check.Ops) TimeSeries {
	iv := seriesInterval(ops.End)
	n := int(ops.End/iv) + 1
	ts := TimeSeries{IntervalS: float64(iv) / 1e9, SpanS: float64(ops.End) / 1e9, Grants: make([]int, n)}
	grants := ops.Grants()
	for _, g := range grants {
		ts.Grants[min(int(g.To/iv), n-1)]++
	}
	ts.Acquire = perInterval(acquireWaits(ops.Events, grants), iv, n)
	ts.Handoff = perInterval(handoffGaps(grants, ops.Holds), iv, n)
	for _, f := range faultSpans(ops, ops.End) {
		ts.Faults = append(ts.Faults, FaultSpan{FromS: float64(f.From) / 1e9, ToS: float64(f.To) / 1e9, Label: f.Label, Open: f.Open})
	}
	return ts
}

// seriesInterval is the interval for a run of end ns: end/SeriesIntervals
// rounded up to 1, 2 or 5 × 10^k ns, at least 1 ms.
func seriesInterval(end int64) int64 {
	raw := max(end/SeriesIntervals, int64(time.Millisecond))
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if m*p >= raw {
				return m * p
			}
		}
	}
}

// acquireWaits are the granted acquires' waits (invoke, or intended start,
// → ok), by grant.
func acquireWaits(events []history.Event, grants []check.Op) []timed {
	out := make([]timed, 0, len(grants))
	for _, g := range grants {
		if g.Invoke >= 0 {
			out = append(out, timed{At: g.To, NS: g.To - AcquireStart(events, g)})
		}
	}
	return out
}

// perInterval groups samples by interval (of iv ns, n of them) and gives
// each non-empty interval's count, p50, p99 and max (nearest rank).
func perInterval(samples []timed, iv int64, n int) []IntervalLatency {
	// A counting sort by interval into one list: each interval's samples
	// are one stretch of it (no list grown per interval).
	interval := func(s timed) int { return min(max(int(s.At/iv), 0), n-1) }
	start := make([]int, n+1)
	for _, s := range samples {
		start[interval(s)+1]++
	}
	for i := range n {
		start[i+1] += start[i]
	}
	all, fill := make([]int64, len(samples)), slices.Clone(start[:n])
	for _, s := range samples {
		i := interval(s)
		all[fill[i]] = s.NS
		fill[i]++
	}
	var out []IntervalLatency
	for i := range n {
		g := all[start[i]:start[i+1]]
		if len(g) == 0 {
			continue
		}
		slices.Sort(g)
		out = append(out, IntervalLatency{I: i, N: len(g), P50: nsMS(stats.NearestRank(g, 0.5)), P99: nsMS(stats.NearestRank(g, 0.99)), Max: nsMS(g[len(g)-1])})
	}
	return out
}

// nsMS is ns in ms, rounded to the µs.
func nsMS(ns int64) float64 { return math.Round(float64(ns)/1e3) / 1e3 }
