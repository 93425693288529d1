package check

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/lockbench/lockbench/history"
)

// causeSlack is how long after a grant a delete may be recorded and
// still be what the grant followed: the harness sees a key's delete on a
// watch of its own, which can answer a moment after the client's.
const causeSlack = 50_000_000 // 50ms

// deletions are a history's key-deleted events as causes: the holders'
// keys by their grant's token, and the keys of clients that did not hold
// (waiters, crashed clients).
type deletions struct {
	byToken map[int64][]keyDeleted
	queued  []keyDeleted
	crashes []Mark
	// gaveUp are the acquires that failed (a waiter that gave up deletes
	// its queue key), by end.
	gaveUp []Op
}

// keyDeleted is one key-deleted event, decoded.
type keyDeleted struct {
	history.KeyDeletion
	time  int64
	line  int
	owner int // the client whose key it was, -1 when not known
}

func (p *prepared) deletions() deletions {
	d := deletions{byToken: map[int64][]keyDeleted{}, crashes: p.ops().Crashes}
	for _, a := range p.ops().Acquires {
		if a.Outcome == OutcomeFail && a.To >= 0 {
			d.gaveUp = append(d.gaveUp, a)
		}
	}
	slices.SortStableFunc(d.gaveUp, func(a, b Op) int { return cmp.Compare(a.To, b.To) })
	for i := range p.n() {
		if p.op(i) != opKeyDeleted {
			continue
		}
		var v history.KeyDeletion
		if json.Unmarshal(p.ev[i].Value, &v) != nil {
			continue
		}
		k := keyDeleted{KeyDeletion: v, time: p.ev[i].Time, line: i + 1, owner: -1}
		switch {
		case v.Waiter != nil:
			k.owner = *v.Waiter
		case v.Owner != nil:
			k.owner = *v.Owner
		}
		if k.owner >= 0 {
			d.queued = append(d.queued, k)
		} else if t := p.ev[i].Token; t != 0 {
			d.byToken[t] = append(d.byToken[t], k)
		}
	}
	return d
}

// causeWindow is how long before a grant a key ahead of it may have gone
// and still be what woke it: a handoff takes milliseconds, far less
// under any load lockbench runs.
const causeWindow = 500_000_000 // 500ms

// overlapCause says, in one sentence built from the history's key
// deletions and releases, why b was granted while a still held, or ""
// when neither explains it. released are the lock's holds that ended in
// a release, by end (releasedByEnd):
//
//   - a's key was deleted during its hold, before b's grant: by its
//     lease's end (a was not told in time), or by a client while its lease
//     lived (not a's release);
//   - else the latest other key to go within causeWindow before b's
//     grant, while a's key still stood: a crashed or lapsed client's, one
//     its holder released, or a waiter's that gave up. b took the lock on
//     that deletion, not on a's release.
func (d deletions) overlapCause(lock string, a, b Holder, released []Hold) string {
	for _, k := range d.byToken[a.Token] {
		if a.Token == 0 || k.time < a.From || k.time > b.From+causeSlack {
			continue
		}
		switch k.Cause {
		case history.CauseLease:
			return fmt.Sprintf("process %d's key (token %d) was deleted by its lease's end at revision %d (%s, line %d), %s process %d's grant, while process %d still held: it was not told in time that its lease was gone",
				a.Process, a.Token, k.Revision, fmtNS(k.time), k.line, before(k.time, b.From), b.Process, a.Process)
		case history.CauseDelete:
			return fmt.Sprintf("process %d's key (token %d) was deleted at revision %d (%s, line %d) by a client while its lease was alive — not its holder's release — %s process %d's grant",
				a.Process, a.Token, k.Revision, fmtNS(k.time), k.line, before(k.time, b.From), b.Process)
		}
	}
	from, to := max(a.From, b.From-causeWindow), b.From+causeSlack
	var went string
	at := int64(-1)
	for _, k := range d.queued {
		if k.time >= from && k.time <= to && k.time > at && k.Cause == history.CauseLease && k.owner != a.Process && k.owner != b.Process {
			how := "its lease ended while it waited"
			if c, ok := d.crashedBefore(k.owner, k.time); ok {
				how = "it crashed at " + fmtNS(c)
			}
			at, went = k.time, fmt.Sprintf("process %d's queue key was deleted by its lease's end at revision %d (%s, line %d; %s)",
				k.owner, k.Revision, fmtNS(k.time), k.line, how)
		}
	}
	// The latest release in the window by neither of the two.
	i, _ := slices.BinarySearchFunc(released, b.From+1, func(h Hold, t int64) int { return cmp.Compare(h.To, t) })
	for i--; i >= 0 && released[i].To >= from; i-- {
		if h := released[i]; h.To > at && h.Process != a.Process && h.Process != b.Process {
			at, went = h.To, fmt.Sprintf("process %d released its key (token %d) at %s (line %d)", h.Process, h.Token, fmtNS(h.To), h.ToLine)
			break
		}
	}
	j, _ := slices.BinarySearchFunc(d.gaveUp, b.From+1, func(o Op, t int64) int { return cmp.Compare(o.To, t) })
	for j--; j >= 0 && d.gaveUp[j].To >= from; j-- {
		if o := d.gaveUp[j]; o.To > at && o.Lock == lock && int(o.Process) != a.Process && int(o.Process) != b.Process {
			at, went = o.To, fmt.Sprintf("process %d gave up waiting at %s (its acquire failed, line %d), deleting its queue key", o.Process, fmtNS(o.To), o.Done+1)
			break
		}
	}
	if at < 0 {
		return ""
	}
	return fmt.Sprintf("process %d was granted %s %s, while process %d's key (token %d) still stood: it took the lock on that deletion, not on the holder's release",
		b.Process, after(at, b.From), went, a.Process, a.Token)
}

// crashedBefore is the time of process's last crash before t.
func (d deletions) crashedBefore(process int, t int64) (int64, bool) {
	at, ok := int64(0), false
	for _, c := range d.crashes {
		if c.Process == process && c.Time <= t {
			at, ok = c.Time, true
		}
	}
	return at, ok
}

// before says how long before grant t a delete at at came, or how long
// after it the harness recorded the delete (its watch answers a moment
// after the client's).
func before(at, t int64) string {
	if at > t {
		return fmt.Sprintf("recorded %s after", fmtNS(at-t))
	}
	return fmt.Sprintf("%s before", fmtNS(t-at))
}

// after says how long after a delete at at grant t came.
func after(at, t int64) string {
	if at > t {
		return fmt.Sprintf("%s before the harness recorded that", fmtNS(at-t))
	}
	return fmt.Sprintf("%s after", fmtNS(t-at))
}

// releasedByEnd are the holds that ended in a release, by the release's
// time.
func releasedByEnd(holds []Hold) []Hold {
	var out []Hold
	for _, h := range holds {
		if h.End == EndRelease {
			out = append(out, h)
		}
	}
	slices.SortStableFunc(out, func(a, b Hold) int { return cmp.Compare(a.To, b.To) })
	return out
}
