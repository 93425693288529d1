package scenarios

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
)

// Config is everything a run needs beyond the scenario itself.
type Config struct {
	Scenario Scenario
	Lock     string
	Seed     int64
	// Prefix is the run's key namespace; nothing outside it is touched.
	Prefix    string
	Endpoints []string
	// DialTimeout bounds connecting each client (default 5 s).
	DialTimeout time.Duration
	KeepAlive   locks.KeepAlive
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
}

// releaseTimeout bounds an Unlock: a release must finish even after the run
// has ended, but must not hang the run on a dead cluster.
const releaseTimeout = 5 * time.Second

// Run drives Scenario.Clients clients against the lock for the scenario's
// duration and returns the recorded history. ctx ending stops the run
// early, cleanly: waiters are cancelled, holders release, and the history
// so far is returned with Interrupted set.
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	sc := cfg.Scenario
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	strategy, err := locks.Lookup(cfg.Lock)
	if err != nil {
		return nil, err
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}

	// The recorder is made once every client is connected (below), so the
	// history's time 0 is the moment the clients start and set-up cost is
	// not measured as lock latency; record is only called after that.
	var rec *history.Recorder
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var stopOnce sync.Once
	var stopped string
	record := func(e history.Event) int64 {
		t, err := rec.Append(e)
		if err != nil {
			stopOnce.Do(func() { stopped = err.Error() })
			stopRun()
		}
		return t
	}

	clients := make([]*client, sc.Clients)
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.close()
			}
		}
	}()
	for i := range clients {
		c, err := newClient(ctx, i, cfg, strategy, record)
		if err != nil {
			return nil, err
		}
		clients[i] = c
	}

	if cfg.NoRecord {
		rec = history.NewDiscardRecorder()
	} else {
		rec = history.NewRecorder(cfg.MaxEvents)
	}
	start := time.Now()
	deadline, cancelDeadline := context.WithTimeout(runCtx, sc.Duration)
	defer cancelDeadline()
	g, gctx := errgroup.WithContext(deadline)
	for _, c := range clients {
		rng := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(c.id)))
		g.Go(func() error { return c.loop(gctx, sc.Workload, rng) })
	}
	err = g.Wait()
	elapsed := time.Since(start)
	out := &Outcome{
		Events:      rec.Events(),
		Start:       rec.Start(),
		Elapsed:     elapsed,
		Interrupted: ctx.Err() != nil,
		Stopped:     stopped,
	}
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return out, err
	}
	return out, nil
}

// client is one simulated process: its own etcd connection and Locker.
type client struct {
	id     int
	lock   string
	cli    *clientv3.Client
	locker locks.Locker
	record func(history.Event) int64
}

func newClient(ctx context.Context, id int, cfg Config, s locks.Strategy, record func(history.Event) int64) (*client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("client %d: connect: %w", id, err)
	}
	c := &client{id: id, cli: cli, record: record}
	opts := locks.Options{
		Name:      locks.DefaultName,
		Prefix:    cfg.Prefix,
		TTL:       cfg.Scenario.TTL(),
		KeepAlive: cfg.KeepAlive,
		OnWakeup: func() {
			c.record(history.Event{Process: id, Type: history.OK, F: history.FWakeup, Lock: c.lock})
		},
	}
	c.lock = opts.Name
	c.locker, err = s.New(ctx, cli, opts)
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("client %d: %s: %w", id, s.Name, err)
	}
	return c, nil
}

func (c *client) close() {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	c.locker.Close(ctx)
	c.cli.Close()
}

// loop runs the workload until ctx ends. Errors from the lock are recorded,
// not returned: a run is a measurement, and failures are its data.
func (c *client) loop(ctx context.Context, w Workload, rng *rand.Rand) error {
	for ctx.Err() == nil {
		c.record(history.Event{Process: c.id, Type: history.Invoke, F: history.FAcquire, Lock: c.lock})
		g, err := c.locker.Lock(ctx)
		if err != nil {
			typ := history.Info
			if errors.Is(err, locks.ErrNotAcquired) {
				typ = history.Fail
			}
			c.record(history.Event{Process: c.id, Type: typ, F: history.FAcquire, Lock: c.lock, Error: err.Error()})
			if ctx.Err() == nil {
				// Back off briefly so a broken cluster is not hammered.
				sleep(ctx, time.Duration(10+rng.IntN(40))*time.Millisecond)
			}
			continue
		}
		c.record(history.Event{Process: c.id, Type: history.OK, F: history.FAcquire, Lock: c.lock,
			Token: g.Token, Key: g.Key, Lease: strconv.FormatInt(int64(g.Lease), 16)})
		if w.Hold > 0 {
			time.Sleep(w.Hold)
		}
		c.release(g)
		if w.Think > 0 {
			sleep(ctx, w.Think)
		}
	}
	return nil
}

func (c *client) release(g *locks.Grant) {
	c.record(history.Event{Process: c.id, Type: history.Invoke, F: history.FRelease, Lock: c.lock, Token: g.Token})
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := c.locker.Unlock(ctx, g); err != nil {
		c.record(history.Event{Process: c.id, Type: history.Info, F: history.FRelease, Lock: c.lock, Token: g.Token, Error: err.Error()})
		return
	}
	c.record(history.Event{Process: c.id, Type: history.OK, F: history.FRelease, Lock: c.lock, Token: g.Token})
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
