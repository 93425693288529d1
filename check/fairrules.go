package check

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/lockbench/lockbench/stats"
	"github.com/lockbench/lockbench/verdict"
)

// judge weighs slot s's request in flight as it ends with out at t (before
// the walk counts it as a grant): a FIFO bypass of it, and its wait.
func (w *fairWalk) judge(s int32, out Outcome, t int64, line int32) {
	st := &w.slots[s]
	l := w.p.slotLock[s]
	others := w.grantsL[l] - st.reqG
	// A client's first request may set up its session (a lease grant)
	// before it takes its place: its bypasses are not judged.
	if out == OutcomeOK && w.maxSeq[l] > st.seq && st.reqLine != st.firstLine {
		w.judgeBypass(s, t, line)
	}
	if out != OutcomeInfo && out != OutcomeAborted && int(others) >= w.opts.StarvationGrants {
		w.longs = append(w.longs, longWait{slot: s, fromLine: st.reqLine, toLine: line, others: others, out: out})
	}
}

// judgeBypass counts the later requests granted before slot s's, which
// was granted at t: those invoked more than the slack after it break a
// FIFO promise unless a fault explains it.
func (w *fairWalk) judgeBypass(s int32, t int64, line int32) {
	st := &w.slots[s]
	l := w.p.slotLock[s]
	if w.faulted(s, st.reqTime, t) {
		return
	}
	base := w.off[l]
	w.maxLead = max(w.maxLead, w.reqT[base+int(w.maxSeq[l])]-st.reqTime)
	if w.opts.Order != verdict.FIFO {
		return
	}
	lo, hi := int(st.seq)+1, int(w.seqNext[l])
	limit := st.reqTime + w.slack
	s0 := lo + sort.Search(hi-lo, func(k int) bool { return w.reqT[base+lo+k] > limit })
	if s0 >= hi {
		return
	}
	if n := int(w.grantsL[l]) - w.fen(l).prefix(s0-1); n > 0 {
		w.bypasses = append(w.bypasses, bypassed{slot: s, from: st.reqTime, to: t, fromLine: st.reqLine, toLine: line, count: n, first: int32(s0)})
	}
}

// faulted reports whether a fault on slot s's process, or on the members,
// overlaps [from, to] (each fault from its start to its end + the
// recovery bound, as the lease check weighs it).
func (w *fairWalk) faulted(s int32, from, to int64) bool {
	b := w.opts.LivenessBound
	if b < 0 {
		b = DefaultLivenessBound
	}
	ws := w.p.leaseExcused(w.p.procs[w.p.slotProc[s]], int64(b+w.opts.RecoverySlack))
	j := sort.Search(len(ws), func(k int) bool { return ws[k].to > from })
	return j < len(ws) && ws[j].from <= to
}

// judgeBypasses adds a violation per bypassed request, by lock name then
// request line, and returns how many there were.
func (w *fairWalk) judgeBypasses(res *Result) int {
	rank := w.lockRank()
	slices.SortFunc(w.bypasses, func(a, b bypassed) int {
		return cmp.Or(cmp.Compare(rank[w.p.slotLock[a.slot]], rank[w.p.slotLock[b.slot]]), cmp.Compare(a.fromLine, b.fromLine))
	})
	for _, b := range w.bypasses {
		if len(res.Violations) >= w.opts.MaxViolations {
			res.Count++ // counted, not described
			continue
		}
		res.add(w.bypassViolation(b), w.opts.MaxViolations)
	}
	return len(w.bypasses)
}

func (w *fairWalk) bypassViolation(b bypassed) Violation {
	l := w.p.slotLock[b.slot]
	lock := w.p.locks[l]
	msg := fmt.Sprintf("lock %q: process %d asked at %s (line %d) and was granted at %s (line %d), after %s invoked more than %s after it",
		lock, w.p.procs[w.p.slotProc[b.slot]], fmtNS(b.from), b.fromLine+1, fmtNS(b.to), b.toLine+1,
		count(b.count, "request", "requests"), time.Duration(w.slack))
	ls := []int{int(b.fromLine) + 1, int(b.toLine) + 1}
	// The overtaking request first in request order, among the grants
	// made while b waited.
	var first *grantRec
	gs := w.grantList[l]
	for k := len(gs) - 1; k >= 0 && gs[k].t >= b.from; k-- {
		if gs[k].seq >= b.first && (first == nil || gs[k].seq < first.seq) {
			first = &gs[k]
		}
	}
	if first != nil {
		msg += fmt.Sprintf(", the first process %d's, asked at %s (line %d) and granted at %s (line %d)",
			w.p.procs[first.proc], fmtNS(first.from), first.inv+1, fmtNS(first.t), first.line+1)
		ls = append(ls, int(first.inv)+1, int(first.line)+1)
	}
	msg += "; the strategy promises FIFO, and no fault on that process or on the members explains it"
	return Violation{Check: verdict.Fairness, Lock: lock, Message: msg, Lines: lines(ls...)}
}

// lockClients is, per lock, how many processes requested it.
func (w *fairWalk) lockClients() []int {
	clients := make([]int, len(w.p.locks))
	for s := range w.slots {
		if w.slots[s].requested {
			clients[w.p.slotLock[s]]++
		}
	}
	return clients
}

// minOthers is, per lock, how many grants to others a wait must span to
// be judged long or starved: Options.StarvationGrants for a FIFO
// strategy; for one that promises no order, at least ChanceRounds × the
// other clients, since a lock that picks among its waiters at random
// leaves one of them out of that many grants in a row with a chance of
// about e^-ChanceRounds (under 0.1%): luck, not a defect.
func (w *fairWalk) minOthers(clients []int) []int {
	out := make([]int, len(clients))
	for l, c := range clients {
		out[l] = w.opts.StarvationGrants
		if w.opts.Order != verdict.FIFO {
			out[l] = max(out[l], ChanceRounds*(c-1))
		}
	}
	return out
}

// longWaitBounds are, per lock, max(MinLongWait, LongWaitCycles × its
// clients × its median time between grants), and the parts for messages.
func (w *fairWalk) longWaitBounds(clients []int) (bound, gap []int64) {
	nl := len(w.p.locks)
	bound, gap = make([]int64, nl), make([]int64, nl)
	for l, gs := range w.grantList {
		gaps := make([]int64, 0, max(len(gs)-1, 0))
		for k := 1; k < len(gs); k++ {
			gaps = append(gaps, gs[k].t-gs[k-1].t)
		}
		slices.Sort(gaps)
		gap[l] = stats.NearestRank(gaps, 0.5)
		bound[l] = max(int64(MinLongWait), LongWaitCycles*int64(clients[l])*gap[l])
	}
	return bound, gap
}

// judgeLongWaits adds a violation per request that waited past its lock's
// bound with no fault to explain it (a starved process's requests are
// reported as starvation), sets the figures, and returns the count.
func (w *fairWalk) judgeLongWaits(res *Result, starved []int32) int {
	clients := w.lockClients()
	bound, gap := w.longWaitBounds(clients)
	others := w.minOthers(clients)
	// The long waits over their bound are kept in place and only they are
	// sorted for the report: under contention nearly every request is a
	// candidate (2M of them in a 10M-event history), few are over.
	over, ratio := w.longs[:0], 0.0
	for _, lw := range w.longs {
		l := w.p.slotLock[lw.slot]
		from, to := w.span(lw)
		if int(lw.others) < others[l] || w.faulted(lw.slot, from, to) {
			continue
		}
		ratio = max(ratio, float64(to-from)/float64(bound[l]))
		if to-from <= bound[l] || slices.Contains(starved, lw.slot) {
			continue
		}
		over = append(over, lw)
	}
	w.longs = over
	rank := w.lockRank()
	slices.SortFunc(over, func(a, b longWait) int {
		return cmp.Or(cmp.Compare(rank[w.p.slotLock[a.slot]], rank[w.p.slotLock[b.slot]]), cmp.Compare(a.fromLine, b.fromLine))
	})
	for _, lw := range over {
		l := w.p.slotLock[lw.slot]
		res.add(w.longWaitViolation(lw, bound[l], gap[l], clients[l]), w.opts.MaxViolations)
	}
	res.metric("wait_bound_ratio", ratio)
	res.metric("long_wait_bound_ms", ms(slices.Max(append(bound, 0))))
	return len(over)
}

func (w *fairWalk) longWaitViolation(lw longWait, bound, gap int64, clients int) Violation {
	lock := w.p.locks[w.p.slotLock[lw.slot]]
	from, to := w.span(lw)
	end := fmt.Sprintf("%s (line %d)", fmtNS(to), lw.toLine+1)
	switch {
	case lw.toLine < 0:
		end = "the end of the history, still waiting"
	case lw.out == OutcomeOK:
		end += ", when it was granted"
	default:
		end += ", when it gave up"
	}
	return Violation{
		Check: verdict.Fairness,
		Lock:  lock,
		Message: fmt.Sprintf("lock %q: process %d waited %s, from %s (line %d) to %s, while other processes were granted it %d times; the long-wait bound is %s (max(%s, %d × %d clients × the median %s between grants))",
			lock, w.p.procs[w.p.slotProc[lw.slot]], time.Duration(to-from), fmtNS(from), lw.fromLine+1, end, lw.others,
			time.Duration(bound), MinLongWait, LongWaitCycles, clients, time.Duration(gap)),
		Lines: lines(int(lw.fromLine)+1, int(lw.toLine)+1),
	}
}

// lockRank is each lock's position in name order.
func (w *fairWalk) lockRank() []int {
	rank := make([]int, len(w.p.locks))
	for r, l := range w.p.lockOrder() {
		rank[l] = r
	}
	return rank
}
