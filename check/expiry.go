package check

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// EarlyExpirySlack is how much earlier than its promise a lease's key may
// be seen deleted before the expiry check calls it early: room for the
// client's reading of a renewal's send time before the request left, on
// one machine's clock (a merged history adds its clocks' uncertainty).
const EarlyExpirySlack = 100 * time.Millisecond

// CheckExpiry judges the lease as etcd promises it, from the leases'
// renewals the clients saw answered (lease-op events) and the keys the
// harness watched (key-op, key-deleted):
//
//   - early: a key deleted because its lease ended (key-deleted, cause
//     lease) earlier than a TTL after the send of the lease's last renewal
//     answered before the delete, by more than EarlyExpirySlack and the
//     clocks' uncertainty, when neither the client nor an operator
//     (revoke-lease) had revoked it: etcd renewed at or after the send,
//     so the lease had at least a TTL left (etcd #15247: every lease
//     revoked by a leader stuck in its apply loop).
//   - late: a key of an abandoned lease — its client crashed, was told
//     its lease was lost, or sent a revoke — still there later than a TTL
//     after the last renewal answered whose request was sent before, plus
//     Options.ElectionTimeout and Options.RecoverySlack (etcd #20273: a
//     new leader gives every lease a full TTL again; PR #21126: a client
//     that reports its lease lost goes on renewing it). While the members
//     may have no leader (from a member fault's start, or its end, to two
//     elections later) nothing expires: an expiry due then is due when
//     the window ends.
//
// Metrics: leases, early_expiries, abandoned_keys (keys of abandoned
// leases judged), late_keys, key_outlived_lease_ms_max (the longest a
// judged key stayed past its last renewal's answer plus the TTL), and
// expiry_bound_ms (the late bound beyond the TTL). A history without
// lease-op events (an older one, or a backend without leases) is not
// judged.
func CheckExpiry(events []history.Event, opts Options) Result {
	return prepare(events).expiry(opts.WithDefaults())
}

func (p *prepared) expiry(opts Options) Result {
	res := Result{Verdict: verdict.Pass}
	lk := p.leaseKeys()
	res.metric("leases", float64(len(lk.leases)))
	res.metric("expiry_bound_ms", ms(int64(opts.ElectionTimeout+opts.RecoverySlack)))
	if len(lk.leases) == 0 {
		res.nothingToJudge("the history records no lease's grant or renewal (lease-op events): an older history, or a backend without leases")
		return res
	}
	early := p.earlyExpiries(&res, lk, opts)
	late := p.lateKeys(&res, lk, opts)
	res.finish()
	if early+late == 0 {
		res.nothingToJudge("no key went with its lease and no lease was abandoned while it kept a key")
	}
	return res
}

// earlyExpiries judges every key deleted with its lease; it returns how
// many it judged.
func (p *prepared) earlyExpiries(res *Result, lk *leaseKeys, opts Options) int {
	judged, early := 0, 0
	effects := p.faultEffects()
	for k := range p.n() {
		i := p.at(k)
		if p.op(i) != opKeyDeleted {
			continue
		}
		e := &p.ev[i]
		var d history.KeyDeletion
		if json.Unmarshal(e.Value, &d) != nil || d.Cause != history.CauseLease || d.Lease == "" {
			continue
		}
		l := lk.leases[d.Lease]
		if l == nil || l.revoked >= 0 && l.revoked <= e.Time || revokedByOperator(effects, l.owner, e.Time) {
			continue
		}
		last, ok := lastPromise(l, e.Time)
		if !ok {
			continue
		}
		judged++
		promise := last.sent + last.ttl
		slack := int64(EarlyExpirySlack) + 2*p.clockUncertainty().of(l.owner)
		if promise-e.Time <= slack {
			continue
		}
		early++
		res.add(Violation{Check: verdict.Expiry, Lock: e.Lock, Lines: lines(last.line, i+1),
			Message: fmt.Sprintf("process %d's lease %s ended and took its key at %s (seen then), %s before the TTL (%s) from its last renewal answered (sent at %s, answered at %s) ran out: etcd expired a lease its client kept renewing",
				l.owner, l.id, fmtNS(e.Time), time.Duration(promise-e.Time).Round(time.Millisecond), time.Duration(last.ttl), fmtNS(last.sent), fmtNS(last.answered))},
			opts.MaxViolations)
	}
	res.metric("early_expiries", float64(early))
	return judged
}

// bestRenewal is, among l's renewals that in accepts, the one whose TTL
// runs out last counted from the time from gives it.
func bestRenewal(l *leaseRec, in func(renewal) bool, from func(renewal) int64) (renewal, bool) {
	var best renewal
	ok := false
	for _, r := range l.renewals {
		if in(r) && (!ok || from(r)+r.ttl > from(best)+best.ttl) {
			best, ok = r, true
		}
	}
	return best, ok
}

// lastPromise is the renewal of l answered by t whose TTL, from its
// send, runs out last: the least the server promised at t.
func lastPromise(l *leaseRec, t int64) (renewal, bool) {
	return bestRenewal(l, func(r renewal) bool { return r.answered <= t }, func(r renewal) int64 { return r.sent })
}

// revokedByOperator reports whether a revoke-lease fault on process
// started by t: its lease's end is then the operator's, not an expiry.
func revokedByOperator(effects []faultEffect, process int, t int64) bool {
	for _, f := range effects {
		if f.cost == chaos.CostRevoke && f.process == process && f.from <= t {
			return true
		}
	}
	return false
}

// lateKeys judges the keys of every abandoned lease; it returns how many
// it judged.
func (p *prepared) lateKeys(res *Result, lk *leaseKeys, opts Options) int {
	o := p.ops()
	owned := lk.ownersLeases()
	election, slack := int64(opts.ElectionTimeout), int64(opts.RecoverySlack)
	leaderless := leaderlessWindows(p.faultEffects(), election)
	busy := mergeWindows(append(slices.Clone(leaderless), p.stalls(opts)...))
	judged, late := 0, 0
	var outlived int64
	for _, l := range lk.leases {
		at, why, line := abandoned(l, o, owned[l.owner])
		if at < 0 {
			continue
		}
		r, ok := lastBefore(l, at)
		if !ok {
			continue
		}
		due := dueAfter(r.answered, r.ttl, leaderless)
		deadline := stretch(due, due+election+slack, election+slack, busy)
		for _, x := range lk.byLease[l.id] {
			key := &lk.keys[x]
			if key.to >= 0 && key.to <= at {
				continue // gone before the lease was abandoned
			}
			gone := key.to
			if gone < 0 {
				if o.End <= deadline {
					continue // the history ended before the bound: not judged
				}
				gone = o.End
			}
			judged++
			outlived = max(outlived, gone-(r.answered+r.ttl))
			if gone <= deadline {
				continue
			}
			late++
			res.add(Violation{Check: verdict.Expiry, Lock: key.lock, Lines: lines(r.line, line, key.fromLine, key.toLine),
				Message: lateMessage(l, key, r, why, at, due, deadline)}, opts.MaxViolations)
		}
	}
	res.metric("abandoned_keys", float64(judged))
	res.metric("late_keys", float64(late))
	if judged > 0 {
		res.metric("key_outlived_lease_ms_max", ms(outlived))
	}
	return judged
}

// lateMessage says how long a key outlived its abandoned lease.
func lateMessage(l *leaseRec, key *keyRec, r renewal, why string, at, due, deadline int64) string {
	gone := "was still there when the history ended"
	if key.to >= 0 {
		gone = "was deleted only at " + fmtNS(key.to)
	}
	leaderless := ""
	if due > r.answered+r.ttl {
		leaderless = fmt.Sprintf(" (due at %s: the members may have had no leader when it ran out)", fmtNS(due))
	}
	return fmt.Sprintf("process %d's lease %s was abandoned at %s (%s); its key on %q (create revision %d) %s, past %s: "+
		"a TTL (%s) after its last renewal answered before (at %s)%s plus an election timeout and slack — a dead lease's key outlived it",
		l.owner, l.id, fmtNS(at), why, key.lock, key.created, gone, fmtNS(deadline), time.Duration(r.ttl), fmtNS(r.answered), leaderless)
}

// abandoned is when l's client gave it up, and how: its revoke sent, its
// crash, or its being told its lease was lost while l was its latest
// lease; -1 when it never did.
func abandoned(l *leaseRec, o *Ops, mine []*leaseRec) (at int64, why string, line int) {
	at = -1
	take := func(t int64, w string, ln int) {
		if t >= l.granted() && (at < 0 || t < at) {
			at, why, line = t, w, ln
		}
	}
	if l.revoked >= 0 {
		take(l.revoked, "its client sent a revoke", l.revokeLine)
	}
	for _, c := range o.Crashes {
		if c.Process == l.owner {
			take(c.Time, "its client crashed", c.Event+1)
		}
	}
	for _, m := range o.LeaseLost {
		if m.Process == l.owner && latestAt(mine, m.Time) == l {
			take(m.Time, "its client was told its lease was lost", m.Event+1)
		}
	}
	return at, why, line
}

// latestAt is the lease of ls (in grant order) granted last by t.
func latestAt(ls []*leaseRec, t int64) *leaseRec {
	var out *leaseRec
	for _, l := range ls {
		if l.granted() <= t {
			out = l
		}
	}
	return out
}

// lastBefore is, among l's renewals sent by t, the one whose TTL, from
// its answer, runs out last: the most the server may have promised.
func lastBefore(l *leaseRec, t int64) (renewal, bool) {
	return bestRenewal(l, func(r renewal) bool { return r.sent <= t }, func(r renewal) int64 { return r.answered })
}

// stalls are the history's stretches in which the members were not
// answering in time (leaseKeys.stalls): a renewal answered later than the
// request deadline (DefaultRequestTimeout when the clients had none), or
// no answer for longer than half the longest TTL plus an election.
func (p *prepared) stalls(opts Options) []window {
	lk := p.leaseKeys()
	request := opts.RequestTimeout
	if request < 0 {
		request = DefaultRequestTimeout
	}
	return lk.stalls(int64(request), lk.maxTTL()/2+int64(opts.ElectionTimeout), p.ops().End)
}

// leaderlessWindows are the stretches in which the members may have had
// no leader, so that no lease could run out: from each member fault's
// start, and its end, to two elections later (a pre-vote round and a
// split vote); while faults on two different members overlap (a quorum
// of three lost), their whole overlap and two elections after; a slowed
// member's whole span, and two elections after. A leader transfer
// (move-leader) hands over at once: no window.
func leaderlessWindows(effects []faultEffect, election int64) []window {
	var ws []window
	for k, f := range effects {
		if !f.member && !(f.cost == chaos.CostSlowdown && f.process < 0) || chaos.HandsOver(f.name) {
			continue
		}
		switch {
		case f.to < 0:
			ws = append(ws, window{f.from, 1 << 62})
		case f.cost == chaos.CostSlowdown:
			ws = append(ws, window{f.from, f.to + 2*election})
		default:
			ws = append(ws, window{f.from, f.from + 2*election}, window{f.to, f.to + 2*election})
		}
		for _, g := range effects[k+1:] {
			if g.member && !chaos.HandsOver(g.name) && g.target != f.target && g.from < endOf(f) && f.from < endOf(g) {
				ws = append(ws, window{max(f.from, g.from), min(endOf(f), endOf(g)) + 2*election})
			}
		}
	}
	return mergeWindows(ws)
}

// endOf is a fault's end, far in the future when it never ended.
func endOf(f faultEffect) int64 {
	if f.to < 0 {
		return 1 << 62
	}
	return f.to
}

// dueAfter is when a lease renewed at from for ttl runs out, counting
// only time with a leader (outside ws): a lease's remaining life does not
// run down while no leader can expire it, as a new leader that kept its
// remaining TTL (etcd #20273 asks for it) would see it.
func dueAfter(from, ttl int64, ws []window) int64 {
	due := from + ttl
	for {
		next := from + ttl
		for _, w := range ws {
			next += max(min(w.to, due)-max(w.from, from), 0)
		}
		if next == due || next >= 1<<62 {
			return next
		}
		due = next
	}
}
