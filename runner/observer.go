package runner

import (
	"context"
	"path"
	"slices"
	"strconv"
	"sync"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
)

// heldGrants are the grants clients hold and whose hold has not ended (a
// release's invoke, a lease-lost, a crash), by key: the keys whose
// deletion the observer must explain. A key may have more than one (a
// buggy strategy may grant one key twice).
type heldGrants struct {
	mu    sync.Mutex
	byKey map[string][]*locks.Grant
	// pending are the held grants whose key a revoke-lease fault is
	// deleting (expect), each with a channel closed once the observer has
	// recorded that delete, or the revoke failed (settle): their hold's
	// end waits for it (client.endHold).
	pending map[*locks.Grant]chan struct{}
	// gone remembers the latest deletes of keys that no held grant had (a
	// release's, a cancelled waiter's, a waiter's whose lease ended), at
	// most maxGone of them, oldest first in goneOrder: a grant added after
	// its key's delete was seen was granted a key already gone.
	gone      map[string]seenDelete
	goneOrder []string
}

// seenDelete is a delete the observer saw: its revision, and when.
type seenDelete struct {
	rev int64
	at  int64 // history time
}

// maxGone bounds heldGrants.gone: a grant comes within moments of its
// key's delete, long before thousands of other keys are deleted.
const maxGone = 4096

// add holds g, acquired at history time at, unless the observer already
// saw its key deleted (a delete of its name after its create revision,
// seen before at): then it returns that delete, and ok, and does not hold
// g, since no later delete of the name can be its key's.
func (h *heldGrants) add(g *locks.Grant, at int64) (d seenDelete, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if d, ok := h.gone[g.Key]; ok && d.rev > g.Token && d.at < at {
		delete(h.gone, g.Key)
		return d, true
	}
	if h.byKey == nil {
		h.byKey = map[string][]*locks.Grant{}
	}
	h.byKey[g.Key] = append(h.byKey[g.Key], g)
	return seenDelete{}, false
}

// remember notes a delete of key that no held grant had; h.mu held.
func (h *heldGrants) remember(key string, d seenDelete) {
	if h.gone == nil {
		h.gone = map[string]seenDelete{}
	}
	if _, ok := h.gone[key]; !ok {
		h.goneOrder = append(h.goneOrder, key)
	}
	h.gone[key] = d
	if len(h.goneOrder) > maxGone {
		delete(h.gone, h.goneOrder[0])
		h.goneOrder = h.goneOrder[1:]
	}
}

// done forgets g: its hold has ended.
func (h *heldGrants) done(g *locks.Grant) {
	if g == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.keep(g.Key, slices.DeleteFunc(h.byKey[g.Key], func(x *locks.Grant) bool { return x == g }))
	h.settleLocked(g)
}

// expect notes that a revoke is about to delete held grant g's key: its
// hold's end is to wait until the observer has recorded the delete
// (pendingDelete). A grant no longer held (its delete already taken, its
// hold ended) has nothing to wait for.
func (h *heldGrants) expect(g *locks.Grant) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Contains(h.byKey[g.Key], g) || h.pending[g] != nil {
		return
	}
	if h.pending == nil {
		h.pending = map[*locks.Grant]chan struct{}{}
	}
	h.pending[g] = make(chan struct{})
}

// pendingDelete is the channel that closes once g's expected delete has
// been recorded (or will not be); nil when none is expected.
func (h *heldGrants) pendingDelete(g *locks.Grant) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pending[g]
}

// settle ends the wait for g's expected delete: the observer recorded it,
// or the revoke failed, or the wait gave up.
func (h *heldGrants) settle(g *locks.Grant) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.settleLocked(g)
}

func (h *heldGrants) settleLocked(g *locks.Grant) {
	if ch, ok := h.pending[g]; ok {
		close(ch)
		delete(h.pending, g)
	}
}

// keep sets key's held grants to gs (none: forgets the key); h.mu held.
func (h *heldGrants) keep(key string, gs []*locks.Grant) {
	if len(gs) == 0 {
		delete(h.byKey, key)
	} else {
		h.byKey[key] = gs
	}
}

// takeDeleted returns the held grants whose key a delete of key at
// revision rev, seen at history time at, removed, and forgets them: those
// of that name granted before rev. A name is one key at a time, so the
// first delete of the name after a grant is its key's; a later one is of a
// key created since (another client's, under a shared name), not this
// grant's. A delete that removed no held grant's key is remembered, for a
// grant that may still come (add).
func (h *heldGrants) takeDeleted(key string, rev, at int64) []*locks.Grant {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out, kept []*locks.Grant
	for _, g := range h.byKey[key] {
		if g.Token < rev {
			out = append(out, g)
		} else {
			kept = append(kept, g)
		}
	}
	h.keep(key, kept)
	if len(out) == 0 {
		h.remember(key, seenDelete{rev: rev, at: at})
	}
	return out
}

// observe watches the run's keys from revision from on and records, as
// history.FKeyDeleted, every deletion of a key whose grant a client still
// holds — with whether its lease was still alive — so the checker can tell
// a holder's key removed by someone else (symmetry) from one its lease
// took away (lease), which no client reports; and, through heldGrants.add,
// every grant of a key it had already seen deleted. It returns when ctx
// ends.
//
// The checker reads a key-deleted event only within the hold it ends
// (docs/design.md §4), and the next holder's own watch may see a revoke's
// delete, and its grant be recorded, before this watch does: so a hold
// whose key a revoke is deleting ends only once its event is recorded
// (heldGrants.expect, client.endHold), then settled here.
//
// The backend opens a broken watch again where it broke.
//
// An observer that also sees creations (backend.ChangeWatcher) records
// every key created under a client's lease and its delete (keyOps).
func (r *runner) observe(ctx context.Context, from int64) {
	onDelete := func(key string, rev int64) {
		for _, g := range r.held.takeDeleted(key, rev, r.rec.Now()) {
			r.recordDeletion(ctx, g, history.KeyDeletion{Revision: rev})
			r.held.settle(g)
		}
		r.waiterLost(ctx, key, rev)
	}
	cw, ok := r.obs.(backend.ChangeWatcher)
	if !ok {
		r.obs.WatchDeletes(ctx, r.cfg.Prefix, from, onDelete)
		return
	}
	var keys keyOps
	cw.WatchChanges(ctx, r.cfg.Prefix, from, func(ch backend.KeyChange) {
		if ch.Deleted {
			onDelete(ch.Key, ch.Revision)
		}
		if e, ok := keys.change(r, ch); ok {
			r.record(e)
		}
	})
}

// keyOps are the live keys created under a client's lease that the
// observer recorded, by key, so that it records their deletes too.
type keyOps map[string]history.KeyOp

// change is the FKeyOp event of ch, if any: a key created under a lease
// a client was granted, or the delete of one recorded.
func (k *keyOps) change(r *runner, ch backend.KeyChange) (history.Event, bool) {
	e := history.Event{Process: history.NemesisProcess, Type: history.OK, F: history.FKeyOp, Lock: r.nameOfKey(ch.Key), Key: ch.Key}
	if ch.Deleted {
		op, ok := (*k)[ch.Key]
		if !ok {
			return e, false
		}
		delete(*k, ch.Key)
		op.Op, op.Created, op.Revision = history.KeyDelete, op.Revision, ch.Revision
		e.Value = history.KeyOpValue(op)
		return e, true
	}
	v, ok := r.leaseOwners.Load(ch.Lease)
	if ch.Lease == 0 || !ok {
		return e, false
	}
	if *k == nil {
		*k = keyOps{}
	}
	op := history.KeyOp{Op: history.KeyCreate, Revision: ch.Revision, Owner: v.(int), Lease: leaseHex(ch.Lease)}
	(*k)[ch.Key] = op
	e.Value = history.KeyOpValue(op)
	return e, true
}

// leaseHex is a lease ID as histories write it.
func leaseHex(id int64) string { return strconv.FormatInt(id, 16) }

// recordDeletion records deletion d of grant g's key, its cause told by
// asking the backend whether the key's lease is still alive: a client deleted the
// key (CauseDelete) or the lease's end took it (CauseLease).
func (r *runner) recordDeletion(ctx context.Context, g *locks.Grant, d history.KeyDeletion) {
	d.Cause = history.CauseDelete
	if g.Lease != 0 {
		d.Lease = leaseHex(g.Lease)
		alive, err := r.obs.LeaseAlive(ctx, g.Lease)
		switch {
		case err != nil:
			d.Cause = "" // unknown: neither check counts it
		case !alive:
			d.Cause = history.CauseLease
		}
	}
	r.record(history.Event{Process: history.NemesisProcess, Type: history.OK, F: history.FKeyDeleted, Lock: r.nameOfKey(g.Key),
		Token: g.Token, Key: g.Key, Value: history.DeletionValue(d)})
}

// waiterLost records, as a key-deleted event naming the waiter
// (history.KeyDeletion.Waiter) or the crashed client (Owner) whose key it
// was, a delete of a waiting or crashed client's queue key that its
// lease's end caused: how long the client's Lock goes on after
// that is the lease check's "waiting after lease loss" (etcd #19597).
//
// Every key-per-waiter strategy names a waiter's key by its lease ID in
// hex under the lock's prefix (etcd's Mutex, Election, lock service, and
// queue), and the runner learns each client's latest lease from its
// connection (leaseGrants), so a waiter's key is named by its client's
// lease. The first delete of that name after the client's last grant is
// the grant's own (its release), and a wait that cancel-waiters cancelled
// deletes its own key: neither asks etcd anything. Only the rest (rare)
// cost one TimeToLive. A strategy with no key per waiter (txn) gives no
// such event.
func (r *runner) waiterLost(ctx context.Context, key string, rev int64) {
	id, err := strconv.ParseInt(path.Base(key), 16, 64)
	if err != nil {
		return
	}
	lease := id
	v, ok := r.owners.Load(lease)
	if !ok {
		return
	}
	c := v.(*client)
	c.mu.Lock()
	q := &c.queue
	if q.last.key == key && !q.last.gone && q.last.token < rev {
		q.last.gone = true
		c.mu.Unlock()
		return
	}
	mine := q.state == waiting && !c.faults.crashed && !q.wait.cancelled && !q.wait.lost && c.waiterLease() == lease
	// A crashed client's key (not its last grant's, which the held grants
	// record) goes when its lease ends: recorded with its owner, so that a
	// violation that follows (a waiter watching it taking the lock) has
	// its cause in the history.
	crashed := c.faults.crashed && q.last.key != key
	c.mu.Unlock()
	if !mine && !crashed {
		return
	}
	if alive, err := r.obs.LeaseAlive(ctx, lease); err != nil || alive {
		return
	}
	if crashed {
		owner := c.id
		r.record(history.Event{Process: history.NemesisProcess, Type: history.OK, F: history.FKeyDeleted, Lock: r.nameOfKey(key),
			Key: key, Value: history.DeletionValue(history.KeyDeletion{Revision: rev, Cause: history.CauseLease, Owner: &owner, Lease: leaseHex(lease)})})
		return
	}
	c.mu.Lock()
	still := q.state == waiting && !q.wait.lost
	q.wait.lost = true
	c.mu.Unlock()
	if still {
		waiter := c.id
		r.record(history.Event{Process: history.NemesisProcess, Type: history.OK, F: history.FKeyDeleted, Lock: r.nameOfKey(key),
			Key: key, Value: history.DeletionValue(history.KeyDeletion{Revision: rev, Cause: history.CauseLease, Waiter: &waiter, Lease: leaseHex(lease)})})
	}
}
