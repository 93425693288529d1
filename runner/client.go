package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/pkg/v3/proxy"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
)

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
