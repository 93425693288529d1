package check

import (
	"fmt"
	"strings"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// The counter workloads (docs/design.md §4), as the checker reads them: inside
// the critical section a process reads the counter (read invoke → read ok,
// value = what it read), then writes read+1 (write invoke with value and
// token = its grant's token). write ok means the resource accepted the
// write, write fail that it rejected it (counter-fenced: the token guard
// failed, error "stale token"), write info that nobody knows. At the end the
// nemesis (process -1) reads the final value: a read ok with value N.
//
// The lock of a write is the write's own, else its invoke's, else the lock
// of the process's last grant. A final read with a lock is that lock's
// counter; one without a lock counts every lock's writes (one counter per
// run).

// CheckResource finds lost updates: a counter whose final value is lower
// than the number of writes it accepted (each accepted write is one +1).
//
// Verdicts: fail on a lost update; unknown when writes were accepted but no
// final read covers them or the final value is not an integer; pass with
// note "no resource operations" when the history has no read or write.
// Writes of unknown outcome (info) never make a violation.
//
// Metrics: accepted_writes, rejected_writes, unknown_writes, final_value
// (when there is one final read), lost_updates (when decidable).
func CheckResource(events []history.Event, opts Options) Result {
	return prepare(events).resource(opts.WithDefaults())
}

// CheckFencing checks fencing tokens, per lock. The grants' own:
//   - a grant (acquire ok) whose token is not above that of every earlier
//     grant of the lock, in the order of the grants: a token is the key's
//     create revision (docs/design.md §3), so a later grant's is higher,
//     and a resource fenced by tokens would refuse the new holder or
//     accept the old one. Token 0 (none) is skipped. This needs no
//     resource workload.
//
// And those of accepted writes:
//   - a write accepted with a token lower than that of a grant (acquire ok)
//     made before the write was invoked came from a superseded holder: a
//     stale accepted write;
//   - a write accepted with a token lower than that of a write accepted
//     before it was invoked: the accepted tokens decreased (a regression).
//
// A write counts once even when it is both. A rejected stale write (fail)
// is what fencing is for and is fine; a stale write of unknown outcome
// (info) is counted, not failed. Writes without a token are skipped.
//
// Verdicts: fail on any such grant or write; unknown when writes were
// accepted but none carries a token; otherwise pass, with note "no
// resource operations" when the history has no write.
//
// Metrics: accepted_writes, tokened_writes, stale_accepted_writes,
// token_regressions, rejected_stale_writes, unknown_stale_writes.
func CheckFencing(events []history.Event, opts Options) Result {
	return prepare(events).fencing(opts.WithDefaults())
}

const noResourceOps = "no resource operations"

type writeScan struct {
	resourceOps bool // any read or write
	writes      int  // write events of clients
	accepted    []int
	acceptedAt  [][]int32 // per lock: the write ok events
	rejected    int
	unknown     int
	finals      []int32 // per lock: the last final read, -1

	fencing       Result
	tokened       int
	stale         int
	regressions   int
	rejectedStale int
	unknownStale  int
}

type tokenAt struct {
	tok int64
	at  int32 // event index, -1 if none
}

type pendingWrite struct {
	inv   int32
	lock  int32
	grant tokenAt // highest grant of the lock before the invoke
	acc   tokenAt // highest accepted write token before the invoke
}

// writeWalk is the state of the write pass: per lock the highest grant
// token and the highest accepted write token so far, per process its last
// granted lock and its write in flight.
type writeWalk struct {
	p             *prepared
	opts          Options
	w             *writeScan
	maxGrant      []tokenAt
	maxAcc        []tokenAt
	lastGrantLock []int32
	pend          []pendingWrite
}

func (p *prepared) scanWrites(opts Options) *writeScan {
	ww := newWriteWalk(p, opts)
	for k := range p.n() {
		i := p.at(k)
		op := p.op(i)
		if op != opAcquire && op != opRead && op != opWrite {
			continue
		}
		ty := p.ty(i)
		switch {
		case p.ev[i].Process < 0:
			if op == opRead && ty == tyOK {
				ww.w.finals[p.lockOf(i)] = int32(i)
				ww.w.resourceOps = true
			}
		case op == opAcquire:
			if ty == tyOK {
				ww.grant(i)
			}
		case op == opRead:
			ww.w.resourceOps = true
		default:
			ww.write(i, ty)
		}
	}
	return ww.w
}

func newWriteWalk(p *prepared, opts Options) *writeWalk {
	nl := len(p.locks)
	ww := &writeWalk{p: p, opts: opts, w: &writeScan{
		accepted:   make([]int, nl),
		acceptedAt: make([][]int32, nl),
		finals:     make([]int32, nl),
		fencing:    Result{Verdict: verdict.Pass},
	}, maxGrant: make([]tokenAt, nl), maxAcc: make([]tokenAt, nl),
		lastGrantLock: make([]int32, len(p.procs)), pend: make([]pendingWrite, len(p.procs))}
	for l := range nl {
		ww.w.finals[l] = -1
		ww.maxGrant[l], ww.maxAcc[l] = tokenAt{0, -1}, tokenAt{0, -1}
	}
	for x := range ww.pend {
		ww.lastGrantLock[x] = -1
		ww.pend[x].inv = -1
	}
	return ww
}

// grant notes acquire ok i: its process's lock, the lock's highest token.
func (ww *writeWalk) grant(i int) {
	e := &ww.p.ev[i]
	l := ww.p.lockOf(i)
	ww.lastGrantLock[ww.p.procOf(i)] = l
	if e.Token != 0 && (ww.maxGrant[l].at < 0 || e.Token > ww.maxGrant[l].tok) {
		ww.maxGrant[l] = tokenAt{e.Token, int32(i)}
	}
}

// lockOfWrite is the write's own lock, else the process's last granted.
func (ww *writeWalk) lockOfWrite(i int) int32 {
	if l := ww.p.lockOf(i); l != ww.p.noLock {
		return l
	}
	if l := ww.lastGrantLock[ww.p.procOf(i)]; l >= 0 {
		return l
	}
	return ww.p.lockOf(i)
}

// pending is a write invoked at event inv (-1: at its completion, i).
func (ww *writeWalk) pending(inv int32, i int) pendingWrite {
	l := ww.lockOfWrite(i)
	return pendingWrite{inv: inv, lock: l, grant: ww.maxGrant[l], acc: ww.maxAcc[l]}
}

// write takes write event i: an invoke is remembered, a completion judged
// against the tokens seen before its invoke.
func (ww *writeWalk) write(i int, ty uint8) {
	p, w := ww.p, ww.w
	w.resourceOps = true
	w.writes++
	pi := p.procOf(i)
	if ty == tyInvoke {
		ww.pend[pi] = ww.pending(int32(i), i)
		return
	}
	if !completion(ty) {
		return
	}
	pw := ww.pend[pi]
	if inv := p.ended[i]; inv < 0 || pw.inv != inv { // a completion without its invoke: invoked now
		pw = ww.pending(-1, i)
	}
	ww.pend[pi].inv = -1
	tok := p.ev[i].Token
	if pw.inv >= 0 && p.ev[pw.inv].Token != 0 {
		tok = p.ev[pw.inv].Token
	}
	staleGrant := tok != 0 && pw.grant.at >= 0 && tok < pw.grant.tok
	switch ty {
	case tyFail:
		w.rejected++
		if staleGrant || strings.Contains(p.ev[i].Error, "stale") {
			w.rejectedStale++
		}
	case tyInfo:
		w.unknown++
		if staleGrant {
			w.unknownStale++
		}
	case tyOK:
		ww.accepted(i, tok, pw, staleGrant)
	}
}

// accepted takes write ok i with token tok: counts it, and fails fencing
// if a grant or an accepted write with a higher token preceded its invoke.
func (ww *writeWalk) accepted(i int, tok int64, pw pendingWrite, staleGrant bool) {
	w, l := ww.w, pw.lock
	w.accepted[l]++
	w.acceptedAt[l] = append(w.acceptedAt[l], int32(i))
	if tok == 0 {
		return
	}
	w.tokened++
	regress := pw.acc.at >= 0 && tok < pw.acc.tok
	if staleGrant {
		w.stale++
	}
	if regress {
		w.regressions++
	}
	if staleGrant || regress {
		w.fencing.add(ww.p.fencingViolation(i, int(pw.inv), tok, l, pw, staleGrant, regress), ww.opts.MaxViolations)
	}
	if ww.maxAcc[l].at < 0 || tok > ww.maxAcc[l].tok {
		ww.maxAcc[l] = tokenAt{tok, int32(i)}
	}
}

func (p *prepared) fencingViolation(i, inv int, tok int64, l int32, pw pendingWrite, stale, regress bool) Violation {
	e := &p.ev[i]
	what := fmt.Sprintf("process %d's write", e.Process)
	val := e.Value
	if inv >= 0 {
		val = p.ev[inv].Value
		what += fmt.Sprintf(" (invoked at %s, line %d)", fmtNS(p.ev[inv].Time), inv+1)
	}
	if len(val) > 0 && len(val) <= 64 {
		what += " of " + string(val)
	}
	what += fmt.Sprintf(" with token %d was accepted at %s (line %d)", tok, fmtNS(e.Time), i+1)
	var why []string
	ls := []int{inv + 1, i + 1}
	if stale {
		g := &p.ev[pw.grant.at]
		why = append(why, fmt.Sprintf("process %d had been granted the lock with token %d at %s (line %d) before the write was invoked: a stale holder's write",
			g.Process, pw.grant.tok, fmtNS(g.Time), pw.grant.at+1))
		ls = append(ls, int(pw.grant.at)+1)
	}
	if regress {
		a := &p.ev[pw.acc.at]
		why = append(why, fmt.Sprintf("process %d's write with token %d had been accepted at %s (line %d) before it: accepted tokens decreased",
			a.Process, pw.acc.tok, fmtNS(a.Time), pw.acc.at+1))
		ls = append(ls, int(pw.acc.at)+1)
	}
	return Violation{
		Check:   verdict.Fencing,
		Lock:    p.locks[l],
		Message: fmt.Sprintf("lock %q: %s, but %s", p.locks[l], what, strings.Join(why, "; and ")),
		Lines:   lines(ls...),
	}
}

func (p *prepared) writes(opts Options) *writeScan {
	if p.ws == nil {
		p.ws = p.scanWrites(opts)
	}
	return p.ws
}

func (p *prepared) fencing(opts Options) (res Result) {
	w := p.writes(opts)
	res = w.fencing
	res.Violations = append([]Violation(nil), res.Violations...)
	uncertain, tokened := p.grantTokenRegressions(&res, opts)
	defer func() {
		if uncertain == 0 {
			return
		}
		if res.Verdict == verdict.Pass {
			res.Verdict = verdict.Unknown
		}
		res.Note = joinNotes(res.Note, fmt.Sprintf("%s between processes of different workers closer than their clocks' uncertainty together: not counted, and the verdict is unknown", count(uncertain, "grant token regression", "grant token regressions")))
		res.metric("clock_uncertain_regressions", float64(uncertain))
	}()
	if w.writes == 0 {
		res.Note = noResourceOps
		if tokened == 0 {
			// A lock that offers no token (Redlock) has nothing here to
			// judge: say so, rather than pass as if fenced.
			res.nothingToJudge(noResourceOps + ", and no grant carries a token")
		}
		res.finish()
		return res
	}
	acc := 0
	for _, a := range w.accepted {
		acc += a
	}
	wrong := p.wronglyRejected(&res, opts)
	res.finish()
	if res.Verdict == verdict.Pass && acc > 0 && w.tokened == 0 {
		res.Verdict = verdict.Unknown
		res.Note = "no accepted write carries a token"
	} else if acc > w.tokened {
		res.Note = fmt.Sprintf("%d accepted writes carry no token and were not checked", acc-w.tokened)
	}
	if w.unknownStale > 0 {
		res.Note = joinNotes(res.Note, fmt.Sprintf("%d stale writes have an unknown outcome (info)", w.unknownStale))
	}
	res.metric("accepted_writes", float64(acc))
	res.metric("tokened_writes", float64(w.tokened))
	res.metric("stale_accepted_writes", float64(w.stale))
	res.metric("token_regressions", float64(w.regressions))
	res.metric("rejected_stale_writes", float64(w.rejectedStale))
	res.metric("unknown_stale_writes", float64(w.unknownStale))
	res.metric("rejected_rightful_writes", float64(wrong))
	return res
}

func (p *prepared) resource(opts Options) Result {
	w := p.writes(opts)
	res := Result{Verdict: verdict.Pass}
	if !w.resourceOps {
		res.nothingToJudge(noResourceOps)
		return res
	}
	total := 0
	for _, a := range w.accepted {
		total += a
	}
	res.metric("accepted_writes", float64(total))
	res.metric("rejected_writes", float64(w.rejected))
	res.metric("unknown_writes", float64(w.unknown))
	var notes []string
	covered := make([]bool, len(p.locks))
	nFinals, lost, decided := 0, int64(0), true
	for _, l := range p.lockOrder() {
		if w.finals[l] < 0 {
			continue
		}
		nFinals++
		if l == p.noLock { // one counter for the run
			for x := range covered {
				covered[x] = true
			}
		}
		covered[l] = true
		n, note := p.finalRead(&res, w, l, total, opts)
		lost += n
		if note != "" {
			decided = false
			notes = append(notes, note)
		}
	}
	if nFinals != 1 {
		delete(res.Metrics, "final_value")
	}
	if note := p.uncoveredNote(w, covered); note != "" {
		decided = false
		notes = append(notes, note)
	}
	if decided {
		res.metric("lost_updates", float64(lost))
	}
	res.finish()
	if res.Verdict == verdict.Pass && !decided {
		res.Verdict = verdict.Unknown
	}
	if w.unknown > 0 && res.Verdict == verdict.Pass {
		notes = append(notes, fmt.Sprintf("%d writes have an unknown outcome (info)", w.unknown))
	}
	res.Note = joinNotes(notes...)
	return res
}

// finalRead judges lock l's final read against its accepted writes (every
// lock's, total, for a read without a lock): it returns the updates lost,
// or a note when the final value is not an integer.
func (p *prepared) finalRead(res *Result, w *writeScan, l int32, total int, opts Options) (int64, string) {
	f := w.finals[l]
	accepted := w.accepted[l]
	name := fmt.Sprintf("counter of lock %q", p.locks[l])
	at := w.acceptedAt[l]
	if l == p.noLock {
		accepted, name, at = total, "counter", nil
		for _, xs := range w.acceptedAt {
			at = append(at, xs...)
		}
	}
	fe := &p.ev[f]
	final, ok := history.ParseInt(fe.Value)
	if !ok {
		return 0, fmt.Sprintf("final read of the %s (line %d) is not an integer", name, f+1)
	}
	res.metric("final_value", float64(final))
	if final >= int64(accepted) {
		return 0, ""
	}
	ls := []int{int(f) + 1}
	msg := fmt.Sprintf("%s: final value %d (read at %s, line %d) is less than the %d accepted increments: %d update(s) lost",
		name, final, fmtNS(fe.Time), f+1, accepted, int64(accepted)-final)
	if dups := p.duplicateWrites(at, 5); len(dups) > 0 {
		var ds []string
		for _, d := range dups {
			ds = append(ds, fmt.Sprintf("%s at lines %d and %d", string(p.writeValue(int(d[0]))), d[0]+1, d[1]+1))
			ls = append(ls, int(d[0])+1, int(d[1])+1)
		}
		msg += "; accepted writes of the same value: " + strings.Join(ds, ", ")
	}
	res.add(Violation{Check: verdict.Resource, Lock: p.locks[l], Message: msg, Lines: lines(ls...)}, opts.MaxViolations)
	return int64(accepted) - final, ""
}

// uncoveredNote names the locks with accepted writes that no final read
// covers ("" when all are).
func (p *prepared) uncoveredNote(w *writeScan, covered []bool) string {
	var uncovered []string
	for _, l := range p.lockOrder() {
		if w.accepted[l] > 0 && !covered[l] {
			uncovered = append(uncovered, fmt.Sprintf("%q", p.locks[l]))
		}
	}
	if len(uncovered) == 0 {
		return ""
	}
	return fmt.Sprintf("no final read (process -1, read ok) of the counter of lock %s", strings.Join(uncovered, ", "))
}

// writeValue is the value a write ok wrote (its invoke's, else its own).
func (p *prepared) writeValue(ok int) []byte {
	if inv := p.ended[ok]; inv >= 0 && len(p.ev[inv].Value) > 0 {
		return p.ev[inv].Value
	}
	return p.ev[ok].Value
}

// duplicateWrites returns up to max pairs of accepted writes (event
// indices) that wrote the same integer: two holders that read the same
// value, the usual shape of a lost update.
func (p *prepared) duplicateWrites(oks []int32, max int) [][2]int32 {
	first := make(map[int64]int32, len(oks))
	var out [][2]int32
	for _, i := range oks {
		v, ok := history.ParseInt(p.writeValue(int(i)))
		if !ok {
			continue
		}
		if j, seen := first[v]; seen {
			out = append(out, [2]int32{j, i})
			if len(out) >= max {
				break
			}
			continue
		}
		first[v] = i
	}
	return out
}

// wronglyRejected finds rejected writes (fail) of a rightful holder: the
// writer held the lock with the latest grant, had not lost its lease, no
// fault on it or on the members was on within the recovery bound, and the
// harness did not see its key go. A fenced resource that refuses the
// current holder is as broken as one that accepts a stale one: fencing
// must hold both ways (e.g. a token that is not the key's create
// revision is rejected every time).
func (p *prepared) wronglyRejected(res *Result, opts Options) int {
	if p.writes(opts).rejected == 0 {
		return 0
	}
	o := p.ops()
	r := int64(opts.LivenessBound + opts.RecoverySlack)
	dels, _ := p.deletionsUnderHolders()
	n := 0
	for _, wr := range o.Writes {
		if wr.Outcome != OutcomeFail {
			continue
		}
		h, ok := holdAt(o.Holds, int(wr.Process), wr.From)
		if !ok || grantedSince(o.Holds, h, wr.To) || lostSince(o.LeaseLost, int(wr.Process), h.From, wr.To) ||
			uncovered(p.leaseExcused(int(wr.Process), r), wr.From-1, wr.To) < 0 || keyGone(dels, h) {
			continue
		}
		n++
		msg := fmt.Sprintf("lock %q: process %d's write with token %d was rejected at %s (line %d) although it held the lock "+
			"(granted at %s with token %d, the latest grant), its lease was not lost and no fault was on it: "+
			"the fenced resource refused the rightful holder (is the token the lock key's create revision?)",
			h.Lock, wr.Process, p.ev[wr.Done].Token, fmtNS(wr.To), wr.Done+1, fmtNS(h.From), h.Token)
		res.add(Violation{Check: verdict.Fencing, Lock: h.Lock, Message: msg, Holders: []Holder{h.Holder},
			Lines: lines(h.FromLine, int(wr.Invoke+1), int(wr.Done+1))}, opts.MaxViolations)
	}
	return n
}

// grantTokenRegressions adds a violation for each grant whose token is
// not above every earlier grant's of its lock (see CheckFencing). In a
// history merged from several workers, two grants of different workers
// closer than their clocks' uncertainties may be in either order: such a
// regression is counted, not a violation, and its count returned, with
// how many grants carried a token at all.
func (p *prepared) grantTokenRegressions(res *Result, opts Options) (uncertain, tokened int) {
	unc := p.clockUncertainty()
	top := map[string]Op{} // per lock: the grant with the highest token so far
	for _, g := range p.ops().Grants() {
		tok := p.ev[g.Done].Token
		if tok == 0 {
			continue
		}
		tokened++
		b, seen := top[g.Lock]
		if !seen || tok > p.ev[b.Done].Token {
			top[g.Lock] = g
			continue
		}
		if unc.near(int(b.Process), int(g.Process), g.To-b.To) {
			// The revisions may still order them: g's hold ended before
			// b's grant (then this is no regression), or b's before g's
			// (then it is one, whatever the clocks).
			hb, hg := p.holdGranted(b.Done), p.holdGranted(g.Done)
			switch {
			case hb != nil && hg != nil && p.releasedBefore(hg, hb):
				continue
			case hb == nil || hg == nil || !p.releasedBefore(hb, hg):
				uncertain++
				continue
			}
		}
		res.add(Violation{Check: verdict.Fencing, Lock: g.Lock, Message: fmt.Sprintf(
			"lock %q granted token %d to process %d at %s (line %d) after token %d to process %d at %s (line %d): a grant's token must be above every earlier grant's",
			g.Lock, tok, g.Process, fmtNS(g.To), g.Done+1, p.ev[b.Done].Token, b.Process, fmtNS(b.To), b.Done+1),
			Lines: lines(int(b.Done+1), int(g.Done+1))}, opts.MaxViolations)
	}
	return uncertain, tokened
}

// holdAt is process's certain hold open at time t.
func holdAt(holds []Hold, process int, t int64) (Hold, bool) {
	for _, h := range holds {
		if h.Certain && h.Process == process && h.From <= t && (h.To < 0 || t <= h.To) {
			return h, true
		}
	}
	return Hold{}, false
}

// grantedSince reports whether another hold of h's lock began after h's
// grant and by t: then h was no longer the latest grant.
func grantedSince(holds []Hold, h Hold, t int64) bool {
	for _, x := range holds {
		if x.Lock == h.Lock && x.Process != h.Process && x.From > h.From && x.From <= t {
			return true
		}
	}
	return false
}

// lostSince reports a lease-lost of process in [from, to].
func lostSince(lost []Mark, process int, from, to int64) bool {
	for _, m := range lost {
		if m.Process == process && m.Time >= from && m.Time <= to {
			return true
		}
	}
	return false
}

// keyGone reports whether the harness saw h's key deleted while h held.
func keyGone(dels []deletion, h Hold) bool {
	for _, d := range dels {
		if d.hold.Process == h.Process && d.hold.Token == h.Token && d.hold.From == h.From {
			return true
		}
	}
	return false
}
