// Package redisrun runs Redis lock strategies (package redislocks) on a
// Redis deployment of real processes (package rediscluster), under the
// faults that exist on Redis, into a history that package check judges as
// it judges etcd's (issue #31). Clients take turns on one lock: acquire,
// hold, release, as the runner's hold workload does for etcd. A fault is
// timed against the clients' grants, as a targeted nemesis is: the
// failover that loses a lock must come while it is held.
//
// What is etcd's in a history (revisions, lease IDs, key-deleted) is not
// written: a grant's token is the strategy's counter, its key the Redis
// key, and the checks that read what is absent say so in their notes.
package redisrun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/redis/redisbackend"
	"github.com/lockbench/lockbench/redis/rediscluster"
	"github.com/lockbench/lockbench/redis/redislocks"
)

// Strategies a Spec may name.
const (
	SetNX   = redislocks.SetNXName
	Redlock = redislocks.RedlockName
)

// Defaults of Spec: a batch job's lock, held 10 s under a 30 s key. The
// hold is longer than a Sentinel failover (2–6 s here), so that the
// holder is still at work when a promoted replica that never had its key
// grants it again, and the key's first renewal (TTL/3) comes no earlier
// than the hold's end: the double grant is then the rule, not a race
// with the holder's renewal (docs/redis.md). The duration gives the unreplicated failover
// two releases at which to cut the replicas' links.
const (
	DefaultHold     = 10 * time.Second
	DefaultTTL      = 30 * time.Second
	DefaultDuration = 25 * time.Second
)

// Spec is one run.
type Spec struct {
	// Lock is SetNX or Redlock.
	Lock string
	// Fault is one of FaultNames ("none" for none).
	Fault string
	// Clients take turns on the lock (default 3).
	Clients int
	// Hold is how long each grant is held (default DefaultHold).
	Hold time.Duration
	// Think is how long a client waits after its release before it asks
	// again (default 100 ms), so that a release hands the lock to a
	// waiter rather than back to its holder.
	Think time.Duration
	// TTL is the key's expiry (default DefaultTTL).
	TTL time.Duration
	// Duration is how long clients keep asking (default DefaultDuration);
	// holds begun by then are finished.
	Duration time.Duration
	// Cluster shapes the deployment (the binaries, the data folder); its
	// topology is the strategy's.
	Cluster rediscluster.Options
}

// Result is a run's history and its check.
type Result struct {
	Events  []history.Event
	Checked check.Checked
}

// Validate says what is wrong with a spec, before anything starts.
func (s Spec) Validate() error { return s.defaults() }

func (s *Spec) defaults() error {
	if s.Clients == 0 {
		s.Clients = 3
	}
	if s.Hold == 0 {
		s.Hold = DefaultHold
	}
	if s.TTL == 0 {
		s.TTL = DefaultTTL
		if s.Fault == PauseHolder {
			s.TTL = PauseHolderTTL
		}
	}
	if s.Think == 0 {
		s.Think = 100 * time.Millisecond
	}
	if s.Duration == 0 {
		s.Duration = DefaultDuration
	}
	if s.Fault == "" {
		s.Fault = NoFault
	}
	f, ok := faults[s.Fault]
	switch {
	case s.Lock != SetNX && s.Lock != Redlock:
		return fmt.Errorf("lock %q: want %s or %s", s.Lock, SetNX, Redlock)
	case !ok:
		return fmt.Errorf("fault %q: want one of %v", s.Fault, FaultNames())
	case f.expect[s.Lock] == nil:
		return fmt.Errorf("fault %q has no meaning for %s: it applies to %v", s.Fault, s.Lock, LocksFor(s.Fault))
	case s.Clients < 2 || s.Clients > 64:
		return fmt.Errorf("clients %d: must be 2..64", s.Clients)
	case s.Hold < 0 || s.Think < 0 || s.Duration <= 0:
		return fmt.Errorf("hold %s, think %s, duration %s: want hold and think ≥ 0 and duration > 0", s.Hold, s.Think, s.Duration)
	case s.Fault == PauseHolder && settle+s.Hold+s.Think+s.TTL+time.Second > s.Duration:
		// The holder is frozen at a grant up to a hold after settle; its
		// key must expire while the others still ask.
		return fmt.Errorf("fault %s: the frozen holder's key (ttl %s) must expire while the others ask: want %s + hold %s + think %s + ttl + 1s ≤ duration %s",
			PauseHolder, s.TTL, settle, s.Hold, s.Think, s.Duration)
	}
	return nil
}

// Run starts the strategy's deployment, runs the clients and the fault,
// closes everything and checks the history. Exclusion, fencing and the
// rest are check's verdicts, untouched.
func Run(ctx context.Context, spec Spec) (res *Result, err error) {
	if err := spec.defaults(); err != nil {
		return nil, err
	}
	redislocks.QuietLogs()
	copts, _ := redisbackend.Deployment(spec.Lock, spec.Cluster)
	dep, err := rediscluster.Start(ctx, copts)
	if err != nil {
		return nil, fmt.Errorf("start redis: %w", err)
	}
	defer func() {
		if cerr := dep.Close(); cerr != nil && err == nil {
			res, err = nil, fmt.Errorf("close redis: %w", cerr)
		}
	}()
	rec := history.NewRecorder(0)
	w := &world{spec: spec, dep: dep, rec: rec, grants: make(chan grantSeen, 64), holder: -1, interrupted: ctx.Done()}
	for range spec.Clients {
		w.frozen = append(w.frozen, &freeze{})
		w.links = append(w.links, newLinks())
	}
	if err := w.drive(ctx); err != nil {
		return nil, err
	}
	events := rec.Events()
	return &Result{Events: events, Checked: check.Check(events, check.Options{})}, nil
}

// grantSeen is a grant the nemesis may time a fault against.
type grantSeen struct {
	client int
	key    string
	token  int64
	at     time.Time
}

// world is one run in flight.
type world struct {
	spec   Spec
	dep    *rediscluster.Cluster
	rec    *history.Recorder
	grants chan grantSeen // clients → nemesis, dropped when it is full
	links  []*links       // per client: its connections to the Redlock instances
	frozen []*freeze      // per client: its process, which holder-pause freezes
	// interrupted closes when the run's caller gives up (a signal): holds
	// end then, not at the end of the asking, which they outlive.
	interrupted <-chan struct{}

	mu         sync.Mutex
	released   chan struct{} // closed at the next release ok
	releasedAt time.Time     // when the last release ended ok
	holder     int           // the client that holds the lock, by its own account; -1 for none
	holds      int           // grants made so far: which hold holder's is
}

// drive runs the clients and the nemesis until Duration, then waits for
// every hold begun to end.
func (w *world) drive(ctx context.Context) error {
	asking, stop := context.WithTimeout(ctx, w.spec.Duration)
	defer stop()
	var wg sync.WaitGroup
	errs := make([]error, w.spec.Clients)
	for id := range w.spec.Clients {
		wg.Go(func() { errs[id] = w.client(asking, id) })
	}
	nerr := w.nemesis(ctx, asking)
	wg.Wait()
	return errors.Join(append(errs, nerr)...)
}

// record appends e; the recorder's limit is far above any Redis run.
func (w *world) record(e history.Event) { _, _ = w.rec.Append(e) }

// lastRelease is when the last release ended ok: a grant made since then
// may have come before the nemesis woke to the release.
func (w *world) lastRelease() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.releasedAt
}

// nextRelease is a channel closed at the next release that ends ok.
func (w *world) nextRelease() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.released == nil {
		w.released = make(chan struct{})
	}
	return w.released
}

func (w *world) releasedOK() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.releasedAt = time.Now()
	if w.released != nil {
		close(w.released)
		w.released = nil
	}
}

// setHolder records that client id holds the lock (holding) or is about
// to release it.
func (w *world) setHolder(id int, holding bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if holding {
		w.holder, w.holds = id, w.holds+1
	} else if w.holder == id {
		w.holder = -1
	}
}

// holding is the client that holds the lock (-1 for none) and which
// hold it is: the same answer twice means it held in between.
func (w *world) holding() (client, hold int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.holder, w.holds
}

// lockOptions are every client's Locker options, as the strategies
// fill them in: the faults read the same keys.
func (w *world) lockOptions() redislocks.Options {
	return redislocks.Options{Name: locks.DefaultName, TTL: w.spec.TTL}
}

// locker makes client id's Locker, through the strategy's registered
// factory as every runner does, and what closes its connections.
func (w *world) locker(ctx context.Context, id int) (locks.Locker, func(), error) {
	st, err := locks.Lookup(w.spec.Lock)
	if err != nil {
		return nil, nil, err
	}
	var clis []*redis.Client
	if w.spec.Lock == Redlock {
		for _, a := range w.dep.Addrs() {
			clis = append(clis, redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1, DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond,
				Dialer: w.frozen[id].dial(w.links[id].dial)}))
		}
	} else {
		clis = append(clis, redis.NewFailoverClient(&redis.FailoverOptions{MasterName: rediscluster.MasterName, SentinelAddrs: w.dep.SentinelAddrs(),
			MaxRetries: -1, DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond,
			Dialer: w.frozen[id].dial((&net.Dialer{Timeout: 200 * time.Millisecond}).DialContext)}))
	}
	closeAll := func() {
		for _, c := range clis {
			c.Close()
		}
	}
	o := w.lockOptions()
	l, err := st.New(ctx, &redislocks.Conn{Instances: clis}, locks.Options{Name: o.Name, Prefix: o.Prefix, TTL: o.TTL})
	if err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("client %d: %w", id, err)
	}
	return l, closeAll, nil
}

// client takes turns on the lock until ctx ends: acquire, hold (ending
// early if told the grant is lost), release.
func (w *world) client(ctx context.Context, id int) error {
	l, closeConns, err := w.locker(ctx, id)
	if err != nil {
		return err
	}
	defer closeConns()
	defer l.Close(context.Background())
	ev := func(ty history.Type, f history.Function, token int64, key string, err error) {
		e := history.Event{Process: int32(id), Type: ty, F: f, Lock: "lock", Token: token, Key: key}
		if err != nil {
			e.Error = err.Error()
		}
		w.record(e)
	}
	for ctx.Err() == nil {
		ev(history.Invoke, history.FAcquire, 0, "", nil)
		g, err := l.Lock(ctx)
		if err != nil {
			ev(outcome(err, locks.ErrNotAcquired), history.FAcquire, 0, "", err)
			continue
		}
		ev(history.OK, history.FAcquire, g.Token, g.Key, nil)
		w.setHolder(id, true)
		select {
		case w.grants <- grantSeen{client: id, key: g.Key, token: g.Token, at: time.Now()}:
		default:
		}
		t := time.NewTimer(w.spec.Hold)
		lost := false
		select {
		case <-t.C:
		case <-w.interrupted:
		case <-g.Lost:
			lost = true
		}
		t.Stop()
		// A frozen holder notices neither the end of its hold nor a loss
		// until it is thawed.
		w.frozen[id].wait()
		if lost {
			ev(history.OK, history.FLeaseLost, g.Token, "", nil)
		}
		w.setHolder(id, false)
		ev(history.Invoke, history.FRelease, 0, "", nil)
		err = l.Unlock(context.Background(), g)
		ev(outcome(err, redislocks.ErrNotHeld), history.FRelease, 0, "", err)
		if err == nil {
			w.releasedOK()
		}
		select {
		case <-ctx.Done():
		case <-time.After(w.spec.Think):
		}
	}
	return nil
}

// outcome is ok for no error, fail for an error that is certain (it wraps
// certain), info for any other.
func outcome(err, certain error) history.Type {
	switch {
	case err == nil:
		return history.OK
	case errors.Is(err, certain):
		return history.Fail
	}
	return history.Info
}
