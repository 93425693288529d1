package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/relay"
)

// clientState is where a client's worker is in its loop.
type clientState int

const (
	idle clientState = iota
	waiting
	holding
)

// client is one simulated process: its own etcd connection (through its
// own fault proxies when the scenario needs them) and Locker, a worker
// running the workload, and what faults did to it. mu guards the parts
// the worker and the nemesis share (all but id, r and conn's proxies and
// rpcs).
type client struct {
	id int
	// pos is the client's place in runner.clients.
	pos int
	r   *runner

	mu     sync.Mutex
	conn   connection
	worker worker
	faults faultState
	queue  position
}

// connection is the client's way to etcd.
type connection struct {
	// proxies are one fault proxy per member, when the scenario has client
	// faults. Set up before the worker starts (and again by a restart,
	// while no worker runs), so read without mu.
	proxies []*relay.Relay
	// loser reads the proxies' connections when the scenario's faults
	// read the client protocol (replies.go); set with them, read without
	// mu.
	loser backend.CreateReplyLoser
	// delayer, as loser, holds the replies to the client's acquires
	// (delay-acquire-replies).
	delayer backend.AcquireReplyDelayer
	// conn is the client's connection (its own, or a shared one); session
	// is what its Lockers share on it.
	conn backend.Connection
	// rpcsBefore counts the RPCs of the client's earlier connections,
	// which crashes closed.
	rpcsBefore int64
	// lockers are the client's Lockers, one per lock name it used
	// (names.go).
	lockers *lockerSet
}

// worker is the goroutine running the workload; a restart starts a new
// generation, and what an old generation says is dropped.
type worker struct {
	gen    int
	cancel context.CancelFunc
	done   chan struct{} // closed when the worker has returned
	// stuck is set when the worker did not return in time after the run
	// (runner.waitWorkers): it is left behind, not waited for or closed.
	stuck bool
}

// faultState is what process faults have done to the client.
type faultState struct {
	crashed bool
	paused  chan struct{} // non-nil while paused; closed on resume
	pauses  int           // pauses so far: tells a worker it was frozen
	// isolated: an isolate-client fault has cut the network.
	isolated bool
	// stalled: the current proxies hold the client's traffic (see
	// client.stall); a restart's new proxies start flowing.
	stalled bool
}

// position is where the client stands in the lock's queue, for targets
// (holder, waiter:K) and for cancel-waiters.
type position struct {
	state     clientState
	seq       int64 // when it started waiting, in request order
	heldSince int64 // when it was granted, in history time
	grant     *locks.Grant
	// lastLease is the lease of the client's last grant: every strategy
	// reuses its lease while it lives, so a waiter's key is likely under
	// it (revoke-lease on a waiter).
	lastLease int64
	// cancelLock cancels the pending Lock call while the client waits.
	cancelLock context.CancelFunc
	// leases are the latest lease the client's own connection was granted
	// (leaseGranted) while each name was current, whichever strategy asked
	// for it: a Locker that keeps its own lease has one per name (see
	// waiterLease).
	leases map[string]int64
	// name is the lock name of the current (or last) acquisition: its
	// events' lock (names.go).
	name string
	// last is the key of the client's last grant and whether the observer
	// has seen it deleted since; wait is what the observer saw of the
	// current wait (see runner.waiterLost).
	last lastGrant
	wait waitSeen
}

// lastGrant is a client's last grant's key: the first delete of that name
// after its token is the grant's own (its release, its lease's end), so
// not a later waiter key's.
type lastGrant struct {
	key   string
	token int64
	gone  bool
}

// waitSeen is what the observer saw of a client's current wait.
type waitSeen struct {
	// cancelled: cancel-waiters cancelled it, so a delete of its key is
	// its own cleanup.
	cancelled bool
	// lost: its key's lease was seen to end, and recorded.
	lost bool
}

// connect opens the client's connection (or takes its shared one), its
// session and its Locker.
func (c *client) connect(ctx context.Context) error {
	var conn backend.Connection
	own := len(c.r.shared) == 0
	if own {
		var err error
		if conn, err = c.r.cfg.Backend.Dial(ctx, c.endpoints(), backend.DialOptions{OnLease: c.leaseGranted, OnLeaseOp: c.leaseOp}); err != nil {
			return fmt.Errorf("client %d: connect: %w", c.id, err)
		}
	} else {
		conn = c.r.shared[c.pos%len(c.r.shared)].conn
	}
	// One session for all the client's Lockers, as one Session serves a
	// process's every Mutex (etcdlocks.ClientLease).
	sess, err := conn.NewSession(ctx, c.r.cfg.Scenario.TTL())
	if err != nil {
		if own {
			conn.Close()
		}
		return fmt.Errorf("client %d: %w", c.id, err)
	}
	set := &lockerSet{names: c.r.names, session: sess}
	set.make = func(ctx context.Context, name string) (locks.Locker, error) {
		return c.r.strategy.New(ctx, sess.Conn(), locks.Options{
			Name:   name,
			Prefix: c.r.cfg.Prefix,
			TTL:    c.r.cfg.Scenario.TTL(),
			OnWakeup: func() {
				c.emit(c.currentGen(), history.Event{Type: history.OK, F: history.FWakeup, Lock: name})
			},
		})
	}
	// The first name's Locker is made now, so that a strategy that cannot
	// start fails the connect, as with one name; the others on first use.
	c.mu.Lock()
	c.setNameLocked(set.names[0])
	c.mu.Unlock()
	locker, err := set.make(ctx, set.names[0])
	if err != nil {
		if own {
			conn.Close()
		}
		return fmt.Errorf("client %d: %s: %w", c.id, c.r.strategy.Name, err)
	}
	set.add(set.names[0], locker)
	c.mu.Lock()
	if old := c.conn.conn; old != nil && own {
		c.conn.rpcsBefore += old.RPCs() // a crashed connection's, closed
	}
	c.conn.conn, c.conn.lockers = conn, set
	c.mu.Unlock()
	return nil
}

// leaseGranted notes a lease the client's connection was granted: its
// lock keys are under it from now on (see runner.waiterLost).
func (c *client) leaseGranted(id int64) {
	c.mu.Lock()
	name := c.lockName()
	old := c.queue.leases[name]
	if c.queue.leases == nil {
		c.queue.leases = map[string]int64{}
	}
	c.queue.leases[name] = id
	c.mu.Unlock()
	c.r.owners.Delete(old)
	c.r.owners.Store(id, c)
}

// leaseOp records what the client's connection saw of one of its leases
// (history.FLeaseOp). It is the connection's, not the worker's: recorded
// also after a crash, as a crashed client's connection may still see an
// answer before it closes.
func (c *client) leaseOp(op backend.LeaseOp) {
	if op.Op == history.LeaseGrant {
		c.r.leaseOwners.Store(op.Lease, c.id)
	}
	now := c.r.rec.Now()
	v := history.LeaseOp{Op: op.Op, Owner: c.id, Lease: leaseHex(op.Lease), TTLNS: int64(op.TTL)}
	if op.Op != history.LeaseRevoke {
		v.SentNS = max(now-int64(op.Took), 0)
	}
	c.r.record(history.Event{Process: history.NemesisProcess, Type: history.OK, F: history.FLeaseOp, Value: history.LeaseOpValue(v)})
}

// endpoints are where the client dials: its proxies when it has them, so
// that its faults cut or slow only its own traffic.
func (c *client) endpoints() []string {
	if len(c.conn.proxies) == 0 {
		return c.r.cfg.Endpoints
	}
	var eps []string
	for i, p := range c.conn.proxies {
		eps = append(eps, proxyURL(c.r.cfg.Endpoints[i], p))
	}
	return eps
}

// currentGen is the running worker's generation, for callbacks (OnWakeup)
// that do not know which worker they serve.
func (c *client) currentGen() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.worker.gen
}

// emit records an event of this process unless the worker generation that
// made it has crashed: a crashed process says nothing more.
func (c *client) emit(gen int, e history.Event) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.emitLocked(gen, e)
}

// emitLocked is emit with c.mu held.
func (c *client) emitLocked(gen int, e history.Event) int64 {
	if c.faults.crashed || gen != c.worker.gen {
		return -1
	}
	e.Process = int32(c.id)
	if e.Lock == "" {
		e.Lock = c.lockName()
	}
	return c.r.record(e)
}

// startWorker starts a worker of the current generation, running until
// ctx ends or the client crashes.
func (c *client) startWorker(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wctx, cancel := context.WithCancel(ctx)
	c.worker.cancel = cancel
	c.worker.done = make(chan struct{})
	gen, conn, lockers, done := c.worker.gen, c.conn.conn, c.conn.lockers, c.worker.done
	seed := uint64(c.r.cfg.Seed)
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(seed, uint64(c.id)<<16|uint64(gen)))
		c.loop(wctx, gen, conn, lockers, rng)
	}()
}

// wait waits for the current worker to return, unless it is stuck.
func (c *client) wait() {
	c.waitUntil(time.Time{})
}

// waitUntil waits for the current worker to return or the deadline to
// pass (zero: no deadline); it reports whether the worker returned. A
// worker found stuck is not waited for.
func (c *client) waitUntil(deadline time.Time) bool {
	c.mu.Lock()
	done, stuck := c.worker.done, c.worker.stuck
	c.mu.Unlock()
	if done == nil || stuck {
		return !stuck
	}
	var expired <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-done:
		return true
	case <-expired:
		return false
	}
}

// setState tracks the worker's place for targets (holder, waiter:K).
func (c *client) setState(gen int, s clientState, g *locks.Grant, t int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.worker.gen {
		return
	}
	c.queue.state, c.queue.grant = s, g
	switch s {
	case waiting:
		c.queue.seq = c.r.nextSeq()
		c.queue.wait = waitSeen{}
	case holding:
		c.queue.heldSince = t
		c.queue.lastLease = g.Lease
		c.queue.last = lastGrant{key: g.Key, token: g.Token}
	}
}

// checkpoint blocks while the client is paused: the process is frozen at
// this point of its loop. It returns false when ctx ends.
func (c *client) checkpoint(ctx context.Context) bool {
	for {
		c.mu.Lock()
		p := c.faults.paused
		c.mu.Unlock()
		if p == nil {
			return ctx.Err() == nil
		}
		select {
		case <-p:
		case <-ctx.Done():
			return false
		}
	}
}

// loop runs the workload until ctx ends. Errors from the lock are recorded,
// not returned: a run is a measurement, and failures are its data.
func (c *client) loop(ctx context.Context, gen int, conn backend.Connection, lockers *lockerSet, rng *rand.Rand) {
	w := c.r.cfg.Scenario.Workload
	names := newNamePicker(lockers.names, w, c.id, rng)
	if gen == 0 {
		Sleep(ctx, time.Duration(c.id)*w.Stagger.D())
	}
	failures := 0 // consecutive failed acquires
	for c.checkpoint(ctx) {
		// Open-loop load: wait for the next arrival (arrivals.go).
		intended, ok := c.r.arrive(ctx)
		if !ok || !c.checkpoint(ctx) {
			return
		}
		// Wait for the lock (of the name picked), cancellable by
		// cancel-waiters.
		locker := c.pickName(ctx, gen, lockers, names.pick())
		lctx, cancelLock := context.WithCancel(ctx)
		c.setState(gen, waiting, nil, 0)
		c.mu.Lock()
		c.queue.cancelLock = cancelLock
		c.mu.Unlock()
		c.emit(gen, history.Event{Type: history.Invoke, F: history.FAcquire, Value: intended})
		c.r.fire(ctx, c.id, chaos.OnAcquire) // a step timed to this call strikes first
		g, err := locker.Lock(lctx)
		c.mu.Lock()
		c.queue.cancelLock = nil
		c.mu.Unlock()
		cancelLock()
		if err != nil {
			c.setState(gen, idle, nil, 0)
			typ := history.Info
			if errors.Is(err, locks.ErrNotAcquired) {
				typ = history.Fail
			}
			c.emit(gen, history.Event{Type: typ, F: history.FAcquire, Error: err.Error()})
			// Back off, so that a broken or overloaded cluster is not
			// hammered: 10–50 ms after one failure, doubling with each
			// failure in a row up to 1.6 s.
			Sleep(ctx, time.Duration(10+rng.IntN(40))*time.Millisecond<<min(failures, 5))
			failures++
			continue
		}
		// Granted: record the grant, then hold it for the workload.
		failures = 0
		c.r.acquisitions.Add(1)
		if n := c.r.cfg.Grants; n != nil {
			n.Add(1)
		}
		// The revision seen is read before the grant's time is taken:
		// committed before it.
		t := c.emit(gen, history.Event{Type: history.OK, F: history.FAcquire, Token: g.Token, Key: g.Key,
			Lease: strconv.FormatInt(g.Lease, 16), Revision: seenRevision(conn)})
		c.setState(gen, holding, g, t)
		if d, gone := c.r.held.add(g, t); gone {
			c.r.recordDeletion(ctx, g, history.KeyDeletion{Revision: d.rev, BeforeGrant: true})
		}
		if c.criticalSection(gen, conn, g, w) { // its lease-lost ended the hold
			if w.ReleaseLost {
				// A client that learns late still calls Unlock on the grant
				// it lost: it must not remove its successor's lock.
				c.release(gen, conn, locker, g)
			}
			continue
		}
		// Release (unless the lease was lost), then think before asking
		// again.
		c.release(gen, conn, locker, g)
		if w.Think > 0 {
			Sleep(ctx, w.Think.D())
		}
	}
}

// crash stops the process as SIGKILL would: its connection drops, its
// worker stops where it stands, and its lease is not revoked, so its keys
// stay until the TTL ends.
func (c *client) crash() error {
	c.mu.Lock()
	if c.faults.crashed {
		c.mu.Unlock()
		return fmt.Errorf("client %d has already crashed", c.id)
	}
	// Recorded under the lock that emit takes: nothing of this process can
	// appear after its crash.
	c.r.record(history.Event{Process: int32(c.id), Type: history.Info, F: history.FCrash, Lock: c.lockName()})
	c.faults.crashed = true
	c.r.held.done(c.queue.grant)
	c.queue.state, c.queue.grant, c.queue.lastLease = idle, nil, 0
	conn, lockers, cancel := c.conn.conn, c.conn.lockers, c.worker.cancel
	if c.faults.paused != nil {
		close(c.faults.paused)
		c.faults.paused = nil
	}
	proxies := c.conn.proxies
	c.mu.Unlock()
	// The network goes first, as when a process is killed: nothing it sends
	// from here on reaches etcd, not even the cleanup of its cancelled calls.
	for _, p := range proxies {
		p.BlackholeTx()
		p.BlackholeRx()
	}
	conn.Close()
	// The worker is stopped before its processes die: an adapter's Locker
	// starts a fresh process for the next Lock after a kill, and the
	// crashed worker must not make that Lock (a set marked dead hands out
	// no Locker, and a cancelled Lock starts nothing).
	lockers.all(true) // no Locker is made or handed out from here on
	cancel()
	// A Locker that is a process of its own (an adapter) dies for real.
	var err error
	if kerr := lockers.processes(locks.Process.Kill); kerr != nil {
		err = fmt.Errorf("client %d: kill its process: %w", c.id, kerr)
	}
	// A proxy's Close waits for its connections to end; the client's side
	// has just been closed, the member's side may take a while.
	closeProxies(&c.r.closing, proxies)
	return err
}

// restart brings a crashed process back as the same process id, with a new
// connection and Locker (its old lease is gone or going). ctx bounds the
// reconnection; the new worker runs for the rest of the run (runner.life).
func (c *client) restart(ctx context.Context) error {
	// The crashed worker has stopped where it stood: let it return.
	c.wait()
	c.mu.Lock()
	if !c.faults.crashed {
		c.mu.Unlock()
		return fmt.Errorf("client %d is not crashed", c.id)
	}
	// New proxies (the old ones were closed by the crash), a new
	// connection and Locker, then a new worker generation.
	old := c.conn.proxies
	c.conn.proxies = nil
	c.mu.Unlock()
	if len(old) > 0 {
		if err := c.startProxies(); err != nil {
			return fmt.Errorf("restart: %w", err)
		}
	}
	if err := c.connect(ctx); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	c.mu.Lock()
	c.faults.crashed = false
	c.faults.stalled = false // the new proxies
	c.worker.gen++
	c.mu.Unlock()
	c.startWorker(c.r.life)
	return nil
}

// close ends the client at the end of the run: a paused worker is thawed
// so that it can stop, a holder releases, and a live client closes its
// session (a crashed one has none to close).
func (c *client) close() {
	c.mu.Lock()
	if c.faults.paused != nil {
		close(c.faults.paused)
		c.faults.paused = nil
	}
	conn, lockers, cancel, crashed, stuck := c.conn.conn, c.conn.lockers, c.worker.cancel, c.faults.crashed, c.worker.stuck
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	c.wait()
	// A stuck worker may still be inside the Locker: its Close could hang
	// too. Closing the connection is what ends its lease.
	if lockers != nil && !crashed && !stuck {
		lockers.close(opTimeout)
	}
	if conn != nil && len(c.r.shared) == 0 {
		conn.Close()
	}
	closeProxies(&c.r.closing, c.conn.proxies)
}
