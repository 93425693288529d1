package check

import (
	"fmt"
	"math"
	"slices"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// CheckFairness measures grant order against request order, per lock:
//
//   - a request is an acquire invoke (an acquire ok without one is a
//     request made at its grant); it waits until its outcome, or the
//     process's crash or next invoke, or the end of the history;
//   - a waiting request is bypassed each time the lock is granted to a
//     request made after it; inversions is the total of bypasses (pairs
//     granted out of request order, counting requests that gave up or were
//     never granted), max_bypass the most times one request was bypassed;
//   - wait is invoke → ok of granted requests;
//   - jain_index is Jain's fairness index of grants per process, over the
//     processes that requested any lock: 1 = even, 1/n = one took all.
//
// These are figures: try-locks with backoff are unfair by design and must
// not fail a run. The only violation is starvation: a process that requested
// a lock, from its first acquire invoke to the end of its last request (or
// of the history, if still waiting), for longer than Options.StarvationMin,
// and was never granted it while other processes were granted it at least
// Options.StarvationGrants times in that span. A process that crashed after
// its first request, or one of whose acquires had an unknown outcome (info),
// is never counted as starved.
//
// Metrics: requests, grants, inversions, max_bypass, jain_index, clients,
// mean_wait_ms, p50_wait_ms, p99_wait_ms, max_wait_ms, starved_clients.
// PerProcess: "grants".
func CheckFairness(events []history.Event, opts Options) Result {
	return prepare(events).fairness(opts.WithDefaults())
}

type fairSlot struct {
	requested  bool
	granted    bool
	unknown    bool
	inFlight   bool
	seq        int32 // of the request in flight
	reqTime    int64
	firstTime  int64
	firstLine  int32
	firstG     int32 // grants of the lock when it first requested
	lastEnd    int64
	lastLine   int32 // event that ended its last request, -1: the end
	lastG      int32 // grants of the lock when its last request ended
	lastCrashT int64
}

func (p *prepared) fairness(opts Options) Result {
	res := Result{Verdict: verdict.Pass}
	nl := len(p.locks)
	off := make([]int, nl+1)
	for l := range nl {
		off[l+1] = off[l] + int(p.nAcq[l]) + 1
	}
	tree := make(fenwick, off[nl])
	fen := func(l int32) fenwick { return tree[off[l]:off[l+1]] }
	seqNext := make([]int32, nl)
	grantsL := make([]int32, nl)
	slots := make([]fairSlot, len(p.slotProc))
	grants := make([]int, len(p.procs))
	requester := make([]bool, len(p.procs))
	crashT := make([]int64, len(p.procs)) // last crash, if crashed
	crashed := make([]bool, len(p.procs))
	nGrants := 0
	for _, g := range p.nGrant {
		nGrants += int(g)
	}
	waits := make([]int64, 0, nGrants)
	requests, inversions, maxBypass := 0, 0, 0
	endRequest := func(s int32, out Outcome, t int64, line int32) {
		st := &slots[s]
		if !st.inFlight {
			return
		}
		st.inFlight = false
		l := p.slotLock[s]
		bypass := int(grantsL[l]) - fen(l).prefix(int(st.seq))
		inversions += bypass
		maxBypass = max(maxBypass, bypass)
		switch out {
		case OutcomeOK:
			fen(l).add(int(st.seq))
			grantsL[l]++
			grants[p.slotProc[s]]++
			st.granted = true
			waits = append(waits, t-st.reqTime)
		case OutcomeInfo, OutcomeAborted:
			st.unknown = true
		}
		st.lastEnd, st.lastLine, st.lastG = t, line, grantsL[l]
	}
	startRequest := func(s int32, t int64, line int32) {
		st := &slots[s]
		l := p.slotLock[s]
		if !st.requested {
			st.requested = true
			st.firstTime, st.firstLine, st.firstG = t, line, grantsL[l]
		}
		requester[p.slotProc[s]] = true
		st.inFlight = true
		st.seq = seqNext[l]
		seqNext[l]++
		st.reqTime = t
		requests++
	}
	for k := range p.n() {
		i := p.at(k)
		op := p.op(i)
		if op != opAcquire && op != opRelease && op != opRead && op != opWrite && op != opCrash {
			continue
		}
		t := p.ev[i].Time
		if inv := p.ended[i]; inv >= 0 && p.op(int(inv)) == opAcquire {
			endRequest(p.slot[inv], p.outcome(int(inv)), t, int32(i))
		}
		if p.ev[i].Process < 0 {
			continue
		}
		switch {
		case op == opAcquire && p.ty(i) == tyInvoke:
			startRequest(p.slot[i], t, int32(i))
		case op == opAcquire && p.ty(i) == tyOK && p.ended[i] < 0:
			// a grant with no request on record: requested now
			startRequest(p.slot[i], t, int32(i))
			endRequest(p.slot[i], OutcomeOK, t, int32(i))
		case op == opCrash:
			crashT[p.procOf(i)], crashed[p.procOf(i)] = t, true
		}
	}
	for s := range slots {
		if slots[s].inFlight {
			endRequest(int32(s), OutcomePending, p.endTime, -1)
		}
	}

	// starvation
	lo := p.lockOrder()
	rank := make([]int, nl)
	for r, l := range lo {
		rank[l] = r
	}
	var starved []int32
	for s := range slots {
		st := &slots[s]
		if !st.requested || st.granted || st.unknown || (crashed[p.slotProc[s]] && crashT[p.slotProc[s]] >= st.firstTime) {
			continue
		}
		if opts.StarvationMin < 0 || st.lastEnd-st.firstTime <= int64(opts.StarvationMin) ||
			int(st.lastG-st.firstG) < opts.StarvationGrants {
			continue
		}
		starved = append(starved, int32(s))
	}
	slices.SortFunc(starved, func(a, b int32) int {
		if c := rank[p.slotLock[a]] - rank[p.slotLock[b]]; c != 0 {
			return c
		}
		return int(slots[a].firstLine - slots[b].firstLine)
	})
	for _, s := range starved {
		st := &slots[s]
		lock := p.locks[p.slotLock[s]]
		proc := p.procs[p.slotProc[s]]
		until := "the end of the history"
		if st.lastLine >= 0 {
			until = fmt.Sprintf("%s (line %d)", fmtNS(st.lastEnd), st.lastLine+1)
		}
		res.add(Violation{
			Check: verdict.Fairness,
			Lock:  lock,
			Message: fmt.Sprintf("lock %q: process %d starved: it requested the lock from %s (line %d) until %s, %s, and was never granted it, while other processes were granted it %d times",
				lock, proc, fmtNS(st.firstTime), st.firstLine+1, until, fmtNS(st.lastEnd-st.firstTime), st.lastG-st.firstG),
			Lines: lines(int(st.firstLine)+1, int(st.lastLine)+1),
		}, opts.MaxViolations)
	}
	res.finish()

	if requests == 0 {
		res.Note = "no acquire operations"
		return res
	}
	totalGrants, sum, sumSq, clients := 0, 0.0, 0.0, 0
	perProc := map[int]float64{}
	for x, g := range grants {
		if !requester[x] {
			continue
		}
		clients++
		totalGrants += g
		sum += float64(g)
		sumSq += float64(g) * float64(g)
		perProc[p.procs[x]] = float64(g)
	}
	res.PerProcess = map[string]map[int]float64{"grants": perProc}
	res.metric("requests", float64(requests))
	res.metric("grants", float64(totalGrants))
	res.metric("clients", float64(clients))
	res.metric("inversions", float64(inversions))
	res.metric("max_bypass", float64(maxBypass))
	if sumSq > 0 {
		res.metric("jain_index", sum*sum/(float64(clients)*sumSq))
	}
	res.metric("starved_clients", float64(res.Count))
	if len(waits) > 0 {
		total := 0.0
		for _, w := range waits {
			total += float64(w)
		}
		slices.Sort(waits)
		res.metric("mean_wait_ms", total/float64(len(waits))/1e6)
		res.metric("p50_wait_ms", ms(percentile(waits, 0.50)))
		res.metric("p99_wait_ms", ms(percentile(waits, 0.99)))
		res.metric("max_wait_ms", ms(waits[len(waits)-1]))
	}
	return res
}

// percentile of sorted xs by nearest rank.
func percentile(xs []int64, q float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	r := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(r, 0), len(xs)-1)]
}
