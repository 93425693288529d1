package check

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/history"
)

// window is a stretch of history time [from, to) that faults excuse.
type window struct{ from, to int64 }

// faultEffect is one fault as the checks weigh it: when it started and
// ended, whom it touched and what it may cost a correct lock.
type faultEffect struct {
	cost     chaos.Cost
	from, to int64 // to: the undo's time, or -1 if never undone
	// process is the client it touched (a client fault, or a pause), -1
	// for a member fault or one with no target.
	process int
	// member is set for faults on the cluster's members.
	member bool
	// name and target are the fault's and what it resolved to (a pause:
	// empty): the expiry check tells a leader transfer from a loss, and
	// faults on two members from two on one.
	name, target string
}

// faultEffects is faultEffects of the history's faults, decoded once;
// its callers only read it.
func (p *prepared) faultEffects() []faultEffect {
	p.effectsOnce.Do(func() { p.effects = faultEffects(p.faultOps()) })
	return p.effects
}

// faultEffects lists the faults and pauses of a history. A fault is
// weighed by what it says it costs (chaos.Cost); one this build does not
// know (from another tool's history) by its target.
func faultEffects(o *Ops) []faultEffect {
	var out []faultEffect
	for _, sp := range o.Faults {
		var f history.Fault
		_ = json.Unmarshal(o.Events[sp.Start].Value, &f) // unknown: a generic fault
		target := f.Resolved
		if target == "" {
			target = f.Target
		}
		fe := faultEffect{cost: chaos.CostOf(f.Fault), from: sp.From, to: sp.To, process: -1, name: f.Fault, target: target}
		kind, n, _ := strings.Cut(target, ":")
		if kind == chaos.TClient {
			fe.process, _ = strconv.Atoi(n)
		}
		fe.member = fe.cost == chaos.CostElection ||
			fe.cost == chaos.CostUnknown && (kind == chaos.TMember || kind == chaos.TLeader || kind == chaos.TFollower)
		out = append(out, fe)
	}
	for _, sp := range o.Pauses {
		out = append(out, faultEffect{cost: chaos.CostLease, from: sp.From, to: sp.To, process: sp.Process})
	}
	return out
}

// recovery is, per kind of fault, how long after its start (and, for a
// member fault, after its end) it may keep a correct lock from moving, in
// nanoseconds; quiet is the fault-free bound, which every window is
// widened by at its end (once a fault's cost is paid, the lock has the
// time any stretch has to move on).
type recovery struct {
	lease  int64 // a client fault: TTL + election + slack
	extend int64 // a leader change's extension of leases: TTL + election
	member int64 // a member fault: 2 elections + request deadline + slack
	slow   int64 // after a slowdown ends: request deadline + slack
	quiet  int64
}

// recoveryOf derives the recovery bounds from the options (with
// defaults) and the fault-free bound quiet.
func recoveryOf(o Options, quiet int64) recovery {
	slack := int64(o.RecoverySlack)
	rc := recovery{lease: int64(o.LivenessBound) + slack, extend: int64(o.LivenessBound), quiet: quiet}
	if o.RequestTimeout < 0 {
		rc.member, rc.slow = rc.lease, rc.lease
		return rc
	}
	rc.member = 2*int64(o.ElectionTimeout) + int64(o.RequestTimeout) + slack
	rc.slow = int64(o.RequestTimeout) + slack
	return rc
}

// of is the recovery bound of fault f.
func (rc recovery) of(f faultEffect) int64 {
	switch {
	case f.cost == chaos.CostSlowdown:
		return rc.slow
	case f.member && f.cost != chaos.CostUnknown:
		return rc.member
	}
	return rc.lease // a client fault, or one this build does not know
}

// excuse is how long a fault may keep a lock from being granted, as
// windows of history time, given its recovery bound r. A fault frees the
// lock within r of its start whatever it lasts: a crashed, paused or
// cut-off client's lease expires within a TTL, a lost leader is replaced
// within an election. So:
//   - a client fault (crash, pause, isolation, revoked lease) excuses
//     [start, start+r) with r = TTL + election + slack: its key must
//     expire; its end (a restart, a resume) frees nothing more;
//   - a member fault excuses [start, start+r) and [end, end+r) with r =
//     two elections + the request deadline + slack: no key need expire,
//     but a request stuck on the lost member ends only at its deadline,
//     and a member that rejoins may cost another election;
//   - a slowed client (delay-client) slows every step while it lasts:
//     [start, end+r) with r = the request deadline + slack;
//   - cancelled waits (cancel-waiters) and compactions (a watch from an
//     older revision must start again) excuse nothing: no lease or member
//     is touched, and the lock must move on at once;
//   - a fault that never ends excuses only [start, start+r): a permanent
//     fault is judged too.
func (f faultEffect) excuse(r int64) []window {
	switch {
	case f.cost == chaos.CostCancelledWaits, f.cost == chaos.CostWatchRestart:
		return nil
	case f.cost == chaos.CostSlowdown && f.to < 0:
		return []window{{f.from, 1 << 62}}
	case f.cost == chaos.CostSlowdown:
		return []window{{f.from, f.to + r}}
	case f.process >= 0 || f.to < 0:
		return []window{{f.from, f.from + r}}
	}
	return []window{{f.from, f.from + r}, {f.to, f.to + r}}
}

// excuses are the merged windows a history's faults excuse (see excuse),
// each widened by the fault-free bound, with one addition: a client fault
// near the start of a member fault (a leader change while a dead client's
// lease runs out) excuses a lease bound more, because a leader change
// extends every lease by up to a TTL plus an election.
func excuses(effects []faultEffect, rc recovery) []window {
	var ws []window
	for _, f := range effects {
		ws = append(ws, f.excuse(rc.of(f))...)
		if f.process < 0 || f.cost == chaos.CostSlowdown {
			continue
		}
		for _, m := range effects {
			if m.member && m.from >= f.from-rc.lease && m.from < f.from+rc.lease {
				ws = append(ws, window{f.from, f.from + rc.lease + rc.extend})
				break
			}
		}
	}
	for i := range ws {
		if ws[i].to < 1<<62 {
			ws[i].to += rc.quiet
		}
	}
	return mergeWindows(ws)
}

// mergeWindows sorts windows and joins those that overlap or touch.
func mergeWindows(ws []window) []window {
	slices.SortFunc(ws, func(a, b window) int {
		switch {
		case a.from < b.from:
			return -1
		case a.from > b.from:
			return 1
		}
		return 0
	})
	var out []window
	for _, w := range ws {
		if n := len(out); n > 0 && w.from <= out[n-1].to {
			out[n-1].to = max(out[n-1].to, w.to)
			continue
		}
		out = append(out, w)
	}
	return out
}

// uncovered returns the first time in (from, to] that no window covers,
// or -1 when the windows cover all of it. ws must be merged.
func uncovered(ws []window, from, to int64) int64 {
	cur := from
	for _, w := range ws {
		if w.to <= cur {
			continue
		}
		if w.from > cur {
			break
		}
		cur = w.to
		if cur >= to {
			return -1
		}
	}
	if cur >= to {
		return -1
	}
	return cur + 1
}

// touches reports whether the fault may explain a lease the client
// process lost: a fault on that client, or on the members.
func (f faultEffect) touches(process int) bool {
	return f.member || (f.process == process && f.cost != chaos.CostCancelledWaits)
}

// leaseExcuses are, per process, the windows in which a lost lease is
// explained by a fault: from a fault's start to its end plus r.
func leaseExcuses(effects []faultEffect, process int, r, end int64) []window {
	var ws []window
	for _, f := range effects {
		if f.touches(process) {
			stop := f.to
			if stop < 0 {
				stop = end
			}
			ws = append(ws, window{f.from, stop + r})
		}
	}
	return mergeWindows(ws)
}
