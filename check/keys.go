package check

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/stats"
	"github.com/lockbench/lockbench/verdict"
)

// CheckSymmetry fails when a process released a lock it did not hold, or
// when a holder's lock key was deleted by someone else while it still held
// the lock: only the client that holds a lock may release it.
//
// A release (its invoke, or a completion with none) by a process with no
// acquire of that lock before it that was granted or of unknown outcome
// and not since released (a release that ended ok) is a violation: the
// history alone shows it. A holder that learned its lease was lost, or
// crashed, and then releases its old grant held that grant and is not one
// (the late-unlock scenario: what it deletes is the key-deleted side).
//
// It reads the harness's key-deleted events (history.
// FKeyDeleted): a deletion of the key whose create revision is a certain
// holder's token, observed before that holder's release, crash or lost
// lease, with its lease still alive (cause "delete") — so neither its own
// release nor its lease's expiry removed it. This is how an Unlock that
// deletes by name removes its successor's lock (etcd #22082), even when no
// third client takes the lock in between. Without key-deleted events the
// verdict is pass with a note.
func CheckSymmetry(events []history.Event, opts Options) Result {
	return prepare(events).symmetry(opts.WithDefaults())
}

// CheckLease fails on a lease lost with no fault to explain it: a
// lease-lost event, or a holder's key deleted by its lease's expiry while
// it held, when no fault on that client or on the members was on within
// the recovery bound (see CheckLiveness) — a keepalive bug, not chaos.
//
// It also fails on a holder told too late: one whose key the harness saw
// go with its lease (expired or revoked) while it held, and that went on
// believing — until its lease-lost, release or crash, or to the history's
// end — for longer than Options.OverrunBound, the overrun its keepalive
// policy allows, not counting time it was paused. Whatever faults
// explain the loss, the holder must hear of it in time: a lock whose
// holder is never told fails here.
//
// Metrics: losses (leases lost while holding, seen either way), and
// belief_overrun_ms_max / belief_overrun_ms_p50 over the holders whose key
// the harness saw expire: the time from the expiry to the moment the
// holder stopped (its lease-lost, release or crash; the end of the history
// if it never did). Negative means the client gave up first.
//
// And "waiting after lease loss" (etcd #19597), figures only: for every
// waiter whose queue key the harness saw go with its lease while its
// acquire was pending (a key-deleted event naming the waiter,
// history.KeyDeletion.Waiter), how long that acquire went on — to its
// completion, its process's crash or the history's end — not counting
// time paused: waiter_lease_losses, waiting_after_lease_loss_ms_max and
// waiting_after_lease_loss_ms_p50. A lock whose waiter learns of it
// returns at once; one that waits for its predecessor to release first
// (the bug) goes on for the rest of that hold.
func CheckLease(events []history.Event, opts Options) Result {
	return prepare(events).lease(opts.WithDefaults())
}

// deletion is a key-deleted event matched to the hold it ended.
type deletion struct {
	event int
	time  int64
	cause string
	hold  Hold // the certain hold whose key it was
}

// deletionsUnderHolders lists the key deletions observed while the key's
// holder still held, and whether the history has key-deleted events.
// Symmetry, lease and fencing all read it: it is found once.
func (p *prepared) deletionsUnderHolders() ([]deletion, bool) {
	if !p.delsDone {
		p.dels, p.delsSeen = p.findDeletions()
		p.delsDone = true
	}
	return p.dels, p.delsSeen
}

// leaseExcused is the windows in which a lease that process lost is
// explained by a fault (leaseExcuses), built once per process.
func (p *prepared) leaseExcused(process int, r int64) []window {
	key := [2]int64{int64(process), r}
	p.excusesMu.Lock() // checks that run side by side share the memo
	defer p.excusesMu.Unlock()
	ws, ok := p.excuses[key]
	if !ok {
		if p.excuses == nil {
			p.excuses = map[[2]int64][]window{}
		}
		ws = leaseExcuses(p.faultEffects(), process, r, p.endTime)
		p.excuses[key] = ws
	}
	return ws
}

func (p *prepared) findDeletions() ([]deletion, bool) {
	var dels []int
	for k := range p.n() {
		if i := p.at(k); p.op(i) == opKeyDeleted {
			dels = append(dels, i)
		}
	}
	if len(dels) == 0 {
		return nil, false
	}
	byToken := map[int64][]Hold{}
	for _, i := range dels {
		byToken[p.ev[i].Token] = nil
	}
	for _, h := range p.ops().Holds {
		if _, deleted := byToken[h.Token]; deleted && h.Certain && h.Token != 0 {
			byToken[h.Token] = append(byToken[h.Token], h)
		}
	}
	var out []deletion
	for _, i := range dels {
		e := &p.ev[i]
		var d history.KeyDeletion
		_ = json.Unmarshal(e.Value, &d) // unknown cause: not "delete"
		for _, h := range byToken[e.Token] {
			if h.From <= e.Time && (h.To < 0 || e.Time < h.To) {
				out = append(out, deletion{event: i, time: e.Time, cause: d.Cause, hold: h})
			}
		}
	}
	return out, true
}

func (p *prepared) symmetry(opts Options) Result {
	res := Result{Verdict: verdict.Pass}
	p.releasesWithoutGrant(&res, opts)
	dels, seen := p.deletionsUnderHolders()
	for _, d := range dels {
		if d.cause != history.CauseDelete {
			continue
		}
		msg := fmt.Sprintf("process %d's lock key (token %d, %q) was deleted at %s while it still held the lock (since %s), "+
			"with its lease alive: not by its own release, nor by its lease's expiry",
			d.hold.Process, d.hold.Token, d.hold.Lock, fmtNS(d.time), fmtNS(d.hold.From))
		res.add(Violation{Check: verdict.Symmetry, Lock: d.hold.Lock, Message: msg, Holders: []Holder{d.hold.Holder},
			Lines: lines(d.event+1, d.hold.FromLine)}, opts.MaxViolations)
	}
	if !seen {
		res.Note = "no key-deleted events: the history does not say who deleted lock keys"
	}
	res.finish()
	return res
}

// releasesWithoutGrant adds a violation for each release by a process
// that held no grant of that lock (see CheckSymmetry), in time order.
func (p *prepared) releasesWithoutGrant(res *Result, opts Options) {
	// per slot: index+1 of the acquire that may hold it, and of the release
	// (ok) that ended the last one
	held := make([]int32, len(p.slotProc))
	released := make([]int32, len(p.slotProc))
	for k := range p.n() {
		i := p.at(k)
		op, ty := p.op(i), p.ty(i)
		if op != opAcquire && op != opRelease || p.ev[i].Process < 0 {
			continue
		}
		start := ty == tyInvoke || completion(ty) && p.ended[i] < 0 // an operation, not its end
		if !start {
			continue
		}
		out := outcomeOfType(ty)
		if ty == tyInvoke {
			out = p.outcome(i)
		}
		s := p.slot[i]
		if op == opAcquire {
			if out != OutcomeFail {
				held[s], released[s] = int32(i)+1, 0
			}
			continue
		}
		if held[s] == 0 {
			e := &p.ev[i]
			msg := fmt.Sprintf("process %d released lock %q at %s (line %d) but held no grant of it", e.Process, p.locks[p.slotLock[s]], fmtNS(e.Time), i+1)
			ls := lines(i + 1)
			if r := released[s]; r > 0 {
				msg += fmt.Sprintf(": it released it at %s (line %d) and acquired it no more", fmtNS(p.ev[r-1].Time), r)
				ls = lines(int(r), i+1)
			} else {
				msg += ": no acquire of it before was granted or of unknown outcome"
			}
			res.add(Violation{Check: verdict.Symmetry, Lock: p.locks[p.slotLock[s]], Message: msg, Lines: ls}, opts.MaxViolations)
			continue
		}
		if out == OutcomeOK {
			held[s], released[s] = 0, int32(i)+1
		}
	}
}

func (p *prepared) lease(opts Options) Result {
	res := Result{Verdict: verdict.Pass}
	p.waitingAfterLoss(&res)
	dels, _ := p.deletionsUnderHolders()
	if len(dels) == 0 && !p.has(opLeaseLost) {
		res.metric("losses", 0)
		return res
	}
	o := p.ops()
	r := int64(opts.LivenessBound + opts.RecoverySlack)
	explained := func(process int, t int64) bool {
		return uncovered(p.leaseExcused(process, r), t-1, t) < 0
	}
	losses := 0
	for _, m := range o.LeaseLost {
		losses++
		if !explained(m.Process, m.Time) {
			res.add(Violation{Check: verdict.Lease, Lock: m.Lock, Message: fmt.Sprintf(
				"process %d lost its lease at %s with no fault on it or on the members since %s before",
				m.Process, fmtNS(m.Time), time.Duration(r)), Lines: lines(m.Event + 1)}, opts.MaxViolations)
		}
	}
	var overruns []int64
	for _, d := range dels {
		if d.cause != history.CauseLease {
			continue
		}
		losses++
		stop := d.hold.To
		if stop < 0 {
			stop = p.endTime
		}
		overruns = append(overruns, stop-d.time)
		p.judgeOverrun(&res, d, stop, opts)
		if !explained(d.hold.Process, d.time) {
			res.add(Violation{Check: verdict.Lease, Lock: d.hold.Lock, Message: fmt.Sprintf(
				"process %d's lease expired at %s while it held the lock (token %d) and it was not told; no fault was on it or on the members",
				d.hold.Process, fmtNS(d.time), d.hold.Token), Holders: []Holder{d.hold.Holder},
				Lines: lines(d.event+1, d.hold.FromLine)}, opts.MaxViolations)
		}
	}
	res.finish()
	res.metric("losses", float64(losses))
	if len(overruns) > 0 {
		slices.Sort(overruns)
		res.metric("belief_overrun_ms_max", ms(overruns[len(overruns)-1]))
		res.metric("belief_overrun_ms_p50", ms(stats.NearestRank(overruns, 0.5)))
	}
	return res
}

// judgeOverrun adds a violation when the holder of d's key believed
// longer than opts.OverrunBound after the key went with its lease, its
// paused time not counted (see CheckLease).
func (p *prepared) judgeOverrun(res *Result, d deletion, stop int64, opts Options) {
	if opts.OverrunBound < 0 {
		return
	}
	h := d.hold
	over := stop - d.time - pausedWithin(p.ops().Pauses, h.Process, d.time, stop)
	if over <= int64(opts.OverrunBound) {
		return
	}
	var how string
	switch h.End {
	case EndLeaseLost:
		how = fmt.Sprintf("was told its lease was lost only at %s", fmtNS(stop))
	case EndRelease:
		how = fmt.Sprintf("was never told its lease was lost: it held until it released at %s", fmtNS(stop))
	case EndCrash:
		how = fmt.Sprintf("was never told its lease was lost: it held until it crashed at %s", fmtNS(stop))
	default:
		how = "was never told its lease was lost: it still held at the end of the history"
	}
	res.add(Violation{Check: verdict.Lease, Lock: h.Lock, Message: fmt.Sprintf(
		"process %d's key (token %d) went with its lease at %s while it held the lock, and it %s — "+
			"a belief overrun of %s (time paused not counted), past the %s its keepalive policy allows",
		h.Process, h.Token, fmtNS(d.time), how, time.Duration(over).Round(time.Millisecond), opts.OverrunBound),
		Holders: []Holder{h.Holder}, Lines: lines(d.event+1, h.FromLine, h.ToLine)}, opts.MaxViolations)
}

// pausedWithin is how long process was paused within [from, to): a
// frozen process cannot be told anything, so its pause is not its
// keepalive's lateness.
func pausedWithin(pauses []Span, process int, from, to int64) int64 {
	var sum int64
	for _, sp := range pauses {
		if sp.Process != process {
			continue
		}
		end := sp.To
		if end < 0 {
			end = to
		}
		if lo, hi := max(sp.From, from), min(end, to); hi > lo {
			sum += hi - lo
		}
	}
	return sum
}

// waitingAfterLoss sets the "waiting after lease loss" figures (see
// CheckLease).
func (p *prepared) waitingAfterLoss(res *Result) {
	var byProc map[int][]Op
	var took []int64
	for k := range p.n() {
		i := p.at(k)
		if p.op(i) != opKeyDeleted {
			continue
		}
		var d history.KeyDeletion
		if json.Unmarshal(p.ev[i].Value, &d) != nil || d.Waiter == nil || d.Cause != history.CauseLease {
			continue
		}
		if byProc == nil {
			byProc = acquiresByProcess(p.ops())
		}
		t := p.ev[i].Time
		as := byProc[*d.Waiter]
		// the waiter's last acquire invoked by t: the one it was in
		j := sort.Search(len(as), func(j int) bool { return as[j].From > t }) - 1
		if j < 0 {
			continue
		}
		stop := as[j].To
		if stop < 0 {
			stop = p.endTime
		}
		took = append(took, max(stop-t-pausedWithin(p.ops().Pauses, *d.Waiter, t, stop), 0))
	}
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	res.metric("waiter_lease_losses", float64(len(took)))
	res.metric("waiting_after_lease_loss_ms_max", ms(took[len(took)-1]))
	res.metric("waiting_after_lease_loss_ms_p50", ms(stats.NearestRank(took, 0.5)))
}

// acquiresByProcess lists each process's acquires, by invoke time.
func acquiresByProcess(o *Ops) map[int][]Op {
	out := map[int][]Op{}
	for _, a := range o.Acquires {
		if a.Invoke >= 0 {
			out[int(a.Process)] = append(out[int(a.Process)], a)
		}
	}
	return out
}
