// Package runner executes a scenario on the backend it is handed (etcd,
// Redis: package backend) and returns its history: one client per
// scenario client, each with its own connection, session and Locker and,
// when the scenario's faults need them, its own fault relays; the
// workloads (hold, counter, counter-fenced); and the nemesis, which applies
// the planned fault steps at their times. Everything the clients and the
// nemesis do is one history on one clock (docs/design.md §3). The runner
// judges nothing: package check reads the history it returns.
package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/clocks"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/scenarios"
)

// Config is everything a run needs beyond the scenario itself.
type Config struct {
	// StuckAfter bounds how long the run waits for its clients' calls to
	// return once it has ended (0: the hold + 3 × the per-operation bound).
	StuckAfter time.Duration
	Scenario   scenarios.Scenario
	Lock       string
	Seed       int64
	// Prefix is the run's key namespace; nothing outside it is touched.
	Prefix    string
	Endpoints []string
	// Cluster is the deployment lockbench started (etcd's embedded or
	// member processes, Redis's processes), for member faults; nil when
	// it is external.
	Cluster backend.Members
	// Backend is the system the lock runs on, as the run dials it (with
	// its client settings: for etcd TLS, credentials, keepalive policy,
	// per-request deadline). Required; it must be the strategy's.
	Backend backend.Backend
	// SharedConns, when > 0, makes the lock clients share that many etcd
	// connections (client i uses connection i mod SharedConns) instead of
	// one each: for client counts whose connections alone would load the
	// machine. Not with client faults, which act on one client's
	// connection.
	SharedConns int
	// MaxEvents bounds the history (default history.DefaultMaxEvents).
	MaxEvents int
	// NoRecord runs without keeping the history (to measure its cost).
	NoRecord bool
	// FrontDoors keeps the clients on Endpoints even when the scenario
	// has no member faults (see Endpoints below): to measure what the
	// front doors cost, or to reproduce an older run's data path.
	FrontDoors bool
	// Recording, when set, switches recording on and off during the run:
	// events are kept only while it is true. The harness toggles it in
	// alternating slices of one run to measure what recording costs
	// without a second run's drift. NoRecord wins over it.
	Recording *atomic.Bool
	// Grants, when set, is added 1 per grant as it happens, for a caller
	// that counts grants per slice of a run (Outcome.Acquisitions is the
	// run's total).
	Grants *atomic.Int64
	// GrantDelay, test-only, holds every grant this long before Lock
	// returns it (see delayedLocker): a known regression on demand, to
	// show that lockbench regress catches one.
	GrantDelay time.Duration
	// Progress, when set, is told about once a second while the clients
	// run how long they have run and how many grants they got: a person
	// watching a long run sees it move.
	Progress func(elapsed time.Duration, grants int64)
	// Worker, when set, is this process's share of a run that several
	// drive together (workers.go); zero: the whole run.
	Worker Worker
	// ClockSkew, test-only, makes every time the run records read this
	// much (≥ 0) ahead (history.NewSkewedRecorder): a worker on a machine
	// whose clock is off.
	ClockSkew time.Duration
}

// dataPath is the endpoints the run's clients dial. On the embedded
// cluster, when the scenario injects no member fault and the caller gave
// the cluster's front doors, it is the members' own listeners: a front
// door exists to cut client connections when its member crashes, and with
// no member fault it only adds a user-space relay to every RPC and watch
// event (docs/measurements.md, relay cost). Client faults do not need the
// front doors: they act on each client's own proxy, which then forwards
// to the member directly.
func dataPath(cfg Config) []string {
	c := cfg.Cluster
	if c == nil || cfg.FrontDoors || cfg.Scenario.Needs().Members || !slices.Equal(cfg.Endpoints, c.Endpoints()) {
		return cfg.Endpoints
	}
	return c.DirectEndpoints()
}

// Outcome is what a run leaves behind.
type Outcome struct {
	Events []history.Event
	// Start is the wall-clock time the history's times count from.
	Start time.Time
	// Elapsed is how long the clients ran.
	Elapsed time.Duration
	// Interrupted is set when ctx ended the run before its duration.
	Interrupted bool
	// Stuck names each client whose call had not returned StuckAfter after
	// the run ended, and which call it was in (e.g. "client 3: Lock"); the
	// run was cut there and the verdict cannot be trusted.
	Stuck []string
	// Stopped says why the run ended early other than by interruption
	// (e.g. the history limit), empty otherwise.
	Stopped string
	// RPCs is the number of etcd RPCs each client made.
	RPCs []int64
	// Acquisitions counts granted locks, also when nothing is recorded.
	Acquisitions int64
	// Endpoints are what the clients dialed (behind their fault proxies,
	// when they had them): the front doors or the members' own listeners
	// (see Config.FrontDoors).
	Endpoints []string
	// Probes are a worker's probe writes, on the history's clock (none
	// when the run is not split among workers).
	Probes []clocks.Probe
}

// opTimeout bounds a release, a counter operation or a fault action: they
// must finish after the run has ended, but not hang it on a dead cluster.
const opTimeout = 5 * time.Second

// counterKey is the counter workloads' shared resource, in the run's
// namespace.
func counterKey(prefix string) string { return prefix + "counter" }

// Run drives Scenario.Clients clients against the lock for the scenario's
// duration while injecting its fault steps, and returns the recorded
// history. ctx ending stops the run early, cleanly: waiters are cancelled,
// holders release, faults are undone, and the history so far is returned
// with Interrupted set.
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	r, steps, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if err := r.connect(ctx); err != nil {
		return nil, err
	}
	err = r.run(ctx, chaos.Plan(steps, r.cfg.Seed))
	out := r.outcome(ctx)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return out, err
	}
	return out, nil
}

// runner is one run's shared state; it is the chaos.World faults act on.
type runner struct {
	cfg      Config
	strategy locks.Strategy
	// names are the lock names the clients contend for (lockNames), one
	// slice for all: 10,000 clients over 1,000 names each with its own
	// copy held 290 MB.
	names []string
	rec   *history.Recorder
	// admin is the run's own connection: the counter, clean-up, and what
	// the backend can tell of the run's keys (backend.Observer), revoke
	// (backend.LeaseRevoker) or meet workers through (backend.Meeting).
	admin backend.Admin
	// obs is admin as an observer of the run's keys, while one watches
	// them (observer.go); nil when none does.
	obs backend.Observer
	// clients are the clients this process drives, in id order: all of
	// them, or a worker's share (see client).
	clients []*client
	shared  []*sharedConn // Config.SharedConns connections, if any
	stopRun context.CancelFunc
	// arrivals is the open-loop schedule (arrivals.go); nil: closed loop.
	arrivals *arrivals
	// life is the clients' run, from the start of the clock to the end of
	// the duration (or an early stop): every worker runs within it, also
	// one that a crash-client's undo restarts mid-run, whose own context
	// (the undo's) is bounded by opTimeout. Set by run before any worker
	// or the nemesis starts.
	life context.Context

	// closing tracks proxies of crashed clients that are still closing.
	closing sync.WaitGroup
	// acquisitions counts grants whether or not the history is kept.
	acquisitions atomic.Int64
	// held are the grants the observer watches over.
	held heldGrants
	// owners maps the lease of each client's last grant to the client
	// (int64 → *client), for the observer's waiterLost.
	owners sync.Map
	// leaseOwners maps every lease a client's connection was granted to
	// the client's id (int64 → int), for the observer's keyOps.
	leaseOwners sync.Map
	// stuck are the clients whose worker did not return in time (see
	// waitWorkers); they are not waited for again.
	stuck []string

	// probes are a worker's probe writes, once the run has ended.
	probes []clocks.Probe
	// foreign is set when another run holds the prefix (its claim was
	// refused): nothing under it is this run's to delete.
	foreign bool
	// startRev is the revision from which a worker watches the meeting
	// place: worker 1's start, for worker 1 (every done comes after it);
	// another worker's ready (worker 1's stop and finished come after it).
	startRev int64

	// triggers are the steps timed to a call (triggers.go); nil when
	// the scenario has none.
	triggers *triggers

	mu      sync.Mutex
	stopped string
	seq     int64 // orders acquire requests, for waiter:K
}

// newRunner checks the configuration against the scenario before anything
// is started, and returns the scenario's fault steps.
func newRunner(cfg Config) (*runner, []chaos.Step, error) {
	sc := cfg.Scenario
	if err := sc.Validate(); err != nil {
		return nil, nil, err
	}
	steps := sc.Schedule(cfg.Seed)
	if err := CheckSharedConns(sc, cfg.SharedConns); err != nil {
		return nil, nil, err
	}
	if cfg.Cluster == nil && sc.Needs().Members {
		return nil, nil, fmt.Errorf("scenario %s injects member faults, which need a cluster lockbench started; on an external cluster only client faults work", sc.Name)
	}
	if err := CheckWorker(cfg.Worker, sc); err != nil {
		return nil, nil, err
	}
	strategy, err := locks.Lookup(cfg.Lock)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case cfg.Backend == nil:
		return nil, nil, fmt.Errorf("no backend to run lock %s on", cfg.Lock)
	case strategy.Backend != cfg.Backend.Name():
		return nil, nil, fmt.Errorf("lock %s runs on %s, not on the run's backend, %s", cfg.Lock, strategy.Backend, cfg.Backend.Name())
	}
	if cfg.GrantDelay > 0 {
		strategy.New = delayedFactory(strategy.New, cfg.GrantDelay)
	}
	cfg.Endpoints = dataPath(cfg)
	return &runner{cfg: cfg, strategy: strategy, names: lockNames(sc.Workload.LockCount()), stopRun: func() {},
		arrivals: newArrivals(sc.Workload, cfg.Seed)}, steps, nil
}

// connect connects the admin client and every lock client, and initialises
// the counter, before the clock starts, so that set-up cost is not
// measured as lock latency.
func (r *runner) connect(ctx context.Context) error {
	sc := r.cfg.Scenario
	admin, err := r.cfg.Backend.Admin(ctx, r.cfg.Endpoints)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	r.admin = admin
	if _, ok := admin.(backend.Meeting); !ok && !r.cfg.Worker.whole() {
		return fmt.Errorf("worker %s: the %s backend has no meeting place for workers: run it from one process", r.cfg.Worker, r.cfg.Backend.Name())
	}
	for range min(r.cfg.SharedConns, sc.Clients) {
		s := &sharedConn{}
		if s.conn, err = r.cfg.Backend.Dial(ctx, r.cfg.Endpoints, backend.DialOptions{}); err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		r.shared = append(r.shared, s)
	}
	for i := range sc.Clients {
		if !r.cfg.Worker.drives(i) {
			continue
		}
		c := &client{id: i, pos: len(r.clients), r: r}
		if sc.Needs().ClientProxy {
			if err := c.startProxies(); err != nil {
				return err
			}
		}
		r.clients = append(r.clients, c)
		if err := c.connect(ctx); err != nil {
			return err
		}
	}
	counter := sc.Workload.Kind != scenarios.WorkloadHold
	// On a cluster lockbench did not start (no Cluster), the prefix is
	// claimed before any key of the run goes under it: another run may
	// have found it empty at the same moment.
	claimer, claims := r.admin.(backend.Claimer)
	claims = claims && r.cfg.Cluster == nil && r.cfg.Worker.coordinates()
	if counter || !r.cfg.Worker.whole() || claims {
		if err := r.admin.Keep(ctx); err != nil {
			return err
		}
	}
	if claims {
		if err := claimer.Claim(ctx, r.cfg.Prefix+ClaimKey); err != nil {
			r.foreign = errors.Is(err, backend.ErrClaimed)
			return fmt.Errorf("prefix %s: %w", r.cfg.Prefix, err)
		}
	}
	return r.meet(ctx, func(ctx context.Context) error {
		if !counter {
			return nil
		}
		return r.admin.InitCounter(ctx, counterKey(r.cfg.Prefix))
	})
}

// client is the client of id this process drives, nil when another
// worker drives it.
func (r *runner) client(id int) *client {
	n := max(r.cfg.Worker.Count, 1)
	if id < 0 || !r.cfg.Worker.drives(id) || id/n >= len(r.clients) {
		return nil
	}
	return r.clients[id/n]
}

// run starts the clock, the clients' workers and the nemesis, and waits
// until the duration is over (or ctx or the history limit ends the run)
// and every worker has returned. The error is the nemesis's.
func (r *runner) run(ctx context.Context, plan []chaos.PlannedStep) error {
	switch {
	case r.cfg.NoRecord:
		r.rec = history.NewDiscardRecorder()
	case r.cfg.ClockSkew > 0:
		r.rec = history.NewSkewedRecorder(r.cfg.MaxEvents, r.cfg.ClockSkew)
	default:
		r.rec = history.NewRecorder(r.cfg.MaxEvents)
	}
	// The history limit stops the run through stopRun (see record).
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	r.stopRun = stopRun
	deadline, cancelDeadline := context.WithTimeout(runCtx, r.cfg.Scenario.Duration.D())
	defer cancelDeadline()

	// The observer outlives the clock: releases at the run's end are
	// observed too. It starts at the revision the clients start from.
	obsCtx, stopObs := context.WithCancel(context.WithoutCancel(ctx))
	obsDone := make(chan struct{})
	obs, canObserve := r.admin.(backend.Observer)
	if !canObserve || r.cfg.NoRecord {
		close(obsDone)
	} else if rev, err := obs.Revision(ctx, r.cfg.Prefix); err != nil {
		close(obsDone)
	} else {
		r.obs = obs
		go func() { defer close(obsDone); r.observe(obsCtx, rev+1) }()
	}
	defer func() { stopObs(); <-obsDone }()

	g, gctx := errgroup.WithContext(deadline)
	r.life = gctx
	// The steps timed to a call are the clients' to strike (triggers.go).
	timed, trig := newTriggers(plan)
	if len(trig.armed) > 0 {
		r.triggers = trig
	}
	probeCtx, stopProbes := context.WithCancel(ctx)
	probes := r.startProbes(probeCtx)
	for _, c := range r.clients {
		c.startWorker(gctx)
	}
	g.Go(func() error { return r.nemesis(gctx, timed) })
	endWatch := r.watchStop(deadline)
	endProgress := r.reportProgress(deadline)
	err := g.Wait()
	endWatch()
	endProgress()
	// The workers are not in the group (a failing client is data, not an
	// error): wait for each, the one a restart started included.
	r.waitWorkers()
	stopProbes()
	r.probes = probes.wait()
	return err
}

// reportProgress tells Config.Progress, every second until ctx ends or
// the function it returns is called (which waits for it), how the run
// goes.
func (r *runner) reportProgress(ctx context.Context) (end func()) {
	if r.cfg.Progress == nil {
		return func() {}
	}
	return background(ctx, func(ctx context.Context) {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r.cfg.Progress(time.Duration(r.rec.Now()), r.acquisitions.Load())
			}
		}
	})
}

// background runs f in a goroutine until ctx ends or the function it
// returns is called, which cancels f's context and waits for f.
func background(ctx context.Context, f func(context.Context)) (end func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(ctx)
	}()
	return func() { cancel(); <-done }
}

// stuckAfter is how long workers get to return once the run has ended:
// a holder finishes its hold, its counter write and its release, each
// bounded by opTimeout; a waiter's Lock returns when cancelled.
func (r *runner) stuckAfter() time.Duration {
	if r.cfg.StuckAfter > 0 {
		return r.cfg.StuckAfter
	}
	return r.cfg.Scenario.Workload.Hold.D() + 3*opTimeout
}

// waitWorkers waits for every worker, up to stuckAfter in all. A worker
// still inside a call then (a Lock that ignores its context, an Unlock
// that never returns) is recorded as stuck, named with its call, and left
// behind: one stuck call must not hold a whole suite forever.
func (r *runner) waitWorkers() {
	deadline := time.Now().Add(r.stuckAfter())
	for _, c := range r.clients {
		if !c.waitUntil(deadline) {
			c.mu.Lock()
			c.worker.stuck = true
			call := map[clientState]string{waiting: "Lock", holding: "its critical section", idle: "Unlock"}[c.queue.state]
			c.mu.Unlock()
			r.stuck = append(r.stuck, fmt.Sprintf("client %d: %s had not returned %s after the run ended", c.id, call, r.stuckAfter()))
		}
	}
}

// outcome records what the run leaves after its clients have stopped (the
// RPC counts, the counter's final value) and collects the Outcome.
func (r *runner) outcome(ctx context.Context) *Outcome {
	elapsed := time.Duration(r.rec.Now())
	for _, c := range r.clients {
		c.mu.Lock()
		name := c.lockName()
		c.mu.Unlock()
		r.record(history.Event{Process: int32(c.id), Type: history.OK, F: history.FRPCs, Lock: name,
			Value: history.IntValue(r.rpcsOf(c))})
	}
	r.leave(ctx)
	if r.cfg.Scenario.Workload.Kind != scenarios.WorkloadHold && r.cfg.Worker.coordinates() {
		r.finalRead()
	}
	out := &Outcome{
		Events:       r.rec.Events(),
		Start:        r.rec.Start(),
		Elapsed:      elapsed,
		Interrupted:  ctx.Err() != nil,
		Stopped:      r.stopped,
		Stuck:        r.stuck,
		Acquisitions: r.acquisitions.Load(),
		Endpoints:    r.cfg.Endpoints,
		Probes:       r.probes,
	}
	for _, c := range r.clients {
		out.RPCs = append(out.RPCs, r.rpcsOf(c))
	}
	return out
}

// record appends an event; hitting the history limit stops the run.
func (r *runner) record(e history.Event) int64 {
	if sw := r.cfg.Recording; sw != nil && !sw.Load() {
		return r.rec.Now()
	}
	t, err := r.rec.Append(e)
	if err != nil {
		r.stop(err.Error())
		r.stopRun()
	}
	return t
}

func (r *runner) nextSeq() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	return r.seq
}

// finalRead records the counter's final value as the nemesis, so the
// checker can compare it with the accepted increments.
func (r *runner) finalRead() {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	r.record(history.Event{Process: history.NemesisProcess, Type: history.Invoke, F: history.FRead})
	v, err := r.admin.ReadCounter(ctx, counterKey(r.cfg.Prefix))
	if err != nil {
		r.record(history.Event{Process: history.NemesisProcess, Type: history.Info, F: history.FRead, Error: err.Error()})
		return
	}
	r.record(history.Event{Process: history.NemesisProcess, Type: history.OK, F: history.FRead, Value: history.IntValue(v)})
}

// close stops every client and removes the run's keys (on an external
// cluster nothing of the run may stay behind): the whole prefix, except
// on a worker other than the first, whose own keys go with its admin
// lease (the rest is the other workers', and worker 1 deletes it once
// every worker is done), and on a run that lost the prefix's claim to
// another (foreign), whose keys are that run's.
func (r *runner) close() {
	for _, c := range r.clients {
		if c != nil {
			c.close()
		}
	}
	for _, s := range r.shared {
		s.conn.Close()
	}
	r.closing.Wait()
	if r.admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		r.admin.Release(ctx)
		if r.cfg.Prefix != "" && r.cfg.Worker.coordinates() && !r.foreign {
			r.admin.Clean(ctx, r.cfg.Prefix)
		}
		cancel()
		r.admin.Close()
	}
}

// Sleep waits d or until ctx ends; it reports whether the full time passed.
// (The harness paces its own measurements with it too.)
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func errString(err error, otherwise string) string {
	if err != nil {
		return err.Error()
	}
	return otherwise
}
