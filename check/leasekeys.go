package check

import (
	"cmp"
	"encoding/json"
	"slices"

	"github.com/lockbench/lockbench/history"
)

// leaseRec is what a history says of one lease (its lease-op events).
type leaseRec struct {
	id    string
	owner int
	// renewals are the grant and the renewals answered alive, in the
	// order their answers came.
	renewals []renewal
	// revoked is when the client first sent a revoke of it, -1 never;
	// revokeLine its line.
	revoked    int64
	revokeLine int
}

// renewal is a grant or a renewal answered alive: when its request was
// sent and its answer came, and the TTL the answer gave.
type renewal struct {
	sent, answered, ttl int64
	line                int
}

// granted is when the lease's grant (or, without one on record, its
// first renewal) was answered.
func (l *leaseRec) granted() int64 { return l.renewals[0].answered }

// keyRec is a key created under a client's lease, as the harness watched
// it (key-op events): when it was seen created and deleted.
type keyRec struct {
	lock    string
	owner   int
	lease   string
	created int64 // create revision
	// from and to are when the create and the delete were seen; to is -1
	// when no delete was.
	from, to         int64
	fromLine, toLine int
}

// leaseKeys are a history's leases and their keys, read once for the
// expiry and orphans checks.
type leaseKeys struct {
	leases map[string]*leaseRec
	// answers are every renewal answer of any lease (alive or gone) and
	// every grant, in the order they came: when the members answered.
	answers []renewal
	// keys are in the order their creates were seen; byLease indexes
	// them by lease.
	keys    []keyRec
	byLease map[string][]int
}

// leaseKeys reads the history's lease-op and key-op events (memoized). A
// malformed value is ignored, as every check ignores what it cannot read.
func (p *prepared) leaseKeys() *leaseKeys {
	p.lkOnce.Do(func() { p.lk = p.readLeaseKeys() })
	return p.lk
}

func (p *prepared) readLeaseKeys() *leaseKeys {
	lk := &leaseKeys{leases: map[string]*leaseRec{}, byLease: map[string][]int{}}
	open := map[[2]any]int{} // live keys by (lease, create revision)
	for k := range p.n() {
		i := p.at(k)
		e := &p.ev[i]
		switch p.op(i) {
		case opLeaseOp:
			var v history.LeaseOp
			if json.Unmarshal(e.Value, &v) == nil && v.Lease != "" {
				lk.leaseOp(v, e.Time, i+1)
			}
		case opKeyOp:
			var v history.KeyOp
			if json.Unmarshal(e.Value, &v) != nil || v.Lease == "" {
				continue
			}
			switch v.Op {
			case history.KeyCreate:
				open[[2]any{v.Lease, v.Revision}] = len(lk.keys)
				lk.byLease[v.Lease] = append(lk.byLease[v.Lease], len(lk.keys))
				lk.keys = append(lk.keys, keyRec{lock: e.Lock, owner: v.Owner, lease: v.Lease, created: v.Revision,
					from: e.Time, to: -1, fromLine: i + 1})
			case history.KeyDelete:
				if x, ok := open[[2]any{v.Lease, v.Created}]; ok {
					delete(open, [2]any{v.Lease, v.Created})
					lk.keys[x].to, lk.keys[x].toLine = e.Time, i+1
				}
			}
		}
	}
	return lk
}

// leaseOp adds one lease-op event, answered (or, a revoke, sent) at t on
// line.
func (lk *leaseKeys) leaseOp(v history.LeaseOp, t int64, line int) {
	l := lk.leases[v.Lease]
	if l == nil {
		l = &leaseRec{id: v.Lease, owner: v.Owner, revoked: -1}
	}
	if (v.Op == history.LeaseGrant || v.Op == history.LeaseRenew || v.Op == history.LeaseGone) && v.SentNS <= t {
		lk.answers = append(lk.answers, renewal{sent: v.SentNS, answered: t, ttl: v.TTLNS, line: line})
	}
	switch v.Op {
	case history.LeaseGrant, history.LeaseRenew:
		if v.TTLNS <= 0 || v.SentNS > t {
			return
		}
		l.renewals = append(l.renewals, renewal{sent: v.SentNS, answered: t, ttl: v.TTLNS, line: line})
	case history.LeaseRevoke:
		if l.revoked < 0 {
			l.revoked, l.revokeLine = t, line
		}
	}
	if len(l.renewals) > 0 {
		lk.leases[v.Lease] = l // a lease is judged only once it was seen alive
	}
}

// ownersLeases are each owner's leases in the order they were granted.
func (lk *leaseKeys) ownersLeases() map[int][]*leaseRec {
	out := map[int][]*leaseRec{}
	for _, l := range lk.leases {
		out[l.owner] = append(out[l.owner], l)
	}
	for _, ls := range out {
		slices.SortFunc(ls, func(a, b *leaseRec) int { return cmp.Compare(a.granted(), b.granted()) })
	}
	return out
}

// stalls are the stretches in which the members were not answering in
// time, so that they may have committed nothing (a leader stuck on a slow
// disk, a starved machine): a lease's end, which is a commit, may come
// only after. They are every renewal or grant answered more than
// request later than it was sent, from its send to its answer, and every
// gap between two answers of any lease (or from the last to the
// history's end) longer than gap.
func (lk *leaseKeys) stalls(request, gap, end int64) []window {
	var ws []window
	last := int64(-1)
	for _, a := range lk.answers {
		if a.answered-a.sent > request {
			ws = append(ws, window{a.sent, a.answered})
		}
		if last >= 0 && a.answered-last > gap {
			ws = append(ws, window{last, a.answered})
		}
		last = max(last, a.answered)
	}
	if last >= 0 && end-last > gap {
		ws = append(ws, window{last, end})
	}
	return mergeWindows(ws)
}

// maxTTL is the longest TTL any lease was given.
func (lk *leaseKeys) maxTTL() int64 {
	var out int64
	for _, a := range lk.answers {
		out = max(out, a.ttl)
	}
	return out
}

// stretch is deadline (for something due at due) moved past every window
// of ws that overlaps [due, deadline): what was due in it may come only
// once it ends, plus after.
func stretch(due, deadline, after int64, ws []window) int64 {
	for changed := true; changed; {
		changed = false
		for _, w := range ws {
			if w.from < deadline && w.to > due && w.to+after > deadline {
				deadline, changed = w.to+after, true
			}
		}
	}
	return deadline
}
