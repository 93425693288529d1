package check

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/stats"
	"github.com/lockbench/lockbench/verdict"
)

// CheckLiveness finds stalls: stretches during which a lock was free and at
// least one process waited for it, longer than the fault-free bound Q
// beyond what faults excuse. Q is Options.QuietBound, or by default
// max(MinQuietBound, QuietReleases × the history's median release
// latency, TailReleases × its longest): the release is one request in
// every strategy, so its latency says how fast the cluster answers these
// clients on this machine, and a lock that is slow at every handoff
// cannot set its own bound (as its median handoff would). Each fault excuses what it may cost a correct lock, a bounded
// window after its start and after its end (see faultEffect.excuse and
// recovery): a lease TTL where a holder's key must expire (client
// faults), two elections and a request deadline for member faults, the
// deadline after a slowdown, nothing for cancelled waits; every window is
// widened by Q. So a lock that never passes on after a crash, or after
// the cluster recovered, is a stall however long the fault lasted.
//
//   - A lock is held from an acquire ok to the end of the holder's release
//     (its outcome, whatever it is), its crash, or a lease-lost; an acquire
//     of unknown outcome (info, or cut short) may hold it from its invoke to
//     the process's next event, and counts as holding it, so that a stall is
//     reported only when it is certain.
//   - A process waits from its acquire invoke to the acquire's outcome, its
//     crash or its next invoke, or the end of the history.
//   - A fault lasts from a `fault` invoke to its end (a `fault` ok, info or
//     fail), or to the end of the history; a paused process (`pause` …
//     `resume`) counts as a client fault. A stretch is a stall when it
//     lasts longer than Q and some moment of it, later than Q after its
//     start, lies outside every fault's window. A stretch that begins
//     before the lock's first grant, while every client sets up its lease
//     and connections, gets a client fault's bound if it is longer.
//
// Verdicts: fail on any stall; pass otherwise (note "no acquire operations"
// when there is nothing to wait for).
//
// Metrics: stalls (= Count), max_stall_ms (the longest free-and-waited
// stretch, stall or not), max_handoff_stall_ms (the longest after its
// lock's first grant), bound_ms (Q), lease_bound_ms and member_bound_ms
// (how long after a client or member fault a lock may stay free),
// release_p50_ms and release_max_ms (what Q was derived from).
func CheckLiveness(events []history.Event, opts Options) Result {
	return prepare(events).liveness(opts.WithDefaults())
}

type liveLock struct {
	held      int32 // certain and possible holders
	waiters   []int32
	candStart int64 // start of the current free-and-waited stretch
	candLine  int32
	candPos   int32 // position in the candidate list; -1: no stretch
	waitPos   int32 // position in the list of locks with waiters, -1
	// gapAt is when the last waiter of an open stretch stopped waiting
	// while the lock stayed free (-1: none): a new request within the bound
	// resumes the stretch. gapLine and gapWaiter say where and who.
	gapAt     int64
	gapLine   int32
	gapWaiter int32
	// wasHeld: the lock has had a holder; startup: the open stretch began
	// before that (every client's first acquire sets up its lease then).
	wasHeld, startup bool
}

type liveSlot struct {
	held      bool
	waitIdx   int32 // position in its lock's waiters, -1
	waitSince int64
	waitLine  int32
}

type delta struct {
	pos  int32 // time-order position of the event
	lock int32
	d    int32
}

// liveWalk is the state of the liveness pass over the history in time
// order: per lock its holders and waiters, which locks have a
// free-and-waited stretch open (cands), and whether a fault is active.
type liveWalk struct {
	p         *prepared
	opts      Options
	bound     int64 // Q, the fault-free bound; < 0: no stalls judged
	rc        recovery
	release   int64 // the median release latency; -1: no releases
	tail      int64 // the longest release latency
	res       Result
	locks     []liveLock
	slots     []liveSlot
	procHeld  [][]int32 // per process: the slots it holds
	paused    []bool
	cands     []int32  // locks with a stretch open
	waitLocks []int32  // locks with waiters
	deltas    []delta  // possible holds as +1/-1 at positions
	excused   []window // merged windows that faults excuse
	requests  int
	maxStall  int64
	// maxHandoff is the longest stretch after its lock's first grant.
	maxHandoff int64
	removed    int32   // the waiter the current event ended, -1
	touched    []int32 // locks the current event changed
}

func (p *prepared) liveness(opts Options) Result {
	w := newLiveWalk(p, opts)
	di := 0
	for k := range p.n() {
		i := p.at(k)
		w.touched, w.removed = w.touched[:0], -1
		for ; di < len(w.deltas) && int(w.deltas[di].pos) == k; di++ {
			w.locks[w.deltas[di].lock].held += w.deltas[di].d
			w.touched = append(w.touched, w.deltas[di].lock)
		}
		w.endInvoke(i)
		w.event(i)
		w.settle(p.ev[i].Time, int32(i))
	}
	w.removed = -1
	for len(w.cands) > 0 {
		w.endStretch(w.cands[len(w.cands)-1], p.endTime, -1)
	}
	return w.result()
}

func newLiveWalk(p *prepared, opts Options) *liveWalk {
	release, tail := p.releaseLatency()
	quiet := int64(opts.QuietBound)
	if quiet <= 0 {
		quiet = max(int64(MinQuietBound), QuietReleases*release, TailReleases*tail)
	}
	if opts.LivenessBound < 0 {
		quiet = -1
	}
	w := &liveWalk{p: p, opts: opts, bound: quiet, rc: recoveryOf(opts, quiet), release: release, tail: tail, res: Result{Verdict: verdict.Pass},
		locks: make([]liveLock, len(p.locks)), slots: make([]liveSlot, len(p.slotProc)),
		procHeld: make([][]int32, len(p.procs)), paused: make([]bool, len(p.procs))}
	for l := range w.locks {
		w.locks[l].candPos, w.locks[l].waitPos, w.locks[l].gapAt = -1, -1, -1
	}
	for s := range w.slots {
		w.slots[s].waitIdx = -1
	}
	w.deltas = p.possDeltas()
	if w.bound >= 0 {
		w.excused = excuses(p.faultEffects(), w.rc)
	}
	return w
}

// possDeltas are the possible holds (acquires of unknown outcome) as +1 at
// their start and -1 at their end, by time-order position.
func (p *prepared) possDeltas() []delta {
	if len(p.poss) == 0 {
		return nil
	}
	pos := func(i int32) int32 { return i }
	if p.ord != nil {
		inv := make([]int32, p.n())
		for k, i := range p.ord {
			inv[i] = int32(k)
		}
		pos = func(i int32) int32 { return inv[i] }
	}
	var deltas []delta
	for _, r := range p.poss {
		l := p.lockOf(int(r.start))
		deltas = append(deltas, delta{pos(r.start), l, 1})
		if r.end >= 0 {
			deltas = append(deltas, delta{pos(r.end), l, -1})
		}
	}
	slices.SortStableFunc(deltas, func(a, b delta) int { return cmp.Compare(a.pos, b.pos) })
	return deltas
}

// removeAt removes x from list in O(1), keeping each element's recorded
// position (posOf) right.
func removeAt(list *[]int32, posOf func(int32) *int32, x int32) {
	j := *posOf(x)
	if j < 0 {
		return
	}
	last := len(*list) - 1
	moved := (*list)[last]
	(*list)[j] = moved
	*posOf(moved) = j
	*list = (*list)[:last]
	*posOf(x) = -1
}

func (w *liveWalk) candPos(l int32) *int32 { return &w.locks[l].candPos }
func (w *liveWalk) waitPos(l int32) *int32 { return &w.locks[l].waitPos }
func (w *liveWalk) slotPos(s int32) *int32 { return &w.slots[s].waitIdx }

// closeStall ends lock l's free-and-waited stretch at t; longer than the
// bound, it is a stall.
func (w *liveWalk) closeStall(l int32, t int64, line int32) {
	lk := &w.locks[l]
	dur := t - lk.candStart
	w.maxStall = max(w.maxStall, dur)
	bound := w.bound
	if lk.startup {
		bound = max(w.bound, w.rc.lease)
	} else {
		w.maxHandoff = max(w.maxHandoff, dur)
	}
	if w.bound >= 0 && dur > bound && uncovered(w.excused, lk.candStart+bound, t) >= 0 {
		from := uncovered(w.excused, lk.candStart+bound, t)
		w.res.add(w.p.stallViolation(l, lk, w.slots, w.removed, t, line, dur, w.stallBound(from-1, lk.startup)), w.opts.MaxViolations)
	}
	removeAt(&w.cands, w.candPos, l)
}

// endStretch ends lock l's stretch at t, or where its waiters left if
// they had (the gap).
func (w *liveWalk) endStretch(l int32, t int64, line int32) {
	lk := &w.locks[l]
	if lk.gapAt >= 0 {
		t, line, w.removed = lk.gapAt, lk.gapLine, lk.gapWaiter
		lk.gapAt = -1
	}
	w.closeStall(l, t, line)
}

func (w *liveWalk) startStall(l int32, t int64, line int32) {
	lk := &w.locks[l]
	lk.candStart, lk.candLine, lk.gapAt, lk.startup = t, line, -1, !lk.wasHeld
	lk.candPos = int32(len(w.cands))
	w.cands = append(w.cands, l)
}

func (w *liveWalk) startHold(s int32) {
	if w.slots[s].held {
		return
	}
	w.slots[s].held = true
	w.locks[w.p.slotLock[s]].held++
	pi := w.p.slotProc[s]
	w.procHeld[pi] = append(w.procHeld[pi], s)
}

func (w *liveWalk) endHold(s int32) {
	if !w.slots[s].held {
		return
	}
	w.slots[s].held = false
	w.locks[w.p.slotLock[s]].held--
	pi := w.p.slotProc[s]
	if j := slices.Index(w.procHeld[pi], s); j >= 0 {
		w.procHeld[pi] = slices.Delete(w.procHeld[pi], j, j+1)
	}
}

// startWait makes slot s (event i, an acquire invoke) a waiter.
func (w *liveWalk) startWait(s int32, i int) {
	l := w.p.slotLock[s]
	lk := &w.locks[l]
	if w.slots[s].waitIdx < 0 {
		w.slots[s].waitIdx = int32(len(lk.waiters))
		lk.waiters = append(lk.waiters, s)
		w.slots[s].waitSince, w.slots[s].waitLine = w.p.ev[i].Time, int32(i)
		if lk.waitPos < 0 {
			lk.waitPos = int32(len(w.waitLocks))
			w.waitLocks = append(w.waitLocks, l)
		}
	}
	w.touched = append(w.touched, l)
}

// endInvoke applies the end of the operation event i ended: an acquire's
// waiter stops waiting, a release's holder stops holding.
func (w *liveWalk) endInvoke(i int) {
	inv := w.p.ended[i]
	if inv < 0 {
		return
	}
	s := w.p.slot[inv]
	l := w.p.slotLock[s]
	switch w.p.op(int(inv)) {
	case opAcquire:
		lk := &w.locks[l]
		removeAt(&lk.waiters, w.slotPos, s)
		if len(lk.waiters) == 0 {
			removeAt(&w.waitLocks, w.waitPos, l)
		}
		w.removed = s
	case opRelease:
		w.endHold(s)
	default:
		return
	}
	w.touched = append(w.touched, l)
}

// event applies event i's own effect: a fault, a request, a grant, a
// crash or lost lease, a pause or resume.
func (w *liveWalk) event(i int) {
	p := w.p
	op, ty := p.op(i), p.ty(i)
	pi, s := p.procOf(i), p.slot[i]
	switch {
	case p.ev[i].Process < 0:
	case op == opAcquire && ty == tyInvoke:
		w.requests++
		w.startWait(s, i)
	case op == opAcquire && ty == tyOK:
		if p.ended[i] < 0 {
			w.requests++
		}
		w.startHold(s)
		w.touched = append(w.touched, p.slotLock[s])
	case op == opLeaseLost && ty != tyInvoke && ty != tyFail, op == opCrash:
		w.dropHolds(pi, s)
	}
}

// dropHolds ends slot s's hold, or every hold of process pi when s has no
// lock (a crash or lost lease without a lock).
func (w *liveWalk) dropHolds(pi, s int32) {
	if w.p.slotLock[s] != w.p.noLock {
		w.endHold(s)
		w.touched = append(w.touched, w.p.slotLock[s])
		return
	}
	for _, h := range slices.Clone(w.procHeld[pi]) {
		w.endHold(h)
		w.touched = append(w.touched, w.p.slotLock[h])
	}
}

// settle opens or closes the stretches of the locks the event at t
// touched. A stretch ends when the lock is granted. When every waiter
// stops waiting (cancelled, timed out) while the lock stays free, the
// stretch pauses: a new request within the bound resumes it, so clients
// that retry with a timeout do not reset the clock of a lock that never
// moves; later, the stretch ends where the waiters left.
func (w *liveWalk) settle(t int64, line int32) {
	for _, l := range w.touched {
		lk := &w.locks[l]
		lk.wasHeld = lk.wasHeld || lk.held > 0
		switch {
		case lk.held > 0 && lk.candPos >= 0:
			w.endStretch(l, t, line)
		case lk.held == 0 && len(lk.waiters) > 0 && lk.candPos < 0:
			w.startStall(l, t, line)
		case lk.held == 0 && len(lk.waiters) > 0 && lk.gapAt >= 0:
			if t-lk.gapAt > w.bound {
				w.endStretch(l, t, line)
				w.startStall(l, t, line)
			} else {
				lk.gapAt = -1
			}
		case lk.held == 0 && len(lk.waiters) == 0 && lk.candPos >= 0 && lk.gapAt < 0:
			lk.gapAt, lk.gapLine, lk.gapWaiter = t, line, w.removed
		}
	}
}

// result orders the stalls by lock name, then time (closing interleaves
// locks), and sets the note and figures.
func (w *liveWalk) result() Result {
	p, res := w.p, w.res
	rank := make([]int, len(p.locks))
	for r, l := range p.lockOrder() {
		rank[l] = r
	}
	lockIdx := map[string]int32{}
	for l, name := range p.locks {
		lockIdx[name] = int32(l)
	}
	slices.SortStableFunc(res.Violations, func(a, b Violation) int {
		return cmp.Compare(rank[lockIdx[a.Lock]], rank[lockIdx[b.Lock]])
	})
	res.finish()
	if w.requests == 0 {
		res.nothingToJudge("no acquire operations")
	} else if len(p.poss) > 0 {
		res.Note = fmt.Sprintf("%s of unknown outcome %s as holding their lock", count(len(p.poss), "acquire", "acquires"), plural(len(p.poss), "counts", "count"))
	}
	res.metric("stalls", float64(res.Count))
	res.metric("max_stall_ms", ms(w.maxStall))
	res.metric("max_handoff_stall_ms", ms(w.maxHandoff))
	if w.bound >= 0 {
		res.metric("bound_ms", ms(w.bound))
		res.metric("lease_bound_ms", ms(w.rc.lease))
		res.metric("member_bound_ms", ms(w.rc.member))
	}
	if w.release >= 0 {
		res.metric("release_p50_ms", ms(w.release))
		res.metric("release_max_ms", ms(w.tail))
	}
	return res
}

// stallBound says which bound a stall broke: after from, no fault's
// window covers the stretch; startup: it began before the lock's first
// grant.
func (w *liveWalk) stallBound(from int64, startup bool) string {
	if startup {
		return fmt.Sprintf("no fault excuses it after %s, and before the lock's first grant (every client's first acquire sets up its lease) the bound is a client fault's, %s",
			fmtNS(from), time.Duration(max(w.bound, w.rc.lease)))
	}
	how := fmt.Sprintf("max(%s, %d × the median release latency %s, %d × the longest %s)",
		MinQuietBound, QuietReleases, time.Duration(max(w.release, 0)), TailReleases, time.Duration(max(w.tail, 0)))
	switch {
	case w.opts.QuietBound > 0:
		how = "set by the options"
	case w.release < 0:
		how = fmt.Sprintf("the floor %s: no release ended ok to derive it from", MinQuietBound)
	}
	return fmt.Sprintf("no fault excuses it after %s, and outside the faults' windows the bound is %s (%s)",
		fmtNS(from), time.Duration(w.bound), how)
}

// releaseLatency is the median and the longest latency of the releases
// that ended ok (invoke → ok), -1 and 0 when there are none.
func (p *prepared) releaseLatency() (median, longest int64) {
	p.relOnce.Do(func() { p.relMedian, p.relLongest = p.measureReleases() })
	return p.relMedian, p.relLongest
}

// measureReleases is releaseLatency, measured: a sort of every release's
// latency, once for liveness and fairness both.
func (p *prepared) measureReleases() (median, longest int64) {
	var lat []int64
	for i := range p.n() {
		if p.op(i) != opRelease || p.ty(i) != tyInvoke || p.pair[i] < 0 || p.ty(int(p.pair[i])) != tyOK {
			continue
		}
		lat = append(lat, max(p.ev[p.pair[i]].Time-p.ev[i].Time, 0))
	}
	if len(lat) == 0 {
		return -1, 0
	}
	slices.Sort(lat)
	return stats.NearestRank(lat, 0.5), lat[len(lat)-1]
}

func (p *prepared) stallViolation(l int32, lk *liveLock, slots []liveSlot, removed int32, t int64, line int32, dur int64, bound string) Violation {
	ws := slices.Clone(lk.waiters)
	if removed >= 0 && p.slotLock[removed] == l && !slices.Contains(ws, removed) {
		ws = append(ws, removed)
	}
	slices.SortFunc(ws, func(a, b int32) int { return cmp.Compare(slots[a].waitLine, slots[b].waitLine) })
	var procs []string
	for _, s := range ws {
		procs = append(procs, fmt.Sprint(p.procs[p.slotProc[s]]))
	}
	name := p.locks[l]
	to := "the end of the history"
	if line >= 0 {
		to = fmt.Sprintf("%s (line %d)", fmtNS(t), line+1)
	}
	msg := fmt.Sprintf("lock %q was free for %s, from %s (line %d) to %s, while %s waited",
		name, time.Duration(dur), fmtNS(lk.candStart), lk.candLine+1, to, plural(len(ws), "process", "processes")+" "+strings.Join(procs, ", "))
	ls := []int{int(lk.candLine) + 1, int(line) + 1}
	if len(ws) > 0 {
		w := &slots[ws[0]]
		msg += fmt.Sprintf(" (process %s since %s, line %d)", procs[0], fmtNS(w.waitSince), w.waitLine+1)
		ls = append(ls, int(w.waitLine)+1)
	}
	msg += "; " + bound
	return Violation{Check: verdict.Liveness, Lock: name, Message: msg, Lines: lines(ls...)}
}

// count is "1 thing" or "n things".
func count(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, plural(n, one, many))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
