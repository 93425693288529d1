package check

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// CheckOrphans fails when a key a client created for a lock (key-op
// events: created under its lease) stayed after the client was done with
// it — its Unlock returned nil, or its Lock returned an error (cancelled
// or not) — for longer than the orphan bound: a key left under a live
// lease is a lock nobody can take (a release whose failure was swallowed;
// a join retried under a new key that forgot the first).
//
// A key is the client's acquire's whose invoke came last before the key
// was seen created (the watch sees a create after the call may have
// returned). From that acquire on, each time the client was done with
// the lock (the acquire's error, or its release's nil, or a later one's)
// the key must be gone within the bound: Options.RequestTimeout +
// Options.RecoverySlack, the time a cleanup request takes plus a loaded
// machine, stretched to that much past the end of any fault on that
// client or on the members that overlaps it (a cut-off client cannot
// delete). A next acquire of the same lock by the client within the
// bound may take the key over (etcd's Mutex reuses its session's key), so
// the key is then judged at that acquire's end instead; a crash ends the
// judgement (the lease's end is the expiry check's). A key the history
// ends with, before its bound, is not judged.
//
// Metrics: orphans_judged (keys judged), orphans, orphan_ms_max (the
// longest a judged key stayed past its client's being done with it), and
// orphan_bound_ms. A history without key-op events (an older one, or a
// backend the harness cannot watch for creates) is not judged.
func CheckOrphans(events []history.Event, opts Options) Result {
	return prepare(events).orphans(opts.WithDefaults())
}

// orphanBound is the orphan bound outside faults.
func orphanBound(opts Options) int64 {
	return int64(max(opts.RequestTimeout, 0) + opts.RecoverySlack)
}

// done is a moment a client was done with a lock: an acquire's error or a
// release's nil.
type done struct {
	at   int64
	line int
	how  string
}

// clientLock is one client's calls on one lock, in time order: its
// acquires' invokes, the moments it was done with the lock, and when its
// keys on the lock were seen created.
type clientLock struct {
	invokes []int64
	dones   []done
	creates []int64
}

// madeKey reports whether the client's n-th acquire made a key of its own
// (one seen created after its invoke and before the next's): then it did
// not take an earlier key over.
func (cl *clientLock) madeKey(n int) bool {
	k, _ := slices.BinarySearch(cl.creates, cl.invokes[n]+1)
	return k < len(cl.creates) && (n+1 == len(cl.invokes) || cl.creates[k] <= cl.invokes[n+1])
}

func (p *prepared) orphans(opts Options) Result {
	res := Result{Verdict: verdict.Pass}
	lk := p.leaseKeys()
	bound := orphanBound(opts)
	res.metric("orphan_bound_ms", ms(bound))
	if len(lk.keys) == 0 {
		res.nothingToJudge("the history records no key created under a client's lease (key-op events): an older history, or a backend whose keys the harness cannot watch")
		return res
	}
	o := p.ops()
	calls := callsByClientLock(o)
	for _, key := range lk.keys {
		if cl := calls[[2]any{key.owner, key.lock}]; cl != nil {
			cl.creates = append(cl.creates, key.from)
		}
	}
	crashes := map[int][]int64{}
	for _, c := range o.Crashes {
		crashes[c.Process] = append(crashes[c.Process], c.Time)
	}
	effects, stalls := p.faultEffects(), p.stalls(opts)
	judged, orphans := 0, 0
	var longest int64
	for x := range lk.keys {
		key := &lk.keys[x]
		cl := calls[[2]any{key.owner, key.lock}]
		if cl == nil {
			continue
		}
		d, stayed, allowed, ok := judgeOrphan(key, cl, crashes[key.owner], effects, stalls, bound, o.End)
		if !ok {
			continue
		}
		judged++
		longest = max(longest, stayed)
		if stayed <= allowed {
			continue
		}
		orphans++
		gone := "was still there when the history ended, " + time.Duration(stayed).Round(time.Millisecond).String() + " later"
		if key.to >= 0 {
			gone = fmt.Sprintf("was deleted only at %s, %s later", fmtNS(key.to), time.Duration(stayed).Round(time.Millisecond))
		}
		res.add(Violation{Check: verdict.Orphans, Lock: key.lock, Lines: lines(d.line, key.fromLine, key.toLine),
			Message: fmt.Sprintf("process %d's key on %q (create revision %d, lease %s) %s after %s at %s: a key left behind under a live lease, past the %s bound",
				key.owner, key.lock, key.created, key.lease, gone, d.how, fmtNS(d.at), time.Duration(allowed).Round(time.Millisecond))},
			opts.MaxViolations)
	}
	res.finish()
	res.metric("orphans_judged", float64(judged))
	res.metric("orphans", float64(orphans))
	if judged == 0 {
		res.nothingToJudge("no key of a released or failed acquire lived to its bound within the history")
		return res
	}
	res.metric("orphan_ms_max", ms(longest))
	return res
}

// judgeOrphan finds the moment key is judged from: the first moment its
// client was done with the lock after the acquire that made it, or, when
// the client invoked another acquire of the lock within the bound that
// made no key of its own (it may have taken this one over), the first
// after that one. It returns that
// moment, how long the key stayed after it and how long it was allowed
// to (the bound, stretched by faults); ok is false when the key
// is not judged (no such moment, a crash within the bound, or the
// history's end before it).
func judgeOrphan(key *keyRec, cl *clientLock, crashes []int64, effects []faultEffect, stalls []window, bound, end int64) (d done, stayed, allowed int64, ok bool) {
	k, _ := slices.BinarySearch(cl.invokes, key.from+1)
	if k == 0 {
		return done{}, 0, 0, false // made before any acquire of the lock: not a call's
	}
	from := cl.invokes[k-1]
	for {
		j, _ := slices.BinarySearchFunc(cl.dones, from, func(d done, t int64) int { return cmp.Compare(d.at, t) })
		if j == len(cl.dones) {
			return done{}, 0, 0, false
		}
		d = cl.dones[j]
		deadline := orphanDeadline(d.at, key.owner, effects, stalls, bound)
		allowed = deadline - d.at
		if key.to >= 0 && key.to <= deadline {
			return d, max(key.to-d.at, 0), allowed, true
		}
		if hasIn(crashes, d.at, deadline) || key.to < 0 && end <= deadline {
			return done{}, 0, 0, false
		}
		if n, _ := slices.BinarySearch(cl.invokes, d.at+1); n < len(cl.invokes) && cl.invokes[n] <= deadline && !cl.madeKey(n) {
			from = cl.invokes[n] // the next acquire, making no key, may have taken this one over
			continue
		}
		if key.to < 0 {
			return d, end - d.at, allowed, true
		}
		return d, key.to - d.at, allowed, true
	}
}

// orphanDeadline is when a key its client was done with at t must be
// gone: bound after t, or after the end of a fault on that client or the
// members, or of a stall (stalls), overlapping that stretch (never, for a
// fault that never ends).
func orphanDeadline(t int64, process int, effects []faultEffect, stalls []window, bound int64) int64 {
	deadline := t + bound
	for changed := true; changed; {
		changed = false
		for _, f := range effects {
			if !f.touches(process) || f.from > deadline || f.to >= 0 && f.to+bound <= deadline {
				continue
			}
			if f.to < 0 {
				return 1 << 62
			}
			if f.to >= t {
				deadline, changed = f.to+bound, true
			}
		}
		if d := stretch(t, deadline, bound, stalls); d != deadline {
			deadline, changed = d, true
		}
	}
	return deadline
}

// hasIn reports whether a time of the sorted ts is in (from, to].
func hasIn(ts []int64, from, to int64) bool {
	k, _ := slices.BinarySearch(ts, from+1)
	return k < len(ts) && ts[k] <= to
}

// callsByClientLock gathers each client's acquire invokes and done
// moments per lock: an acquire that returned an error (fail or info) is
// done at its end; an acquire granted is done when its release (the
// process's next on that lock) returned ok.
func callsByClientLock(o *Ops) map[[2]any]*clientLock {
	out := map[[2]any]*clientLock{}
	get := func(p int32, l string) *clientLock {
		k := [2]any{int(p), l}
		if out[k] == nil {
			out[k] = &clientLock{}
		}
		return out[k]
	}
	for _, a := range o.Acquires {
		cl := get(a.Process, a.Lock)
		cl.invokes = append(cl.invokes, a.From)
		if a.Outcome == OutcomeFail || a.Outcome == OutcomeInfo {
			cl.dones = append(cl.dones, done{at: a.To, line: int(a.Done) + 1, how: "its Lock returned an error"})
		}
	}
	for _, r := range o.Releases {
		if r.Outcome == OutcomeOK {
			cl := get(r.Process, r.Lock)
			cl.dones = append(cl.dones, done{at: r.To, line: int(r.Done) + 1, how: "its Unlock returned nil"})
		}
	}
	for _, cl := range out {
		slices.Sort(cl.invokes)
		slices.SortFunc(cl.dones, func(a, b done) int { return cmp.Compare(a.at, b.at) })
	}
	return out
}
