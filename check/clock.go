package check

import (
	"encoding/json"

	"github.com/lockbench/lockbench/history"
)

// A history merged from several workers' (one run driven from several
// machines) carries, in FClock events, each worker's processes and the
// uncertainty of the offset its times were shifted by. Two processes of
// different workers may then be misplaced against each other by up to
// the sum of their uncertainties, so an exclusion overlap no longer than
// that is not certain: it is counted apart and makes the verdict unknown,
// never a fail. Within one worker (one clock) nothing changes.

// clocks are the processes' clocks, by process index, from the history's
// FClock events: which worker's clock each process's times are on, and
// that clock's uncertainty in nanoseconds.
type clocks struct {
	worker      []int32 // index of the FClock event; -1: none
	uncertainty []int64
	index       map[int]int32 // process index by process id
}

// clockUncertainty is the history's clocks (readClocks), read once.
func (p *prepared) clockUncertainty() *clocks {
	p.clkOnce.Do(func() { p.clk = p.readClocks() })
	return p.clk
}

// readClocks reads the history's FClock events; nil when it has none (the
// history is one clock's). A malformed value is ignored, as every check
// ignores what it cannot read.
func (p *prepared) readClocks() *clocks {
	var out *clocks
	for i := range p.ev {
		if p.op(i) != opClock {
			continue
		}
		var v history.ClockValue
		if json.Unmarshal(p.ev[i].Value, &v) != nil || v.UncertaintyNS < 0 {
			continue
		}
		if out == nil {
			out = &clocks{worker: make([]int32, len(p.procs)), uncertainty: make([]int64, len(p.procs)),
				index: make(map[int]int32, len(p.procs))}
			for pi, proc := range p.procs {
				out.index[proc] = int32(pi)
				out.worker[pi] = -1
			}
		}
		for _, proc := range v.Processes {
			if pi, ok := out.index[proc]; ok {
				out.worker[pi], out.uncertainty[pi] = int32(i), v.UncertaintyNS
			}
		}
	}
	return out
}

// within reports whether a's and b's overlap (b starting inside a) is no
// longer than their clocks' uncertainties together, a and b being on
// different workers' clocks.
// pa and pb are their process indexes.
func (c *clocks) within(a, b *Hold, pa, pb int32) bool {
	if c == nil || c.worker[pa] == c.worker[pb] {
		return false
	}
	overlap := min(endKey(a), endKey(b)) - b.From
	return overlap <= c.uncertainty[pa]+c.uncertainty[pb]
}

// near reports whether two events of processes a and b (ids), apart ns
// apart, are on different workers' clocks and no further apart than
// their uncertainties together: which came first is not certain.
func (c *clocks) near(a, b int, apart int64) bool {
	if c == nil {
		return false
	}
	pa, oka := c.index[a]
	pb, okb := c.index[b]
	if !oka || !okb || c.worker[pa] == c.worker[pb] {
		return false
	}
	return max(apart, -apart) <= c.uncertainty[pa]+c.uncertainty[pb]
}

// of is process proc's clock's uncertainty, 0 when the history is one
// clock's or proc is on none.
func (c *clocks) of(proc int) int64 {
	if c == nil {
		return 0
	}
	if pi, ok := c.index[proc]; ok {
		return c.uncertainty[pi]
	}
	return 0
}

// releasedBefore reports whether the history's revisions show that a's
// hold ended before b's began, whatever the clocks say: a's release sent
// a write after its invoke (a's end) that created revision r, and b's
// connection had seen a revision ≥ r before b's grant was recorded, so r
// was committed between the two (history.Event.Revision). False when
// either revision is missing, or a's hold did not end by a release.
func (p *prepared) releasedBefore(a, b *Holder) bool {
	inv, grant := a.ToLine-1, b.FromLine-1
	if inv < 0 || grant < 0 || p.op(inv) != opRelease || p.ty(inv) != tyInvoke {
		return false
	}
	done := p.pair[inv]
	if done < 0 || p.op(int(done)) != opRelease || p.ty(int(done)) == tyInvoke {
		return false
	}
	wrote, seen := p.ev[done].Revision, p.ev[grant].Revision
	return wrote > 0 && seen >= wrote
}

// holdGranted is the hold the grant at event grant began, nil when there
// is none (a re-acquire without release keeps the first hold). Called
// only for the few grants clocks cannot order: a scan.
func (p *prepared) holdGranted(grant int32) *Holder {
	holds := p.holds()
	for i := range holds {
		if holds[i].FromLine == int(grant)+1 {
			return &holds[i].Holder
		}
	}
	return nil
}
