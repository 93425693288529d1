package check

import (
	"fmt"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// CheckHerd measures the thundering herd from the history: wakeups (every
// `wakeup` event: a waiter woken by a watch event) per handoff (grants − 1
// per lock), and RPCs (from the `rpcs` events, the last per process) per
// grant. A queue lock wakes about one waiter per handoff, a lock where
// every waiter watches one key about N−1.
//
// It is informational: the verdict is always pass, and not judged
// (Result.NotJudged) when the history has no wake-up at all.
//
// Metrics: grants, handoffs, wakeups, wakeups_per_handoff (when there is a
// handoff), rpcs, rpcs_per_acquire, rpcs_per_handoff (when there are rpcs
// events). PerProcess: "wakeups", "rpcs".
func CheckHerd(events []history.Event, opts Options) Result {
	return prepare(events).herd(opts.WithDefaults())
}

func (p *prepared) herd(Options) Result {
	res := Result{Verdict: verdict.Pass}
	grantsL := make([]int, len(p.locks))
	wakeups := make([]int, len(p.procs))
	rpcs := make([]int64, len(p.procs))
	hasRPCs := make([]bool, len(p.procs))
	totalWake := 0
	for k := range p.n() {
		i := p.at(k)
		switch p.op(i) {
		case opAcquire:
			if p.ty(i) == tyOK && p.ev[i].Process >= 0 {
				grantsL[p.lockOf(i)]++
			}
		case opWakeup:
			if p.ty(i) != tyInvoke && p.ty(i) != tyFail {
				wakeups[p.procOf(i)]++
				totalWake++
			}
		case opRPCs:
			if p.ty(i) == tyOK {
				if n, ok := history.ParseInt(p.ev[i].Value); ok {
					rpcs[p.procOf(i)] = n
					hasRPCs[p.procOf(i)] = true
				}
			}
		}
	}
	grants, handoffs := 0, 0
	for _, g := range grantsL {
		grants += g
		handoffs += max(g-1, 0)
	}
	res.metric("grants", float64(grants))
	res.metric("handoffs", float64(handoffs))
	res.metric("wakeups", float64(totalWake))
	var notes []string
	if totalWake == 0 {
		notes = append(notes, "no wakeup events")
	} else {
		res.PerProcess = map[string]map[int]float64{"wakeups": perProcess(p, wakeups, nil)}
	}
	if handoffs > 0 {
		res.metric("wakeups_per_handoff", float64(totalWake)/float64(handoffs))
	}
	totalRPCs, any := int64(0), false
	for x, n := range rpcs {
		if hasRPCs[x] {
			totalRPCs += n
			any = true
		}
	}
	if !any {
		notes = append(notes, fmt.Sprintf("no %s events", FRPCs))
	} else {
		rp := map[int]float64{}
		for x, n := range rpcs {
			if hasRPCs[x] {
				rp[p.procs[x]] = float64(n)
			}
		}
		if res.PerProcess == nil {
			res.PerProcess = map[string]map[int]float64{}
		}
		res.PerProcess["rpcs"] = rp
		res.metric("rpcs", float64(totalRPCs))
		if grants > 0 {
			res.metric("rpcs_per_acquire", float64(totalRPCs)/float64(grants))
		}
		if handoffs > 0 {
			res.metric("rpcs_per_handoff", float64(totalRPCs)/float64(handoffs))
		}
	}
	res.Note = joinNotes(notes...)
	// Without a wake-up there is no herd to measure (a polling lock, or
	// a strategy with no wake-up hook): not judged, not 0 per handoff.
	res.NotJudged = totalWake == 0
	return res
}

func perProcess(p *prepared, counts []int, keep []bool) map[int]float64 {
	out := map[int]float64{}
	for x, n := range counts {
		if n > 0 && (keep == nil || keep[x]) && p.procs[x] >= 0 {
			out[p.procs[x]] = float64(n)
		}
	}
	return out
}
