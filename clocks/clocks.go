// Package clocks aligns the clocks of workers that drove one run from
// several machines (lockbench run --worker I/N), through etcd itself.
//
// Each worker commits small probe writes and records, on its own clock,
// when it sent each one and when the answer came back. etcd's revisions
// are a total order of commits consistent with real time (etcd is
// linearizable): a write committed at a lower revision took effect before
// one at a higher revision. A probe took effect somewhere between its
// send and its receive, so for probe a of worker A at a lower revision
// than probe b of worker B,
//
//	sentₐ + θ_A ≤ effect(a) < effect(b) ≤ received_b + θ_B
//
// where θ_W is what must be added to W's clock to read the reference
// worker's: θ_A − θ_B < received_b − sentₐ. Every such pair bounds one
// offset difference from above; the tightest bounds over all pairs and
// all chains of workers (a system of difference constraints, solved by
// shortest paths) give each worker's offset to the reference as an
// interval, NTP-like with a linearizable register for the reference
// clock. Its midpoint is the estimate and its half-width the uncertainty
// a checker must allow between two workers' events.
//
// A clock's rate drifts (tens of ppm: ~3 ms over a minute); the intervals
// assume a constant offset over the probes, so a long run should probe
// throughout and a drift larger than the probes' round trips shows as
// inconsistent bounds, which Align refuses rather than hides.
package clocks

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Probe is one probe write of a worker: when it was sent and when its
// answer arrived, in nanoseconds on the worker's clock (its history's
// time base), and the revision etcd committed it at.
type Probe struct {
	Sent     int64 `json:"sent_ns"`
	Received int64 `json:"received_ns"`
	Revision int64 `json:"revision"`
}

// Offset is a worker's clock against the reference worker's (the first,
// workers[0], worker 1 in messages): a time t on the worker's clock is
// t + Offset on the reference's, give or take Uncertainty; the true
// offset lies in [Lo, Hi].
type Offset struct {
	Offset, Uncertainty time.Duration
	Lo, Hi              time.Duration
}

// ErrNoOverlap is returned when some worker's probes never interleave,
// directly or through other workers, with the reference's on one side:
// its offset is unbounded there.
var ErrNoOverlap = errors.New("probes do not interleave")

// Align estimates each worker's offset to the first from their probes
// (workers[w] in any order). The first's offset is 0 with no uncertainty.
// It fails when a worker's offset is unbounded on a side (ErrNoOverlap),
// when the bounds contradict each other (a clock that jumped or drifted
// more than the probes' round trips, or a probe recorded wrong), or on a
// probe received before it was sent.
func Align(workers [][]Probe) ([]Offset, error) {
	n := len(workers)
	if n == 0 {
		return nil, nil
	}
	for w, ps := range workers {
		for _, p := range ps {
			if p.Received < p.Sent {
				return nil, fmt.Errorf("worker %d: probe at revision %d received (%d) before it was sent (%d)", w+1, p.Revision, p.Received, p.Sent)
			}
		}
	}
	// up[a][b] bounds θ_a − θ_b from above (strictly; the bound is
	// reported as reached, which is what a checker's widening needs).
	up := make([][]float64, n)
	for a := range up {
		up[a] = make([]float64, n)
		for b := range up[a] {
			up[a][b] = math.Inf(1)
		}
		up[a][a] = 0
	}
	for a := range n {
		for b := range n {
			if a != b {
				up[a][b] = pairBound(workers[a], workers[b])
			}
		}
	}
	// Tightest bounds over chains of workers (Floyd–Warshall).
	for k := range n {
		for a := range n {
			for b := range n {
				if s := up[a][k] + up[k][b]; s < up[a][b] {
					up[a][b] = s
				}
			}
		}
	}
	out := make([]Offset, n)
	for w := 1; w < n; w++ {
		if up[w][w] < 0 {
			return nil, fmt.Errorf("worker %d: its clock's bounds contradict each other by %s (a clock that jumped, or drifted more than the probes' round trips)", w+1, time.Duration(-up[w][w]))
		}
		hi, lo := up[w][0], -up[0][w]
		if math.IsInf(hi, 1) || math.IsInf(lo, -1) {
			return nil, fmt.Errorf("worker %d against worker 1: %w (each needs probes committed both before and after some of the other's)", w+1, ErrNoOverlap)
		}
		if lo > hi {
			return nil, fmt.Errorf("worker %d: offset at least %s and at most %s (a clock that jumped, or drifted more than the probes' round trips)", w+1, time.Duration(lo), time.Duration(hi))
		}
		out[w] = Offset{Offset: time.Duration((lo + hi) / 2), Uncertainty: time.Duration((hi - lo) / 2), Lo: time.Duration(lo), Hi: time.Duration(hi)}
	}
	return out, nil
}

// pairBound is the tightest upper bound the probes give on θ_a − θ_b:
// the least received_b − sentₐ over probes a of A committed before
// probes b of B. For each b it is enough to take A's latest send among
// the probes committed before b.
func pairBound(as, bs []Probe) float64 {
	byRev := func(x, y Probe) int { return cmp.Compare(x.Revision, y.Revision) }
	as, bs = slices.Clone(as), slices.Clone(bs)
	slices.SortFunc(as, byRev)
	slices.SortFunc(bs, byRev)
	bound, latest := math.Inf(1), math.Inf(-1)
	i := 0
	for _, b := range bs {
		for ; i < len(as) && as[i].Revision < b.Revision; i++ {
			latest = max(latest, float64(as[i].Sent))
		}
		if !math.IsInf(latest, -1) {
			bound = min(bound, float64(b.Received)-latest)
		}
	}
	return bound
}
