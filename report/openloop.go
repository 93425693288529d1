package report

import (
	"fmt"
	"io"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
)

// OpenLoop is summary.json's open_loop: an open-loop run's acquire latency
// (LatAcquire, from each arrival's intended start to its grant) in its two
// parts, and whether it stayed bounded. A closed-loop tool would report
// only ServiceMS; QueuedMS is what it would omit.
type OpenLoop struct {
	// Grants counts the granted acquires whose invoke carried an intended
	// start (history.Intended).
	Grants int `json:"grants"`
	// QueuedMS is intended start → invoke: the wait for a free client.
	QueuedMS Latency `json:"queued_ms"`
	// ServiceMS is invoke → grant: the lock's own wait.
	ServiceMS Latency `json:"service_ms"`
	// EarlyP50MS and LateP50MS are the acquire p50 (from the intended
	// start) of the grants made in the run's first half and in its second
	// half: about equal while the lock keeps up with the offered rate;
	// when it does not, the queue grows through the run, each latency is
	// about its grant's time × (1 − capacity ÷ rate), and the late median
	// is about three times the early one. Medians, not p99s: one stall of
	// a loaded machine moves the p99 of a few hundred grants, not their
	// median.
	EarlyP50MS float64 `json:"early_p50_ms"`
	LateP50MS  float64 `json:"late_p50_ms"`
}

// AcquireStart is when grant g's acquisition started for its latency: the
// intended start its invoke carries (an open-loop run, docs/design.md §3),
// else its invoke. An intended start after the invoke (a hand-written
// history) is ignored: no acquisition is meant to start after it was
// asked for.
func AcquireStart(events []history.Event, g check.Op) int64 {
	if g.Invoke >= 0 && int(g.Invoke) < len(events) {
		if t, ok := history.ParseIntended(events[g.Invoke].Value); ok && t <= g.From {
			return t
		}
	}
	return g.From
}

// openLoopFigures are the open-loop figures of a run of length elapsed,
// nil when no grant's invoke carried an intended start.
func openLoopFigures(events []history.Event, grants []check.Op, elapsed time.Duration) *OpenLoop {
	queued, service, early, late := newHist(), newHist(), newHist(), newHist()
	n := 0
	for _, g := range grants {
		start := AcquireStart(events, g)
		if g.Invoke < 0 || start == g.From && !intended(events[g.Invoke]) {
			continue
		}
		n++
		queued.record(g.From - start)
		service.record(g.To - g.From)
		if g.To < int64(elapsed)/2 {
			early.record(g.To - start)
		} else {
			late.record(g.To - start)
		}
	}
	if n == 0 {
		return nil
	}
	return &OpenLoop{Grants: n, QueuedMS: compact(queued.latency()), ServiceMS: compact(service.latency()),
		EarlyP50MS: early.latency().P50, LateP50MS: late.latency().P50}
}

// intended reports whether an acquire invoke carries an intended start.
func intended(e history.Event) bool {
	_, ok := history.ParseIntended(e.Value)
	return ok
}

// compact is l without its CDF and samples: the parts of a latency the
// summary's acquire distribution already draws.
func compact(l Latency) Latency {
	l.CDF, l.Samples = nil, nil
	return l
}

// openLoopLine prints an open-loop run's acquire latency in its parts,
// under the latency table (nothing for a closed-loop run).
func openLoopLine(w io.Writer, o *OpenLoop) {
	if o == nil {
		return
	}
	fmt.Fprintf(w, "open loop: acquire counts from each arrival's intended start; queued (waiting for a free client) p50 %s p99 %s ms, service (call → grant) p50 %s p99 %s ms; median of the first and second half's grants %s, %s ms\n",
		ms(o.QueuedMS.P50), ms(o.QueuedMS.P99), ms(o.ServiceMS.P50), ms(o.ServiceMS.P99), ms(o.EarlyP50MS), ms(o.LateP50MS))
}
