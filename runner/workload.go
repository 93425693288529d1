package runner

import (
	"context"
	"time"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/scenarios"
)

// criticalSection does the workload's work while holding g. It returns
// true when the lease was lost (and recorded as such) so there is nothing
// to release. It takes no ctx: a holder finishes its work at run end, each
// operation bounded by opTimeout.
func (c *client) criticalSection(gen int, conn backend.Connection, g *locks.Grant, w scenarios.Workload) (lost bool) {
	if w.Kind == scenarios.WorkloadHold {
		if c.hold(gen, g, w.Hold.D()) {
			return true
		}
		return c.leaseLost(gen, g)
	}
	if c.leaseLost(gen, g) {
		return true
	}
	// read → hold → write(+1). A pause freezes the process between its
	// read and its write: the stale write the scenario is about.
	v, ok := c.readCounter(gen, conn, g.Lost)
	if !ok {
		return c.leaseLost(gen, g)
	}
	if c.hold(gen, g, w.Hold.D()) {
		return true
	}
	c.writeCounter(gen, conn, g, v+1, w.Kind == scenarios.WorkloadCounterFenced)
	return c.leaseLost(gen, g)
}

// leaseLost records the loss of g's lease if it has been reported (the end
// of g's hold: endHold), and says whether it has.
func (c *client) leaseLost(gen int, g *locks.Grant) bool {
	select {
	case <-g.Lost:
		c.endHold(gen, g, history.Event{Type: history.OK, F: history.FLeaseLost, Token: g.Token})
		return true
	default:
		return false
	}
}

// hold holds the lock for d. It ends early, as a careful client does, when
// the lease is reported lost — unless the process was frozen meanwhile:
// then it wakes and carries on, unaware, as a process after a GC pause
// does. Not on the run's end: a holder finishes its work. Only during the
// hold is the client a fault's "holder". It says whether the lease was
// lost (and recorded as such).
func (c *client) hold(gen int, g *locks.Grant, d time.Duration) (lost bool) {
	defer c.setState(gen, idle, nil, 0)
	if d <= 0 {
		return false
	}
	p0 := c.pauseCount()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-g.Lost:
		if c.checkpoint(context.Background()); c.pauseCount() == p0 {
			return c.leaseLost(gen, g)
		}
	}
	c.checkpoint(context.Background())
	return false
}

// readCounter reads the shared counter, recording the read; ok is false
// when it could not be read. The read is abandoned when lost closes, as a
// careful holder drops its work once told its lock is gone: otherwise a
// holder cut off in its read would believe until the read's deadline, past
// the moment its lease keeper told it (client-isolation, when the cut
// comes as the holder is granted). A frozen process is not told: its read
// goes on, and ends when it wakes.
func (c *client) readCounter(gen int, conn backend.Connection, lost <-chan struct{}) (v int64, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	p0 := c.pauseCount()
	go func() {
		select {
		case <-lost:
			// A frozen process is told nothing until it wakes, and then
			// carries on with its read, unaware, as hold's does.
			if c.checkpoint(ctx) && c.pauseCount() == p0 {
				cancel()
			}
		case <-ctx.Done():
		}
	}()
	c.emit(gen, history.Event{Type: history.Invoke, F: history.FRead})
	v, err := conn.ReadCounter(ctx, counterKey(c.r.cfg.Prefix))
	// Nor does it record anything while frozen: its read ends when it
	// wakes (lease-expiry's holder, paused as its read was in flight, had
	// its lease-lost recorded during the pause, before the next grant).
	c.checkpoint(context.Background())
	if err != nil {
		c.emit(gen, history.Event{Type: history.Fail, F: history.FRead, Error: err.Error()})
		return 0, false
	}
	c.emit(gen, history.Event{Type: history.OK, F: history.FRead, Value: history.IntValue(v)})
	return v, true
}

// writeCounter writes v to the shared counter under g, recording the
// write. Fenced, the resource accepts the write only while the grant's key
// still exists at the grant's revision: a stale holder is rejected.
func (c *client) writeCounter(gen int, conn backend.Connection, g *locks.Grant, v int64, fenced bool) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	key, nv := counterKey(c.r.cfg.Prefix), history.IntValue(v)
	c.emit(gen, history.Event{Type: history.Invoke, F: history.FWrite, Value: nv, Token: g.Token})
	var fence *locks.Grant
	if fenced {
		fence = g
	}
	// The counter stays under the admin client's lease (run.go).
	accepted, err := conn.WriteCounter(ctx, key, v, fence)
	rejected := err == nil && !accepted
	switch {
	case err != nil:
		c.emit(gen, history.Event{Type: history.Info, F: history.FWrite, Value: nv, Token: g.Token, Error: err.Error()})
	case rejected:
		c.emit(gen, history.Event{Type: history.Fail, F: history.FWrite, Value: nv, Token: g.Token, Error: "stale token"})
	default:
		c.emit(gen, history.Event{Type: history.OK, F: history.FWrite, Value: nv, Token: g.Token})
	}
}

// release unlocks g, recording the release; a failed release ends
// unknown (info): the key may still go with its lease.
func (c *client) release(gen int, conn backend.Connection, locker locks.Locker, g *locks.Grant) {
	c.endHold(gen, g, history.Event{Type: history.Invoke, F: history.FRelease, Token: g.Token})
	c.r.fire(c.r.life, c.id, chaos.OnRelease) // a step timed to this call strikes first
	// Marked after the invoke's time is taken: the writes sent from here
	// on commit after the hold ended.
	revs, _ := conn.(backend.Revisions)
	var mark uint64
	if revs != nil {
		mark = revs.Mark()
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	err := locker.Unlock(ctx, g)
	e := history.Event{Type: history.OK, F: history.FRelease, Token: g.Token}
	if err != nil {
		e.Type, e.Error = history.Info, err.Error()
	}
	if revs != nil {
		e.Revision = revs.WroteSince(mark)
	}
	c.emit(gen, e)
}

// seenRevision is the highest revision conn has seen, 0 when its backend
// numbers no changes (history.Event.Revision).
func seenRevision(conn backend.Connection) int64 {
	if revs, ok := conn.(backend.Revisions); ok {
		return revs.Seen()
	}
	return 0
}

// observeWait bounds how long a hold's end waits for the observer to
// record a revoke's delete of its key: the delete comes within moments
// unless the observer's watch is broken for good (compacted past).
const observeWait = opTimeout

// endHold records e, the end of g's hold (its release's invoke, its
// lease-lost), and forgets g in the observer's held grants. While a
// revoke-lease fault is deleting g's key (its revoke in flight, or done
// and its delete not yet through the observer's watch) it first waits,
// up to observeWait, until the observer has recorded that delete: the
// checker reads a key-deleted event only within the hold it ends
// (docs/design.md §4), and the next holder, let in by that delete through
// its own watch, may be granted before the observer sees it. A revoke
// marks g under c.mu (runner.RevokeLease), so none slips in between the
// look and the record.
func (c *client) endHold(gen int, g *locks.Grant, e history.Event) int64 {
	var giveUp <-chan time.Time
	for {
		c.mu.Lock()
		pending := c.r.held.pendingDelete(g)
		if pending == nil {
			c.r.held.done(g)
			t := c.emitLocked(gen, e)
			c.mu.Unlock()
			return t
		}
		c.mu.Unlock()
		if giveUp == nil {
			t := time.NewTimer(observeWait)
			defer t.Stop()
			giveUp = t.C
		}
		select {
		case <-pending:
		case <-giveUp:
			c.r.held.settle(g)
		}
	}
}
