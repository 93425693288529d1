package harness

import (
	"fmt"
	"slices"
	"time"

	"github.com/lockbench/lockbench/report"
)

// The scheduler probe: a goroutine of the harness's own process that asks
// to wake every probeInterval and records how late it runs. Its lag is
// the harness's own queueing: every client, the runner's proxies and an
// embedded cluster's members are goroutines of this process and wait for
// a CPU as long as it does. A probe that runs hundreds of milliseconds
// late means requests time out (the 1 s per-request deadline) and leases
// go unrefreshed by the harness's doing, not the lock's.
const probeInterval = 10 * time.Millisecond

// The saturation criterion (docs/design.md §9): a run is saturated when
// at least 1% of the probe's wake-ups were saturatedLag or more late
// (p99 ≥ saturatedLag), or one was saturatedStall or more late. 100 ms is
// ten probe intervals, a fifth of the embedded cluster's election timeout
// and a tenth of the per-request deadline; 1 s is that deadline: one
// stall that long can make any request unanswered by itself.
const (
	saturatedLag   = 100 * time.Millisecond
	saturatedStall = time.Second
)

// schedProbe is a running scheduler probe.
type schedProbe struct {
	stopc chan struct{}
	done  chan []time.Duration
}

// startSchedProbe starts the probe; stop ends it and judges what it saw.
func startSchedProbe() *schedProbe {
	p := &schedProbe{stopc: make(chan struct{}), done: make(chan []time.Duration, 1)}
	go func() {
		var lags []time.Duration
		t := time.NewTimer(probeInterval)
		defer t.Stop()
		due := time.Now().Add(probeInterval)
		for {
			select {
			case <-p.stopc:
				p.done <- lags
				return
			case <-t.C:
				// Late by as long as the goroutine waited for a CPU after
				// its timer was due.
				lags = append(lags, max(time.Since(due), 0))
				due = time.Now().Add(probeInterval)
				t.Reset(probeInterval)
			}
		}
	}()
	return p
}

// stop ends the probe and returns its figures and verdict.
func (p *schedProbe) stop() *report.Saturation {
	close(p.stopc)
	return judgeSaturation(<-p.done, probeInterval)
}

// judgeSaturation applies the criterion to the probe's lags (each
// wake-up's lateness), taken every interval.
func judgeSaturation(lags []time.Duration, interval time.Duration) *report.Saturation {
	s := &report.Saturation{IntervalMS: ms(interval), Samples: len(lags),
		LagThresholdMS: ms(saturatedLag), StallThresholdMS: ms(saturatedStall)}
	if len(lags) == 0 {
		return s
	}
	sorted := slices.Sorted(slices.Values(lags))
	q := func(p float64) time.Duration { return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))] }
	p99, top := q(0.99), sorted[len(sorted)-1]
	s.LagP50MS, s.LagP99MS, s.LagMaxMS = ms(q(0.50)), ms(p99), ms(top)
	switch {
	case p99 >= saturatedLag:
		s.Saturated = true
		s.Reason = fmt.Sprintf("the harness's scheduler probe ran ≥%s late on %.1f%% of its %d wake-ups (p99 %s, max %s)",
			saturatedLag, 100*lateShare(sorted, saturatedLag), len(lags), p99.Round(time.Millisecond), top.Round(time.Millisecond))
	case top >= saturatedStall:
		s.Saturated = true
		s.Reason = fmt.Sprintf("the harness's scheduler probe stalled %s (≥%s, the per-request deadline) in one of its %d wake-ups",
			top.Round(time.Millisecond), saturatedStall, len(lags))
	}
	return s
}

// lateShare is the share of sorted lags at least d.
func lateShare(sorted []time.Duration, d time.Duration) float64 {
	i, _ := slices.BinarySearch(sorted, d)
	return float64(len(sorted)-i) / float64(len(sorted))
}
