package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/pkg/v3/proxy"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/cluster"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/scenario"
)

// Config is everything a run needs beyond the scenario itself.
type Config struct {
	Scenario scenario.Scenario
	Lock     string
	Seed     int64
	// Prefix is the run's key namespace; nothing outside it is touched.
	Prefix    string
	Endpoints []string
	// Cluster is the embedded cluster, for member faults; nil when the
	// cluster is external.
	Cluster *cluster.Cluster
	// ClientConfig, when set, is the base etcd client configuration (TLS,
	// credentials); Endpoints, DialTimeout and Logger are filled in.
	ClientConfig clientv3.Config
	// DialTimeout bounds connecting each client (default 5 s).
	DialTimeout time.Duration
	KeepAlive   locks.KeepAlive
	// RPCTimeout bounds each unary request of a lock client (see
	// locks.RPCDeadline); 0 means locks.DefaultRPCTimeout, < 0 none.
	RPCTimeout time.Duration
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
	// Stopped says why the run ended early other than by interruption
	// (e.g. the history limit), empty otherwise.
	Stopped string
	// RPCs is the number of etcd RPCs each client made.
	RPCs []int64
	// Acquisitions counts granted locks, also when nothing is recorded.
	Acquisitions int64
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
func Run(ctx context.Context, cfg Config) (out *Outcome, err error) {
	sc := cfg.Scenario
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	steps, err := sc.ChaosSteps()
	if err != nil {
		return nil, err
	}
	if err := CheckSharedConns(sc, cfg.SharedConns); err != nil {
		return nil, err
	}
	if cfg.Cluster == nil && sc.NeedsMembers() {
		return nil, fmt.Errorf("scenario %s injects member faults, which need the embedded cluster; on an external cluster only client faults work", sc.Name)
	}
	strategy, err := locks.Lookup(cfg.Lock)
	if err != nil {
		return nil, err
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	r := &runner{cfg: cfg, strategy: strategy, stopRun: func() {}}
	defer r.close()

	admin, err := r.newEtcdClient(cfg.Endpoints, nil)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	r.admin = admin
	// Connect every client before the clock starts, so that set-up cost is
	// not measured as lock latency.
	for range min(cfg.SharedConns, sc.Clients) {
		s := &sharedConn{}
		if s.cli, err = r.newEtcdClient(cfg.Endpoints, &s.rpcs); err != nil {
			return nil, fmt.Errorf("connect: %w", err)
		}
		r.shared = append(r.shared, s)
	}
	r.clients = make([]*client, sc.Clients)
	for i := range r.clients {
		c := &client{id: i, r: r}
		if sc.NeedsProxies() {
			if err := c.startProxies(); err != nil {
				return nil, err
			}
		}
		r.clients[i] = c
		if err := c.connect(ctx); err != nil {
			return nil, err
		}
	}
	if sc.Workload.Kind != scenario.WorkloadHold {
		cctx, cancel := context.WithTimeout(ctx, opTimeout)
		_, err := admin.Put(cctx, counterKey(cfg.Prefix), "0")
		cancel()
		if err != nil {
			return nil, fmt.Errorf("initialise counter: %w", err)
		}
	}

	if cfg.NoRecord {
		r.rec = history.NewDiscardRecorder()
	} else {
		r.rec = history.NewRecorder(cfg.MaxEvents)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	r.stopRun = stopRun
	deadline, cancelDeadline := context.WithTimeout(runCtx, sc.Duration.D())
	defer cancelDeadline()

	g, gctx := errgroup.WithContext(deadline)
	for _, c := range r.clients {
		c.startWorker(gctx)
	}
	plan := chaos.Plan(steps, cfg.Seed)
	g.Go(func() error { return r.nemesis(gctx, plan) })
	err = g.Wait()
	for _, c := range r.clients {
		c.wait()
	}
	elapsed := time.Duration(r.rec.Now())
	for _, c := range r.clients {
		r.record(history.Event{Process: c.id, Type: history.OK, F: history.FRPCs, Lock: locks.DefaultName,
			Value: history.IntValue(r.rpcsOf(c.id))})
	}
	if sc.Workload.Kind != scenario.WorkloadHold {
		r.finalRead()
	}
	out = &Outcome{
		Events:      r.rec.Events(),
		Start:       r.rec.Start(),
		Elapsed:     elapsed,
		Interrupted: ctx.Err() != nil,
		Stopped:     r.stopped,
	}
	for _, c := range r.clients {
		out.RPCs = append(out.RPCs, r.rpcsOf(c.id))
	}
	out.Acquisitions = r.acquisitions.Load()
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return out, err
	}
	return out, nil
}

// runner is one run's shared state; it is the chaos.World faults act on.
type runner struct {
	cfg      Config
	strategy locks.Strategy
	rec      *history.Recorder
	admin    *clientv3.Client
	clients  []*client
	shared   []*sharedConn // Config.SharedConns connections, if any
	stopRun  context.CancelFunc

	// closing tracks proxies of crashed clients that are still closing.
	closing sync.WaitGroup
	// acquisitions counts grants whether or not the history is kept.
	acquisitions atomic.Int64

	mu      sync.Mutex
	stopped string
	seq     int64 // orders acquire requests, for waiter:K
}

// record appends an event; hitting the history limit stops the run.
func (r *runner) record(e history.Event) int64 {
	t, err := r.rec.Append(e)
	if err != nil {
		r.mu.Lock()
		if r.stopped == "" {
			r.stopped = err.Error()
		}
		r.mu.Unlock()
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

// newEtcdClient connects a client. A lock client (counter not nil) has its
// RPCs counted and its unary requests bounded by Config.RPCTimeout; the
// admin client bounds its own operations (opTimeout).
func (r *runner) newEtcdClient(endpoints []string, counter *locks.RPCCounter) (*clientv3.Client, error) {
	cc := r.cfg.ClientConfig
	cc.Endpoints = endpoints
	cc.DialTimeout = r.cfg.DialTimeout
	cc.Logger = zap.NewNop()
	if counter != nil {
		cc.DialOptions = append(slices.Clip(cc.DialOptions), counter.DialOptions()...)
		cc.DialOptions = append(cc.DialOptions, locks.RPCDeadline(locks.RPCTimeoutOf(r.cfg.RPCTimeout))...)
	}
	return clientv3.New(cc)
}

// finalRead records the counter's final value as the nemesis, so the
// checker can compare it with the accepted increments.
func (r *runner) finalRead() {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	r.record(history.Event{Process: history.NemesisProcess, Type: history.Invoke, F: history.FRead})
	resp, err := r.admin.Get(ctx, counterKey(r.cfg.Prefix))
	if err != nil || len(resp.Kvs) == 0 {
		r.record(history.Event{Process: history.NemesisProcess, Type: history.Info, F: history.FRead, Error: errString(err, "counter missing")})
		return
	}
	v, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
	if err != nil {
		r.record(history.Event{Process: history.NemesisProcess, Type: history.Info, F: history.FRead, Error: err.Error()})
		return
	}
	r.record(history.Event{Process: history.NemesisProcess, Type: history.OK, F: history.FRead, Value: history.IntValue(v)})
}

// close stops every client and removes the run's keys (on an external
// cluster nothing of the run may stay behind).
func (r *runner) close() {
	for _, c := range r.clients {
		if c != nil {
			c.close()
		}
	}
	for _, s := range r.shared {
		s.cli.Close()
	}
	r.closing.Wait()
	if r.admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		if r.cfg.Prefix != "" {
			r.admin.Delete(ctx, r.cfg.Prefix, clientv3.WithPrefix())
		}
		cancel()
		r.admin.Close()
	}
}

// nemesis runs the fault plan: each step at its time, undone after its
// `for`; every fault still in effect is undone when the run ends.
func (r *runner) nemesis(ctx context.Context, plan []chaos.PlannedStep) error {
	type active struct {
		undoAt time.Duration // 0: at the end of the run
		undo   func(context.Context) error
		value  history.Fault
	}
	var pending []*active
	undo := func(a *active) {
		uctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		typ, msg := history.OK, ""
		if err := a.undo(uctx); err != nil {
			typ, msg = history.Info, err.Error()
		}
		r.record(history.Event{Process: history.NemesisProcess, Type: typ, F: history.FFault, Value: history.FaultValue(a.value), Error: msg})
	}
	next := 0
	for {
		// The next thing to do: a step, or an undo, whichever is first.
		wake := time.Duration(-1)
		if next < len(plan) {
			wake = plan[next].At
		}
		var due *active
		for _, a := range pending {
			if a.undoAt > 0 && (wake < 0 || a.undoAt < wake) {
				wake, due = a.undoAt, a
			}
		}
		if wake >= 0 {
			if !sleep(ctx, wake-time.Duration(r.rec.Now())) {
				break
			}
		} else {
			<-ctx.Done()
			break
		}
		if due != nil {
			undo(due)
			pending = remove(pending, due)
			continue
		}
		st := plan[next]
		next++
		v := history.Fault{Fault: st.Fault.Name(), Target: st.Target.String(), ForNS: int64(st.For)}
		target, err := r.resolve(ctx, st)
		if err == nil {
			v.Resolved = r.describe(st.Fault.Targets(), target)
			r.record(history.Event{Process: history.NemesisProcess, Type: history.Invoke, F: history.FFault, Value: history.FaultValue(v)})
			var u func(context.Context) error
			u, err = st.Fault.Inject(ctx, r, target, st.Arg)
			switch {
			case err != nil:
			case u == nil: // instantaneous
				r.record(history.Event{Process: history.NemesisProcess, Type: history.OK, F: history.FFault, Value: history.FaultValue(v)})
			default:
				a := &active{undo: u, value: v}
				if st.For > 0 {
					a.undoAt = st.At + st.For
				}
				pending = append(pending, a)
			}
		} else {
			r.record(history.Event{Process: history.NemesisProcess, Type: history.Invoke, F: history.FFault, Value: history.FaultValue(v)})
		}
		if err != nil {
			r.record(history.Event{Process: history.NemesisProcess, Type: history.Fail, F: history.FFault, Value: history.FaultValue(v), Error: err.Error()})
		}
	}
	for _, a := range pending {
		undo(a)
	}
	return nil
}

// resolveWait bounds how long a fault waits for its target to exist (a
// holder between grants, enough waiters).
const resolveWait = 2 * time.Second

// resolve finds the step's target, waiting up to resolveWait for a client
// target to appear: a holder is only a holder while inside its hold.
func (r *runner) resolve(ctx context.Context, st chaos.PlannedStep) (int, error) {
	deadline := time.Now().Add(resolveWait)
	for {
		t, err := chaos.Resolve(st.Target, st.Fault.Targets(), r, st.Draw)
		if err == nil || st.Fault.Targets() != chaos.ClientTarget || time.Now().After(deadline) {
			return t, err
		}
		if !sleep(ctx, 5*time.Millisecond) {
			return -1, err
		}
	}
}

func remove[T comparable](xs []T, x T) []T {
	for i, y := range xs {
		if y == x {
			return append(xs[:i], xs[i+1:]...)
		}
	}
	return xs
}

func (r *runner) describe(class chaos.TargetClass, i int) string {
	switch {
	case i < 0:
		return ""
	case class == chaos.MemberTarget:
		return "member:" + strconv.Itoa(i)
	}
	return "client:" + strconv.Itoa(i)
}

// chaos.World: members.

func (r *runner) Members() int {
	if r.cfg.Cluster == nil {
		return 0
	}
	return len(r.cfg.Cluster.Members())
}

func (r *runner) Leader() int { return r.cfg.Cluster.Leader() }

func (r *runner) RunningMembers() []int {
	var out []int
	for _, m := range r.cfg.Cluster.Members() {
		if m.Running() {
			out = append(out, m.Index)
		}
	}
	return out
}

func (r *runner) CrashMember(i int) error { return r.cfg.Cluster.Crash(i) }
func (r *runner) RestartMember(ctx context.Context, i int) error {
	return r.cfg.Cluster.Restart(ctx, i)
}
func (r *runner) PartitionMember(i int) error { return r.cfg.Cluster.Partition(i) }
func (r *runner) HealMember(i int) error      { return r.cfg.Cluster.Heal(i) }

// chaos.World: clients.

func (r *runner) Clients() int { return len(r.clients) }

func (r *runner) Holder() int {
	best, bestT := -1, int64(-1)
	for _, c := range r.clients {
		c.mu.Lock()
		if c.state == holding && !c.crashed && (best < 0 || c.heldSince < bestT) {
			best, bestT = c.id, c.heldSince
		}
		c.mu.Unlock()
	}
	return best
}

func (r *runner) Waiters() []int {
	type w struct {
		id  int
		seq int64
	}
	var ws []w
	for _, c := range r.clients {
		c.mu.Lock()
		if c.state == waiting && !c.crashed {
			ws = append(ws, w{c.id, c.seq})
		}
		c.mu.Unlock()
	}
	slices.SortFunc(ws, func(a, b w) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]int, len(ws))
	for i, x := range ws {
		out[i] = x.id
	}
	return out
}

func (r *runner) CancelWaiting() int {
	// Gather first, then cancel in one sweep: at once, not one by one.
	var cancels []context.CancelFunc
	for _, c := range r.clients {
		c.mu.Lock()
		if c.state == waiting && !c.crashed && c.cancelLock != nil {
			cancels = append(cancels, c.cancelLock)
		}
		c.mu.Unlock()
	}
	for _, cancel := range cancels {
		cancel()
	}
	return len(cancels)
}

func (r *runner) CrashClient(i int) error                        { return r.clients[i].crash() }
func (r *runner) RestartClient(ctx context.Context, i int) error { return r.clients[i].restart(ctx) }
func (r *runner) PauseClient(i int) error                        { return r.clients[i].pause() }
func (r *runner) ResumeClient(i int) error                       { return r.clients[i].resume() }
func (r *runner) IsolateClient(i int, cut bool) error            { return r.clients[i].isolate(cut) }
func (r *runner) DelayClient(i int, d time.Duration) error       { return r.clients[i].delay(d) }

func (r *runner) RevokeLease(ctx context.Context, i int) error {
	c := r.clients[i]
	c.mu.Lock()
	g := c.grant
	c.mu.Unlock()
	if g == nil {
		return fmt.Errorf("client %d holds no grant whose lease to revoke", i)
	}
	_, err := r.admin.Revoke(ctx, g.Lease)
	return err
}

// clientState is where a client's worker is in its loop.
type clientState int

const (
	idle clientState = iota
	waiting
	holding
)

// client is one simulated process: its own etcd connection (through its
// own fault proxies when the scenario needs them) and Locker.
type client struct {
	id   int
	r    *runner
	rpcs locks.RPCCounter

	proxies []proxy.Server

	mu        sync.Mutex
	cli       *clientv3.Client
	locker    locks.Locker
	state     clientState
	seq       int64
	heldSince int64
	grant     *locks.Grant
	crashed   bool
	gen       int           // worker generation: a restart starts a new one
	paused    chan struct{} // non-nil while paused; closed on resume
	pauses    int           // pauses so far: tells a worker it was frozen
	cancel    context.CancelFunc
	// cancelLock cancels the pending Lock call while the client waits.
	cancelLock context.CancelFunc
	done       chan struct{}
	runCtx     context.Context
}

// startProxies puts one fault proxy in front of each member for this
// client alone, so that its network can be cut or slowed on its own.
func (c *client) startProxies() error {
	for _, ep := range c.r.cfg.Endpoints {
		to, err := url.Parse(ep)
		if err != nil {
			return fmt.Errorf("endpoint %q: %w", ep, err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("client %d proxy: %w", c.id, err)
		}
		from := url.URL{Scheme: "tcp", Host: l.Addr().String()}
		l.Close() // the proxy listens on it itself
		p := proxy.NewServer(proxy.ServerConfig{Logger: zap.NewNop(), From: from, To: url.URL{Scheme: "tcp", Host: to.Host}})
		c.proxies = append(c.proxies, p)
		select {
		case <-p.Ready():
		case err := <-p.Error():
			return fmt.Errorf("client %d proxy: %w", c.id, err)
		}
	}
	return nil
}

func (c *client) endpoints() []string {
	if len(c.proxies) == 0 {
		return c.r.cfg.Endpoints
	}
	// The proxy forwards raw TCP, so a TLS client still talks TLS end to end
	// through it: keep each endpoint's scheme.
	var eps []string
	for i, p := range c.proxies {
		scheme := "http"
		if u, err := url.Parse(c.r.cfg.Endpoints[i]); err == nil && u.Scheme != "" {
			scheme = u.Scheme
		}
		eps = append(eps, scheme+"://"+strings.TrimPrefix(p.From(), "tcp://"))
	}
	return eps
}

// connect opens the client's etcd connection (or takes its shared one)
// and Locker.
func (c *client) connect(ctx context.Context) error {
	var cli *clientv3.Client
	if n := len(c.r.shared); n > 0 {
		cli = c.r.shared[c.id%n].cli
	} else {
		var err error
		if cli, err = c.r.newEtcdClient(c.endpoints(), &c.rpcs); err != nil {
			return fmt.Errorf("client %d: connect: %w", c.id, err)
		}
	}
	opts := locks.Options{
		Name:      locks.DefaultName,
		Prefix:    c.r.cfg.Prefix,
		TTL:       c.r.cfg.Scenario.TTL(),
		KeepAlive: c.r.cfg.KeepAlive,
		OnWakeup: func() {
			c.emit(c.currentGen(), history.Event{Type: history.OK, F: history.FWakeup})
		},
	}
	locker, err := c.r.strategy.New(ctx, cli, opts)
	if err != nil {
		if len(c.r.shared) == 0 {
			cli.Close()
		}
		return fmt.Errorf("client %d: %s: %w", c.id, c.r.strategy.Name, err)
	}
	c.mu.Lock()
	c.cli, c.locker = cli, locker
	c.mu.Unlock()
	return nil
}

func (c *client) currentGen() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// emit records an event of this process unless the worker generation that
// made it has crashed: a crashed process says nothing more.
func (c *client) emit(gen int, e history.Event) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed || gen != c.gen {
		return -1
	}
	e.Process, e.Lock = c.id, locks.DefaultName
	return c.r.record(e)
}

func (c *client) startWorker(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wctx, cancel := context.WithCancel(ctx)
	c.runCtx = ctx
	c.cancel = cancel
	c.done = make(chan struct{})
	gen, cli, locker, done := c.gen, c.cli, c.locker, c.done
	seed := uint64(c.r.cfg.Seed)
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(seed, uint64(c.id)<<16|uint64(gen)))
		c.loop(wctx, gen, cli, locker, rng)
	}()
}

func (c *client) wait() {
	c.mu.Lock()
	done := c.done
	c.mu.Unlock()
	if done != nil {
		<-done
	}
}

// setState tracks the worker's place for targets (holder, waiter:K).
func (c *client) setState(gen int, s clientState, g *locks.Grant, t int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	c.state, c.grant = s, g
	switch s {
	case waiting:
		c.seq = c.r.nextSeq()
	case holding:
		c.heldSince = t
	}
}

// checkpoint blocks while the client is paused: the process is frozen at
// this point of its loop. It returns false when ctx ends.
func (c *client) checkpoint(ctx context.Context) bool {
	for {
		c.mu.Lock()
		p := c.paused
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
func (c *client) loop(ctx context.Context, gen int, cli *clientv3.Client, locker locks.Locker, rng *rand.Rand) {
	w := c.r.cfg.Scenario.Workload
	if gen == 0 {
		sleep(ctx, time.Duration(c.id)*w.Stagger.D())
	}
	failures := 0 // consecutive failed acquires
	for c.checkpoint(ctx) {
		lctx, cancelLock := context.WithCancel(ctx)
		c.setState(gen, waiting, nil, 0)
		c.mu.Lock()
		c.cancelLock = cancelLock
		c.mu.Unlock()
		c.emit(gen, history.Event{Type: history.Invoke, F: history.FAcquire})
		g, err := locker.Lock(lctx)
		c.mu.Lock()
		c.cancelLock = nil
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
			sleep(ctx, time.Duration(10+rng.IntN(40))*time.Millisecond<<min(failures, 5))
			failures++
			continue
		}
		failures = 0
		c.r.acquisitions.Add(1)
		t := c.emit(gen, history.Event{Type: history.OK, F: history.FAcquire, Token: g.Token, Key: g.Key,
			Lease: strconv.FormatInt(int64(g.Lease), 16)})
		c.setState(gen, holding, g, t)
		if c.criticalSection(ctx, gen, cli, g, w) {
			continue
		}
		c.release(gen, locker, g)
		if w.Think > 0 {
			sleep(ctx, w.Think.D())
		}
	}
}

// criticalSection does the workload's work while holding g. It returns
// true when the lease was lost (and recorded as such) so there is nothing
// to release.
func (c *client) criticalSection(ctx context.Context, gen int, cli *clientv3.Client, g *locks.Grant, w scenario.Workload) (lost bool) {
	leaseLost := func() bool {
		select {
		case <-g.Lost:
			c.emit(gen, history.Event{Type: history.OK, F: history.FLeaseLost, Token: g.Token})
			return true
		default:
			return false
		}
	}
	// The hold: end it early, as a careful client does, when the lease is
	// reported lost — unless the process was frozen meanwhile: then it wakes
	// and carries on, unaware, as a process after a GC pause does. Not on
	// ctx: a holder finishes its work at run end. Only during the hold is
	// the client a fault's "holder".
	holdFor := func() bool {
		defer c.setState(gen, idle, nil, 0)
		if w.Hold <= 0 {
			return false
		}
		p0 := c.pauseCount()
		t := time.NewTimer(w.Hold.D())
		defer t.Stop()
		select {
		case <-t.C:
		case <-g.Lost:
			if c.checkpoint(context.Background()); c.pauseCount() == p0 {
				return leaseLost()
			}
		}
		c.checkpoint(context.Background())
		return false
	}
	if w.Kind == scenario.WorkloadHold {
		if holdFor() {
			return true
		}
		return leaseLost()
	}
	if leaseLost() {
		return true
	}
	// read → hold → write(+1). A pause freezes the process between its
	// read and its write: the stale write the scenario is about.
	opCtx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	key := counterKey(c.r.cfg.Prefix)
	c.emit(gen, history.Event{Type: history.Invoke, F: history.FRead})
	resp, err := cli.Get(opCtx, key)
	if err != nil || len(resp.Kvs) == 0 {
		c.emit(gen, history.Event{Type: history.Fail, F: history.FRead, Error: errString(err, "counter missing")})
		return leaseLost()
	}
	v, _ := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
	c.emit(gen, history.Event{Type: history.OK, F: history.FRead, Value: history.IntValue(v)})
	if holdFor() {
		return true
	}
	wctx, wcancel := context.WithTimeout(context.Background(), opTimeout)
	defer wcancel()
	nv := history.IntValue(v + 1)
	c.emit(gen, history.Event{Type: history.Invoke, F: history.FWrite, Value: nv, Token: g.Token})
	if w.Kind == scenario.WorkloadCounterFenced {
		// The resource accepts the write only while the grant's key still
		// exists at the grant's revision: a stale holder is rejected.
		tr, err := cli.Txn(wctx).If(clientv3.Compare(clientv3.CreateRevision(g.Key), "=", g.Token)).
			Then(clientv3.OpPut(key, strconv.FormatInt(v+1, 10))).Commit()
		switch {
		case err != nil:
			c.emit(gen, history.Event{Type: history.Info, F: history.FWrite, Value: nv, Token: g.Token, Error: err.Error()})
		case !tr.Succeeded:
			c.emit(gen, history.Event{Type: history.Fail, F: history.FWrite, Value: nv, Token: g.Token, Error: "stale token"})
		default:
			c.emit(gen, history.Event{Type: history.OK, F: history.FWrite, Value: nv, Token: g.Token})
		}
	} else {
		if _, err := cli.Put(wctx, key, strconv.FormatInt(v+1, 10)); err != nil {
			c.emit(gen, history.Event{Type: history.Info, F: history.FWrite, Value: nv, Token: g.Token, Error: err.Error()})
		} else {
			c.emit(gen, history.Event{Type: history.OK, F: history.FWrite, Value: nv, Token: g.Token})
		}
	}
	return leaseLost()
}

func (c *client) release(gen int, locker locks.Locker, g *locks.Grant) {
	c.emit(gen, history.Event{Type: history.Invoke, F: history.FRelease, Token: g.Token})
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := locker.Unlock(ctx, g); err != nil {
		c.emit(gen, history.Event{Type: history.Info, F: history.FRelease, Token: g.Token, Error: err.Error()})
		return
	}
	c.emit(gen, history.Event{Type: history.OK, F: history.FRelease, Token: g.Token})
}

// crash stops the process as SIGKILL would: its connection drops, its
// worker stops where it stands, and its lease is not revoked, so its keys
// stay until the TTL ends.
func (c *client) crash() error {
	c.mu.Lock()
	if c.crashed {
		c.mu.Unlock()
		return fmt.Errorf("client %d has already crashed", c.id)
	}
	// Recorded under the lock that emit takes: nothing of this process can
	// appear after its crash.
	c.r.record(history.Event{Process: c.id, Type: history.Info, F: history.FCrash, Lock: locks.DefaultName})
	c.crashed = true
	c.state, c.grant = idle, nil
	cli, cancel := c.cli, c.cancel
	if c.paused != nil {
		close(c.paused)
		c.paused = nil
	}
	proxies := c.proxies
	c.mu.Unlock()
	// The network goes first, as when a process is killed: nothing it sends
	// from here on reaches etcd, not even the cleanup of its cancelled calls.
	for _, p := range proxies {
		p.BlackholeTx()
		p.BlackholeRx()
	}
	cli.Close()
	cancel()
	// A proxy's Close waits for its connections to end; the client's side
	// has just been closed, the member's side may take a while.
	closeProxies(&c.r.closing, proxies)
	return nil
}

// closeProxies closes proxies in the background, tracked by wg.
func closeProxies(wg *sync.WaitGroup, proxies []proxy.Server) {
	for _, p := range proxies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Close()
		}()
	}
}

// restart brings a crashed process back as the same process id, with a new
// connection and Locker (its old lease is gone or going).
func (c *client) restart(ctx context.Context) error {
	c.wait()
	c.mu.Lock()
	if !c.crashed {
		c.mu.Unlock()
		return fmt.Errorf("client %d is not crashed", c.id)
	}
	old := c.proxies
	c.proxies = nil
	c.mu.Unlock()
	if len(old) > 0 {
		if err := c.startProxies(); err != nil {
			return err
		}
	}
	if err := c.connect(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	c.crashed = false
	c.gen++
	runCtx := c.runCtx
	c.mu.Unlock()
	c.startWorker(runCtx)
	return nil
}

func (c *client) needProxies(fault string) error {
	if len(c.proxies) == 0 {
		return fmt.Errorf("client %d has no fault proxy (%s): invariant broken", c.id, fault)
	}
	return nil
}

// pause freezes the process: its worker stops at its next checkpoint and
// nothing it sends (keepalives included) gets through.
func (c *client) pause() error {
	if err := c.needProxies("pause"); err != nil {
		return err
	}
	c.mu.Lock()
	if c.paused != nil || c.crashed {
		c.mu.Unlock()
		return fmt.Errorf("client %d is already paused or crashed", c.id)
	}
	c.paused = make(chan struct{})
	c.pauses++
	c.r.record(history.Event{Process: c.id, Type: history.OK, F: history.FPause, Lock: locks.DefaultName})
	c.mu.Unlock()
	for _, p := range c.proxies {
		p.BlackholeTx()
		p.BlackholeRx()
	}
	return nil
}

func (c *client) pauseCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pauses
}

func (c *client) resume() error {
	for _, p := range c.proxies {
		p.UnblackholeTx()
		p.UnblackholeRx()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused == nil {
		return nil // crashed meanwhile
	}
	close(c.paused)
	c.paused = nil
	c.r.record(history.Event{Process: c.id, Type: history.OK, F: history.FResume, Lock: locks.DefaultName})
	return nil
}

// isolate cuts (or restores) the client's network; its process runs on.
func (c *client) isolate(cut bool) error {
	if err := c.needProxies("isolate"); err != nil {
		return err
	}
	for _, p := range c.proxies {
		if cut {
			p.BlackholeTx()
			p.BlackholeRx()
		} else {
			p.UnblackholeTx()
			p.UnblackholeRx()
		}
	}
	return nil
}

// delay adds d of latency each way to everything the client sends and
// receives; 0 removes it.
func (c *client) delay(d time.Duration) error {
	if err := c.needProxies("delay"); err != nil {
		return err
	}
	for _, p := range c.proxies {
		if d > 0 {
			p.DelayTx(d, 0)
			p.DelayRx(d, 0)
		} else {
			p.UndelayTx()
			p.UndelayRx()
		}
	}
	return nil
}

func (c *client) close() {
	c.mu.Lock()
	if c.paused != nil {
		close(c.paused)
		c.paused = nil
	}
	cli, locker, cancel, crashed := c.cli, c.locker, c.cancel, c.crashed
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	c.wait()
	if locker != nil && !crashed {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		locker.Close(ctx)
		cancel()
	}
	if cli != nil && len(c.r.shared) == 0 {
		cli.Close()
	}
	closeProxies(&c.r.closing, c.proxies)
}

// sleep waits d or until ctx ends; it reports whether the full time passed.
func sleep(ctx context.Context, d time.Duration) bool {
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

// sharedConn is an etcd connection several lock clients use
// (Config.SharedConns).
type sharedConn struct {
	cli  *clientv3.Client
	rpcs locks.RPCCounter
}

// CheckSharedConns rejects a SharedConns setting the scenario cannot use:
// Run checks it, and so can a caller before it starts anything.
func CheckSharedConns(sc scenario.Scenario, n int) error {
	switch {
	case n < 0:
		return fmt.Errorf("shared connections %d: must be ≥ 0 (0: one connection per client)", n)
	case n > 0 && sc.NeedsProxies():
		return fmt.Errorf("scenario %s has client faults, which act on one client's own connection: run it without shared connections", sc.Name)
	}
	return nil
}

// rpcsOf is client id's RPC count. On a shared connection the RPCs of its
// clients cannot be told apart: its count is shared out evenly among them
// (the total stays exact).
func (r *runner) rpcsOf(id int) int64 {
	n := len(r.shared)
	if n == 0 {
		return r.clients[id].rpcs.Count()
	}
	total := r.shared[id%n].rpcs.Count()
	users := int64((len(r.clients) - id%n + n - 1) / n) // clients i with i mod n == id mod n
	k := int64(id / n)                                  // this client's place among them
	share := total / users
	if k < total%users {
		share++
	}
	return share
}
