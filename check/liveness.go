package check

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// CheckLiveness finds stalls: stretches during which a lock was free, at
// least one process waited for it, and no fault was active, longer than
// Options.LivenessBound (default lease TTL + election timeout: a crashed
// holder's lease outlives it by the TTL, and a leader change extends leases
// by an election).
//
//   - A lock is held from an acquire ok to the end of the holder's release
//     (its outcome, whatever it is), its crash, or a lease-lost; an acquire
//     of unknown outcome (info, or cut short) may hold it from its invoke to
//     the process's next event, and counts as holding it, so that a stall is
//     reported only when it is certain.
//   - A process waits from its acquire invoke to the acquire's outcome, its
//     crash or its next invoke, or the end of the history.
//   - A fault is active from a `fault` invoke to its end (a `fault` ok, info
//     or fail), or to the end of the history; a paused process (`pause` …
//     `resume`) counts as a fault too. A stretch broken by a fault starts
//     again when the last fault ends.
//
// Verdicts: fail on any stall; pass otherwise (note "no acquire operations"
// when there is nothing to wait for).
//
// Metrics: stalls (= Count), max_stall_ms (the longest free-and-waited
// stretch, stall or not), bound_ms.
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

func (p *prepared) liveness(opts Options) Result {
	res := Result{Verdict: verdict.Pass}
	bound := int64(opts.LivenessBound)
	locks := make([]liveLock, len(p.locks))
	for l := range locks {
		locks[l].candPos, locks[l].waitPos = -1, -1
	}
	slots := make([]liveSlot, len(p.slotProc))
	for s := range slots {
		slots[s].waitIdx = -1
	}
	procHeld := make([][]int32, len(p.procs))
	paused := make([]bool, len(p.procs))
	var cands, waitLocks []int32
	faults, pausedCnt := 0, 0
	maxStall := int64(0)

	// Possible holds, as +1/-1 at time-order positions.
	var deltas []delta
	if len(p.poss) > 0 {
		pos := func(i int32) int32 { return i }
		if p.ord != nil {
			inv := make([]int32, p.n())
			for k, i := range p.ord {
				inv[i] = int32(k)
			}
			pos = func(i int32) int32 { return inv[i] }
		}
		for _, r := range p.poss {
			l := p.lockOf(int(r.start))
			deltas = append(deltas, delta{pos(r.start), l, 1})
			if r.end >= 0 {
				deltas = append(deltas, delta{pos(r.end), l, -1})
			}
		}
		slices.SortStableFunc(deltas, func(a, b delta) int { return cmp.Compare(a.pos, b.pos) })
	}

	removeFrom := func(list *[]int32, posOf func(int32) *int32, x int32) {
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
	candPos := func(l int32) *int32 { return &locks[l].candPos }
	waitPos := func(l int32) *int32 { return &locks[l].waitPos }
	slotPos := func(s int32) *int32 { return &slots[s].waitIdx }

	removed := int32(-1) // the waiter the current event ended
	closeStall := func(l int32, t int64, line int32) {
		lk := &locks[l]
		dur := t - lk.candStart
		maxStall = max(maxStall, dur)
		if bound >= 0 && dur > bound {
			res.add(p.stallViolation(l, lk, slots, removed, t, line, dur, opts.LivenessBound), opts.MaxViolations)
		}
		removeFrom(&cands, candPos, l)
	}
	startStall := func(l int32, t int64, line int32) {
		lk := &locks[l]
		lk.candStart, lk.candLine = t, line
		lk.candPos = int32(len(cands))
		cands = append(cands, l)
	}
	endHold := func(s int32) {
		if !slots[s].held {
			return
		}
		slots[s].held = false
		locks[p.slotLock[s]].held--
		ph := procHeld[p.slotProc[s]]
		if j := slices.Index(ph, s); j >= 0 {
			procHeld[p.slotProc[s]] = slices.Delete(ph, j, j+1)
		}
	}

	var touched []int32
	di := 0
	active := false
	requests := 0
	for k := range p.n() {
		i := p.at(k)
		op, ty := p.op(i), p.ty(i)
		touched = touched[:0]
		removed = -1
		for di < len(deltas) && int(deltas[di].pos) == k {
			locks[deltas[di].lock].held += deltas[di].d
			touched = append(touched, deltas[di].lock)
			di++
		}
		if inv := p.ended[i]; inv >= 0 {
			s := p.slot[inv]
			switch p.op(int(inv)) {
			case opAcquire:
				l := p.slotLock[s]
				lk := &locks[l]
				removeFrom(&lk.waiters, slotPos, s)
				if len(lk.waiters) == 0 {
					removeFrom(&waitLocks, waitPos, l)
				}
				removed = s
				touched = append(touched, l)
			case opRelease:
				endHold(s)
				touched = append(touched, p.slotLock[s])
			}
		}
		pi := p.procOf(i)
		s := p.slot[i]
		switch {
		case op == opFault && ty == tyInvoke:
			faults++
		case op == opFault && completion(ty):
			faults = max(faults-1, 0)
		case p.ev[i].Process < 0:
		case op == opAcquire && ty == tyInvoke:
			requests++
			l := p.slotLock[s]
			lk := &locks[l]
			if slots[s].waitIdx < 0 {
				slots[s].waitIdx = int32(len(lk.waiters))
				lk.waiters = append(lk.waiters, s)
				slots[s].waitSince, slots[s].waitLine = p.ev[i].Time, int32(i)
				if lk.waitPos < 0 {
					lk.waitPos = int32(len(waitLocks))
					waitLocks = append(waitLocks, l)
				}
			}
			touched = append(touched, l)
		case op == opAcquire && ty == tyOK:
			if p.ended[i] < 0 {
				requests++
			}
			if !slots[s].held {
				slots[s].held = true
				locks[p.slotLock[s]].held++
				procHeld[pi] = append(procHeld[pi], s)
			}
			touched = append(touched, p.slotLock[s])
		case op == opLeaseLost && ty != tyInvoke && ty != tyFail, op == opCrash:
			if p.slotLock[s] == p.noLock {
				for _, h := range slices.Clone(procHeld[pi]) {
					endHold(h)
					touched = append(touched, p.slotLock[h])
				}
			} else {
				endHold(s)
				touched = append(touched, p.slotLock[s])
			}
		case op == opPause && ty != tyFail:
			if !paused[pi] {
				paused[pi] = true
				pausedCnt++
			}
		case op == opResume && ty != tyFail:
			if paused[pi] {
				paused[pi] = false
				pausedCnt--
			}
		}
		t, line := p.ev[i].Time, int32(i)
		if now := faults > 0 || pausedCnt > 0; now != active {
			active = now
			if active {
				for len(cands) > 0 {
					closeStall(cands[len(cands)-1], t, line)
				}
			} else {
				for _, l := range waitLocks {
					if locks[l].held == 0 && locks[l].candPos < 0 {
						startStall(l, t, line)
					}
				}
			}
		}
		for _, l := range touched {
			lk := &locks[l]
			free := lk.held == 0 && len(lk.waiters) > 0 && !active
			switch {
			case free && lk.candPos < 0:
				startStall(l, t, line)
			case !free && lk.candPos >= 0:
				closeStall(l, t, line)
			}
		}
	}
	removed = -1
	for len(cands) > 0 {
		closeStall(cands[len(cands)-1], p.endTime, -1)
	}
	// Report in lock-name order, then time: the closing order above
	// interleaves locks.
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
	if requests == 0 {
		res.Note = "no acquire operations"
	} else if len(p.poss) > 0 {
		res.Note = fmt.Sprintf("%d acquires of unknown outcome count as holding their lock", len(p.poss))
	}
	res.metric("stalls", float64(res.Count))
	res.metric("max_stall_ms", ms(maxStall))
	if bound >= 0 {
		res.metric("bound_ms", ms(bound))
	}
	return res
}

func (p *prepared) stallViolation(l int32, lk *liveLock, slots []liveSlot, removed int32, t int64, line int32, dur int64, bound time.Duration) Violation {
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
	msg += fmt.Sprintf(", with no fault active; the bound is %s", bound)
	return Violation{Check: verdict.Liveness, Lock: name, Message: msg, Lines: lines(ls...)}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
