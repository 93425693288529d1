package check

import (
	"fmt"
	"slices"

	"github.com/lockbench/lockbench/internal/hugepage"
	"github.com/lockbench/lockbench/stats"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// CheckFairness measures grant order against request order, per lock, and
// judges it against what the strategy promises (Options.Order):
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
// Violations, each one per request:
//
//   - bypass (only when the strategy promises verdict.FIFO): a request
//     that was granted after a later one, invoked more than the bypass
//     slack after it (the time its first write may take to commit and give
//     it its place: Options.BypassSlack, by default max(MinBypassSlack,
//     TailReleases × the longest release latency)), was granted — unless a fault on its
//     process or on the members (its window as the lease check weighs it:
//     from the fault's start to its end + the recovery bound) overlaps
//     its wait. A request that ended otherwise (failed, cancelled, of
//     unknown outcome) is never judged: it may have left the queue before
//     its outcome said so; nor is a client's first request of a lock,
//     which may set up its session (a lease grant) before it takes its
//     place.
//   - long wait (every strategy): a request that waited longer than
//     max(MinLongWait, LongWaitCycles × the lock's clients × its median
//     time between grants), granted, given up or still waiting at the
//     end, while other processes were granted the lock at least
//     Options.StarvationGrants times (a strategy that promises no order:
//     ChanceRounds × the other clients, if more) — unless its outcome is
//     unknown, its
//     process crashed, or a fault overlaps it as above. A fair lock serves
//     a waiter within about one round of the other clients; a try-lock
//     with backoff may take many rounds, not fifty.
//   - starvation (every strategy): a process that requested a lock, from
//     its first acquire invoke to the end of its last request (or of the
//     history, if still waiting), for longer than Options.StarvationMin,
//     and was never granted it while other processes were granted it at
//     least that many times in that span. A process that
//     crashed after its first request, or one of whose acquires had an
//     unknown outcome (info), is never counted as starved (nor, then, as
//     waiting long).
//
// Metrics: requests, grants, inversions, max_bypass, jain_index, clients,
// mean_wait_ms, p50_wait_ms, p99_wait_ms, max_wait_ms, starved_clients,
// fifo_bypasses and long_waits (the violations of each rule),
// bypass_slack_ms,
// long_wait_bound_ms (the largest lock's bound), wait_bound_ratio (the
// longest judged wait over its bound: how close the lock came),
// max_bypass_lead_ms (of granted requests no fault excuses, the most by
// which a request that bypassed one was invoked after it; compare with
// the bypass slack, which FIFO strategies are held to).
// PerProcess: "grants".
func CheckFairness(events []history.Event, opts Options) Result {
	return prepare(events).fairness(opts.WithDefaults())
}

// fairSlot is one (process, lock) pair's requests.
type fairSlot struct {
	requested bool
	granted   bool
	unknown   bool
	inFlight  bool
	seq       int32 // of the request in flight
	reqTime   int64
	firstTime int64
	firstLine int32
	firstG    int32 // grants of the lock when it first requested
	lastEnd   int64
	lastLine  int32 // event that ended its last request, -1: the end
	lastG     int32 // grants of the lock when its last request ended
	reqG      int32 // grants of the lock when the request in flight began
	reqLine   int32
}

// longWait is a request that waited long enough, with enough grants to
// others, to be judged once its lock's bound is known.
// Its times are its lines' (span): a 10M-event history has 2M of them.
type longWait struct {
	slot     int32
	fromLine int32
	toLine   int32 // -1: the end of the history
	others   int32
	out      Outcome
}

// span is when lw waited: from its request's invoke to its outcome's
// event, or the end of the history.
func (w *fairWalk) span(lw longWait) (from, to int64) {
	from, to = w.p.ev[lw.fromLine].Time, w.p.endTime
	if lw.toLine >= 0 {
		to = w.p.ev[lw.toLine].Time
	}
	return from, to
}

// bypassed is a granted request that later requests, invoked more than
// the slack after it, overtook.
type bypassed struct {
	slot     int32
	from, to int64
	fromLine int32
	toLine   int32
	count    int
	first    int32 // the overtaking request earliest in request order: its seq
}

// grantRec is a grant in a lock's order, for messages and the time
// between grants.
type grantRec struct {
	seq  int32
	t    int64
	line int32
	proc int32
	from int64 // its request's invoke
	inv  int32 // its request's line
}

// fairWalk is the state of the fairness pass: per lock, a Fenwick tree
// over request sequence numbers marks the granted ones, so that a request
// learns in O(log n) how many later requests were granted before it ended.
type fairWalk struct {
	p         *prepared
	opts      Options
	off       []int // per lock: its part of tree and reqT
	tree      fenwick
	reqT      []int64 // by lock and sequence number: the request's invoke time
	reqLine   []int32
	maxSeq    []int32      // per lock: the highest granted sequence number, -1
	grantList [][]grantRec // per lock, in grant order
	longs     []longWait
	bypasses  []bypassed
	maxLead   int64
	slack     int64   // the bypass slack (Options.BypassSlack, or derived)
	seqNext   []int32 // per lock: the next request's sequence number
	grantsL   []int32 // per lock: grants so far
	slots     []fairSlot
	grants    []int  // per process
	requester []bool // per process
	crashT    []int64
	crashed   []bool
	waits     []int64
	requests  int
	inversion int
	maxBypass int
}

func newFairWalk(p *prepared, opts Options) *fairWalk {
	nl, np := len(p.locks), len(p.procs)
	w := &fairWalk{p: p, opts: opts, off: make([]int, nl+1), seqNext: make([]int32, nl), grantsL: make([]int32, nl),
		maxSeq: make([]int32, nl), grantList: make([][]grantRec, nl),
		slots: make([]fairSlot, len(p.slotProc)), grants: make([]int, np), requester: make([]bool, np),
		crashT: make([]int64, np), crashed: make([]bool, np)}
	nGrants, nAcq := 0, 0
	for l := range nl {
		w.off[l+1] = w.off[l] + int(p.nAcq[l]) + 1
		nGrants += int(p.nGrant[l])
		nAcq += int(p.nAcq[l])
		w.grantList[l] = make([]grantRec, 0, p.nGrant[l])
	}
	// Under contention nearly every request spans enough grants to be
	// weighed as a long wait: made at its size, not grown by appends
	// (10M events: 1.1 s of copying).
	w.longs = hugepage.Make[longWait](0, nAcq)
	w.tree = fenwick(hugepage.Make[int32](w.off[nl], w.off[nl]))
	w.reqT, w.reqLine = hugepage.Make[int64](w.off[nl], w.off[nl]), hugepage.Make[int32](w.off[nl], w.off[nl])
	for l := range w.maxSeq {
		w.maxSeq[l] = -1
	}
	w.waits = hugepage.Make[int64](0, nGrants)
	w.slack = int64(opts.BypassSlack)
	if w.slack <= 0 {
		_, tail := p.releaseLatency()
		w.slack = max(int64(MinBypassSlack), TailReleases*tail)
	}
	return w
}

func (w *fairWalk) fen(l int32) fenwick { return w.tree[w.off[l]:w.off[l+1]] }

// startRequest records slot s's request made at t.
func (w *fairWalk) startRequest(s int32, t int64, line int32) {
	st := &w.slots[s]
	l := w.p.slotLock[s]
	if !st.requested {
		st.requested = true
		st.firstTime, st.firstLine, st.firstG = t, line, w.grantsL[l]
	}
	w.requester[w.p.slotProc[s]] = true
	st.inFlight = true
	st.seq = w.seqNext[l]
	w.reqT[w.off[l]+int(st.seq)], w.reqLine[w.off[l]+int(st.seq)] = t, line
	w.seqNext[l]++
	st.reqTime, st.reqG, st.reqLine = t, w.grantsL[l], line
	w.requests++
}

// endRequest ends slot s's request in flight with outcome out, counting
// the later requests granted before it.
func (w *fairWalk) endRequest(s int32, out Outcome, t int64, line int32) {
	st := &w.slots[s]
	if !st.inFlight {
		return
	}
	st.inFlight = false
	l := w.p.slotLock[s]
	bypass := int(w.grantsL[l]) - w.fen(l).prefix(int(st.seq))
	w.inversion += bypass
	w.maxBypass = max(w.maxBypass, bypass)
	w.judge(s, out, t, line)
	switch out {
	case OutcomeOK:
		w.fen(l).add(int(st.seq))
		w.maxSeq[l] = max(w.maxSeq[l], st.seq)
		w.grantList[l] = append(w.grantList[l], grantRec{seq: st.seq, t: t, line: line, proc: w.p.slotProc[s], from: st.reqTime, inv: st.reqLine})
		w.grantsL[l]++
		w.grants[w.p.slotProc[s]]++
		st.granted = true
		w.waits = append(w.waits, t-st.reqTime)
	case OutcomeInfo, OutcomeAborted:
		st.unknown = true
	}
	st.lastEnd, st.lastLine, st.lastG = t, line, w.grantsL[l]
}

// walk takes every request in time order, as paired by prepare.
func (w *fairWalk) walk() {
	p := w.p
	for k := range p.n() {
		i := p.at(k)
		op := p.op(i)
		if op != opAcquire && op != opRelease && op != opRead && op != opWrite && op != opCrash {
			continue
		}
		t := p.ev[i].Time
		if inv := p.ended[i]; inv >= 0 && p.op(int(inv)) == opAcquire {
			w.endRequest(p.slot[inv], p.outcome(int(inv)), t, int32(i))
		}
		if p.ev[i].Process < 0 {
			continue
		}
		switch {
		case op == opAcquire && p.ty(i) == tyInvoke:
			w.startRequest(p.slot[i], t, int32(i))
		case op == opAcquire && p.ty(i) == tyOK && p.ended[i] < 0:
			// a grant with no request on record: requested now
			w.startRequest(p.slot[i], t, int32(i))
			w.endRequest(p.slot[i], OutcomeOK, t, int32(i))
		case op == opCrash:
			w.crashT[p.procOf(i)], w.crashed[p.procOf(i)] = t, true
		}
	}
	for s := range w.slots {
		if w.slots[s].inFlight {
			w.endRequest(int32(s), OutcomePending, p.endTime, -1)
		}
	}
}

func (p *prepared) fairness(opts Options) Result {
	res := Result{Verdict: verdict.Pass}
	w := newFairWalk(p, opts)
	w.walk()
	starved := w.starved(opts)
	for _, s := range starved {
		res.add(w.starvation(s), opts.MaxViolations)
	}
	nb := w.judgeBypasses(&res)
	nl := w.judgeLongWaits(&res, starved)
	res.finish()
	if w.requests == 0 {
		res.nothingToJudge("no acquire operations")
		return res
	}
	w.grantFigures(&res)
	res.metric("requests", float64(w.requests))
	res.metric("inversions", float64(w.inversion))
	res.metric("max_bypass", float64(w.maxBypass))
	res.metric("starved_clients", float64(len(starved)))
	res.metric("fifo_bypasses", float64(nb))
	res.metric("bypass_slack_ms", ms(w.slack))
	res.metric("long_waits", float64(nl))
	if w.maxLead > 0 {
		res.metric("max_bypass_lead_ms", ms(w.maxLead))
	}
	waitFigures(&res, w.waits)
	return res
}

// starved lists the slots that starved, by lock name then first request.
func (w *fairWalk) starved(opts Options) []int32 {
	p := w.p
	rank := w.lockRank()
	others := w.minOthers(w.lockClients())
	var out []int32
	for s := range w.slots {
		st := &w.slots[s]
		pi := p.slotProc[s]
		if !st.requested || st.granted || st.unknown || (w.crashed[pi] && w.crashT[pi] >= st.firstTime) {
			continue
		}
		if opts.StarvationMin < 0 || st.lastEnd-st.firstTime <= int64(opts.StarvationMin) ||
			int(st.lastG-st.firstG) < others[p.slotLock[s]] {
			continue
		}
		out = append(out, int32(s))
	}
	slices.SortFunc(out, func(a, b int32) int {
		if c := rank[p.slotLock[a]] - rank[p.slotLock[b]]; c != 0 {
			return c
		}
		return int(w.slots[a].firstLine - w.slots[b].firstLine)
	})
	return out
}

// starvation explains slot s's starvation.
func (w *fairWalk) starvation(s int32) Violation {
	st := &w.slots[s]
	lock := w.p.locks[w.p.slotLock[s]]
	proc := w.p.procs[w.p.slotProc[s]]
	until := "the end of the history"
	if st.lastLine >= 0 {
		until = fmt.Sprintf("%s (line %d)", fmtNS(st.lastEnd), st.lastLine+1)
	}
	return Violation{
		Check: verdict.Fairness,
		Lock:  lock,
		Message: fmt.Sprintf("lock %q: process %d starved: it requested the lock from %s (line %d) until %s, %s, and was never granted it, while other processes were granted it %d times",
			lock, proc, fmtNS(st.firstTime), st.firstLine+1, until, fmtNS(st.lastEnd-st.firstTime), st.lastG-st.firstG),
		Lines: lines(int(st.firstLine)+1, int(st.lastLine)+1),
	}
}

// grantFigures sets grants, clients, jain_index and per-process grants,
// over the processes that requested a lock.
func (w *fairWalk) grantFigures(res *Result) {
	totalGrants, sum, sumSq, clients := 0, 0.0, 0.0, 0
	perProc := map[int]float64{}
	for x, g := range w.grants {
		if !w.requester[x] {
			continue
		}
		clients++
		totalGrants += g
		sum += float64(g)
		sumSq += float64(g) * float64(g)
		perProc[w.p.procs[x]] = float64(g)
	}
	res.PerProcess = map[string]map[int]float64{"grants": perProc}
	res.metric("grants", float64(totalGrants))
	res.metric("clients", float64(clients))
	if sumSq > 0 {
		res.metric("jain_index", sum*sum/(float64(clients)*sumSq))
	}
}

// waitFigures sets the wait metrics of granted requests.
func waitFigures(res *Result, waits []int64) {
	if len(waits) == 0 {
		return
	}
	total := 0.0
	for _, w := range waits {
		total += float64(w)
	}
	slices.Sort(waits)
	res.metric("mean_wait_ms", total/float64(len(waits))/1e6)
	res.metric("p50_wait_ms", ms(stats.NearestRank(waits, 0.50)))
	res.metric("p99_wait_ms", ms(stats.NearestRank(waits, 0.99)))
	res.metric("max_wait_ms", ms(waits[len(waits)-1]))
}
