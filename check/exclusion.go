package check

import (
	"cmp"
	"encoding/json"
	"fmt"
	"github.com/lockbench/lockbench/internal/hugepage"
	"math"
	"slices"
	"strings"

	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// Interval is a stretch during which a process held (Certain) or may have
// held a lock.
type Interval struct {
	Holder
	Certain bool `json:"certain"`
}

// Intervals extracts, per lock, the holding intervals of every process,
// ordered by start (ties in line order).
//
// A certain interval runs from an acquire ok to the holder's next release
// invoke, crash, or lease-lost (the client knows it no longer holds), or to
// the end of the history. A crash or lease-lost without a lock ends all of
// the process's intervals. An acquire that ends info may have taken the
// lock at any time after its invoke: its interval is possible, not certain,
// and runs until the process's next event (other than another acquire's
// outcome). An acquire cut short by the process's crash or next invoke is
// treated like info. Events are taken in time order, ties in line order, so
// hand-written histories need not be sorted.
func Intervals(events []history.Event) map[string][]Interval {
	p := prepare(events)
	ivs := p.intervals()
	out := make(map[string][]Interval, len(ivs))
	for l, list := range ivs {
		if len(list) == 0 {
			continue
		}
		xs := make([]Interval, len(list))
		for j, iv := range list {
			xs[j] = Interval{Holder: iv.Holder, Certain: iv.certain}
		}
		out[p.locks[l]] = xs
	}
	return out
}

// ivRec is an interval with what ended it, while the intervals are built.
type ivRec struct {
	Holder
	certain bool
	end     HoldEnd
}

// intervals returns the intervals of each lock (by lock index).
func (p *prepared) intervals() [][]ivRec {
	out := make([][]ivRec, len(p.locks))
	for l := range out {
		out[l] = hugepage.Make[ivRec](0, int(p.nGrant[l]))
	}
	open := make([]int32, len(p.slotProc)) // per slot: index+1 of its open interval
	procOpen := make([][]int32, len(p.procs))
	closeSlot := func(s int32, t int64, line int, why HoldEnd) {
		x := open[s]
		if x == 0 {
			return
		}
		iv := &out[p.slotLock[s]][x-1]
		iv.To, iv.ToLine, iv.end = t, line, why
		open[s] = 0
		po := procOpen[p.slotProc[s]]
		if j := slices.Index(po, s); j >= 0 {
			procOpen[p.slotProc[s]] = slices.Delete(po, j, j+1)
		}
	}
	for k := range p.n() {
		i := p.at(k)
		op, ty := p.op(i), p.ty(i)
		if op != opAcquire && op != opRelease && op != opLeaseLost && op != opCrash {
			continue
		}
		e := &p.ev[i]
		if e.Process < 0 {
			continue
		}
		s := p.slot[i]
		switch {
		case op == opAcquire && ty == tyOK:
			if open[s] != 0 { // re-acquire without release: keep the first interval
				continue
			}
			l := p.slotLock[s]
			out[l] = append(out[l], ivRec{Holder: Holder{Process: int(e.Process), From: e.Time, To: -1, Token: e.Token, FromLine: i + 1}, certain: true})
			open[s] = int32(len(out[l]))
			procOpen[p.slotProc[s]] = append(procOpen[p.slotProc[s]], s)
		case op == opRelease && ty == tyInvoke:
			closeSlot(s, e.Time, i+1, EndRelease)
		case op == opLeaseLost && ty != tyInvoke && ty != tyFail, op == opCrash:
			why := EndCrash
			if op == opLeaseLost {
				why = EndLeaseLost
			}
			if p.slotLock[s] == p.noLock {
				for _, o := range slices.Clone(procOpen[p.slotProc[s]]) {
					closeSlot(o, e.Time, i+1, why)
				}
			} else {
				closeSlot(s, e.Time, i+1, why)
			}
		}
	}
	if len(p.poss) == 0 {
		return out
	}
	return p.mergePossible(out)
}

// mergePossible merges the possible intervals into each lock's certain
// ones (in start order). Possible intervals start at their invoke, in the
// past, so they are sorted apart first.
func (p *prepared) mergePossible(out [][]ivRec) [][]ivRec {
	byStart := func(a, b ivRec) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.FromLine, b.FromLine))
	}
	poss := make([][]ivRec, len(p.locks))
	for _, r := range p.poss {
		st := int(r.start)
		e := &p.ev[st]
		h := Holder{Process: int(e.Process), From: e.Time, To: -1, FromLine: st + 1}
		why := EndOpen
		if r.end >= 0 {
			h.To, h.ToLine, why = p.ev[r.end].Time, int(r.end)+1, EndNextEvent
		}
		l := p.lockOf(st)
		poss[l] = append(poss[l], ivRec{Holder: h, end: why})
	}
	for l, ps := range poss {
		if len(ps) == 0 {
			continue
		}
		slices.SortStableFunc(ps, byStart)
		cs := out[l]
		if !slices.IsSortedFunc(cs, byStart) { // only if times are equal across reordered lines
			slices.SortStableFunc(cs, byStart)
		}
		merged := hugepage.Make[ivRec](0, len(cs)+len(ps))
		for len(cs) > 0 && len(ps) > 0 {
			if byStart(ps[0], cs[0]) < 0 {
				merged, ps = append(merged, ps[0]), ps[1:]
			} else {
				merged, cs = append(merged, cs[0]), cs[1:]
			}
		}
		out[l] = append(append(merged, cs...), ps...)
	}
	return out
}

// CheckExclusion reports every pair of certain intervals of one lock that
// overlap. Intervals are half-open: a release invoked at t and the next
// grant at t do not overlap. Possible (info) intervals never make a
// violation; they are counted in the note.
//
// An overlap that began after an operator revoked the earlier holder's
// lease (a chaos.CostRevoke fault on its process, while it held and before
// the later grant), whose key the harness saw go with the lease, is
// excused when that holder stopped within Options.OverrunBound of it: the
// revoke ends the lease on the server at once and the holder can learn of
// it only from its next keepalive answer, so no lock can avoid it. The
// lease check judges that overrun; a holder told later, or never, is not
// excused.
//
// Metrics: holds (certain intervals), possible_holds, overlaps (= Count),
// possible_overlaps, and revoked_overlaps (excused) when the history has
// revokes.
func CheckExclusion(events []history.Event, opts Options) Result {
	return prepare(events).exclusion(opts.WithDefaults())
}

// ivHeap is a min-heap of indices of one lock's holds by end (open ends
// last).
type ivHeap struct {
	p   *prepared
	idx []int32
	ivs []Hold
	cnt []int32 // per process index: how many of its holds are in the heap
}

// proc is the process index of hold x.
func (h *ivHeap) proc(x int32) int32 { return h.p.procOf(h.ivs[x].FromLine - 1) }

func endKey(iv *Hold) int64 {
	if iv.To < 0 {
		return math.MaxInt64
	}
	return iv.To
}

func (h *ivHeap) less(a, b int) bool {
	return endKey(&h.ivs[h.idx[a]]) < endKey(&h.ivs[h.idx[b]])
}

func (h *ivHeap) push(x int32) {
	h.idx = append(h.idx, x)
	h.cnt[h.proc(x)]++
	for j := len(h.idx) - 1; j > 0; {
		par := (j - 1) / 2
		if !h.less(j, par) {
			break
		}
		h.idx[j], h.idx[par] = h.idx[par], h.idx[j]
		j = par
	}
}

// popEnded drops every interval that ends at or before from.
func (h *ivHeap) popEnded(from int64) {
	for len(h.idx) > 0 {
		top := &h.ivs[h.idx[0]]
		if top.To < 0 || top.To > from {
			return
		}
		h.cnt[h.proc(h.idx[0])]--
		last := len(h.idx) - 1
		h.idx[0] = h.idx[last]
		h.idx = h.idx[:last]
		for j := 0; ; {
			l, r, m := 2*j+1, 2*j+2, j
			if l < last && h.less(l, m) {
				m = l
			}
			if r < last && h.less(r, m) {
				m = r
			}
			if m == j {
				break
			}
			h.idx[j], h.idx[m] = h.idx[m], h.idx[j]
			j = m
		}
	}
}

func (h *ivHeap) clear() {
	for _, x := range h.idx {
		h.cnt[h.proc(x)]--
	}
	h.idx = h.idx[:0]
}

func (p *prepared) exclusion(opts Options) Result {
	res := Result{Verdict: verdict.Pass}
	// The holds, as ops hands them out (by lock name, each lock's by
	// start): one list of them, not a second build of the intervals.
	rest := p.holds()
	holds, possibleHolds, possibleOverlaps := 0, 0, 0
	certain := &ivHeap{p: p, cnt: make([]int32, len(p.procs))}
	possible := &ivHeap{p: p, cnt: make([]int32, len(p.procs))}
	var others []int32
	var gone grantedGone
	var dels deletions
	revoked := p.revokeExcuses(opts)
	excused := 0
	unc, uncertain, ordered := p.clockUncertainty(), 0, 0
	for len(rest) > 0 {
		lock := rest[0].Lock
		n := 1
		for n < len(rest) && rest[n].Lock == lock {
			n++
		}
		ivs := rest[:n]
		rest = rest[n:]
		certain.ivs, possible.ivs = ivs, ivs
		var released []Hold // this lock's, made for its first listed violation
		for x := range ivs {
			iv := &ivs[x]
			pi := certain.proc(int32(x))
			certain.popEnded(iv.From)
			possible.popEnded(iv.From)
			otherPossible := len(possible.idx) - int(possible.cnt[pi])
			otherCertain := len(certain.idx) - int(certain.cnt[pi])
			if !iv.Certain {
				possibleHolds++
				possibleOverlaps += otherPossible + otherCertain
				possible.push(int32(x))
				continue
			}
			holds++
			possibleOverlaps += otherPossible
			switch {
			case otherCertain > 0 && len(res.Violations) >= opts.MaxViolations && len(revoked.revokes) == 0 && unc == nil:
				res.Count += otherCertain // nothing to list or excuse: linear however many overlap
			case otherCertain > 0:
				others = others[:0]
				for _, y := range certain.idx {
					if certain.proc(y) != pi {
						others = append(others, y)
					}
				}
				slices.Sort(others) // start order
				if gone == nil {
					gone, dels = p.grantedGone(), p.deletions()
				}
				for _, y := range others {
					a := &ivs[y]
					if revoked.excuses(a.Holder, iv.Holder) {
						excused++
						continue
					}
					if unc.within(a, iv, certain.proc(y), pi) {
						// Either may have come first: the clocks put the
						// grant of the one that did later, within their error.
						if p.releasedBefore(&a.Holder, &iv.Holder) || p.releasedBefore(&iv.Holder, &a.Holder) {
							ordered++
						} else {
							uncertain++
						}
						continue
					}
					if len(res.Violations) >= opts.MaxViolations {
						res.Count++
						continue
					}
					if released == nil {
						released = releasedByEnd(ivs)
					}
					res.add(overlap(lock, a.Holder, iv.Holder, gone, dels, released), opts.MaxViolations)
				}
			}
			certain.push(int32(x))
		}
		certain.clear()
		possible.clear()
	}
	res.finish()
	if uncertain > 0 && res.Verdict == verdict.Pass {
		res.Verdict = verdict.Unknown
	}
	var notes []string
	if possibleOverlaps > 0 {
		notes = append(notes, fmt.Sprintf("%s involve an acquire of unknown outcome (info) and are not counted", count(possibleOverlaps, "overlap", "overlaps")))
	}
	if excused > 0 {
		notes = append(notes, fmt.Sprintf("%s began after an operator revoked the earlier holder's lease, which no lock can foresee, and ended within the overrun its keepalive policy allows: excused (the lease check judges the overrun)", count(excused, "overlap", "overlaps")))
	}
	if uncertain > 0 {
		notes = append(notes, fmt.Sprintf("%s between processes of different workers no longer than their clocks' uncertainty together: not counted, and the verdict is unknown", count(uncertain, "overlap", "overlaps")))
	}
	if ordered > 0 {
		notes = append(notes, fmt.Sprintf("%s between processes of different workers no longer than their clocks' uncertainty together were ordered by etcd's revisions (the release wrote a revision the next grant had seen): no overlap", count(ordered, "apparent overlap", "apparent overlaps")))
	}
	res.Note = strings.Join(notes, "; ")
	if unc != nil {
		res.metric("clock_uncertain_overlaps", float64(uncertain))
		res.metric("revision_ordered_overlaps", float64(ordered))
	}
	res.metric("holds", float64(holds))
	res.metric("possible_holds", float64(possibleHolds))
	res.metric("overlaps", float64(res.Count))
	res.metric("possible_overlaps", float64(possibleOverlaps))
	if len(revoked.revokes) > 0 {
		res.metric("revoked_overlaps", float64(excused))
	}
	return res
}

// revokeExcuses finds what excuses an overlap that a revoke made: an
// operator's revoke (chaos.CostRevoke) ends a lease on the server at once,
// its key goes and the lock moves on, while the holder hears of it only
// from its next keepalive answer.
type revokeExcuses struct {
	revokes map[int][]int64 // per process: when a revoke of its lease began
	lost    map[int64]int64 // per token: when the harness saw its key go with its lease while held
	pauses  []Span
	bound   int64 // the overrun allowed; negative: any
}

func (p *prepared) revokeExcuses(opts Options) revokeExcuses {
	r := revokeExcuses{revokes: map[int][]int64{}, lost: map[int64]int64{}, bound: int64(opts.OverrunBound)}
	fo := p.faultOps()
	r.pauses = fo.Pauses
	for _, f := range p.faultEffects() {
		if f.cost == chaos.CostRevoke && f.process >= 0 {
			r.revokes[f.process] = append(r.revokes[f.process], f.from)
		}
	}
	if len(r.revokes) == 0 {
		return r
	}
	dels, _ := p.deletionsUnderHolders()
	for _, d := range dels {
		if t, seen := r.lost[d.hold.Token]; d.cause == history.CauseLease && (!seen || d.time < t) {
			r.lost[d.hold.Token] = d.time
		}
	}
	return r
}

// excuses says whether the overlap of a, the earlier holder, with b is a
// revoke's: a's lease was revoked while it held and before b's grant, the
// harness saw a's key go with its lease, and a stopped believing within
// the overrun its policy allows (time paused not counted, as the lease
// check counts it). A holder revoked and told too late, or never, is not
// excused; nor is a grant after a revoke of the grantee's own lease
// (etcd's Campaign, docs/clients.md).
func (r revokeExcuses) excuses(a, b Holder) bool {
	gone, ok := r.lost[a.Token]
	if !ok || a.Token == 0 || a.To < 0 {
		return false
	}
	if !slices.ContainsFunc(r.revokes[a.Process], func(t int64) bool { return a.From <= t && t <= b.From }) {
		return false
	}
	return r.bound < 0 || a.To-gone-pausedWithin(r.pauses, a.Process, gone, a.To) <= r.bound
}

// grantedGone maps a grant's token to the harness's key-deleted event that
// says its key was deleted before its acquire returned.
type grantedGone map[int64]history.KeyDeletion

// overlap is the violation of b granted while a held lock, with its
// cause: a grant of a key already gone (gone), else what the history's
// deletions and releases show (deletions.overlapCause).
func overlap(lock string, a, b Holder, gone grantedGone, dels deletions, released []Hold) Violation {
	goneSaid := gone.say(a, b)
	cause := strings.TrimPrefix(goneSaid, "; ")
	if cause == "" {
		cause = dels.overlapCause(lock, a, b, released)
	}
	return Violation{
		Check:   verdict.Exclusion,
		Lock:    lock,
		Message: fmt.Sprintf("lock %q held by two processes at once: %s; %s%s", lock, holderString(a), holderString(b), goneSaid),
		Holders: []Holder{a, b},
		Lines:   lines(a.FromLine, b.FromLine),
		Cause:   cause,
	}
}

// grantedGone finds the grants of keys already deleted: what explains an
// overlap in which one holder was granted a key that no longer existed.
func (p *prepared) grantedGone() grantedGone {
	g := grantedGone{}
	for i := range p.n() {
		if p.op(i) != opKeyDeleted {
			continue
		}
		var d history.KeyDeletion
		if json.Unmarshal(p.ev[i].Value, &d) == nil && d.BeforeGrant {
			g[p.ev[i].Token] = d
		}
	}
	return g
}

// say names each of hs whose key was gone before its grant, or "".
func (g grantedGone) say(hs ...Holder) string {
	var b strings.Builder
	for _, h := range hs {
		if d, ok := g[h.Token]; ok && h.Token != 0 {
			cause := ""
			if d.Cause == history.CauseLease {
				cause = " by its lease's end"
			}
			fmt.Fprintf(&b, "; process %d's key (token %d) was deleted%s at revision %d, before its acquire returned: it was granted a key that no longer existed",
				h.Process, h.Token, cause, d.Revision)
		}
	}
	return b.String()
}
