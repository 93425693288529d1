// Package locks is what every lock strategy is, on any backend: the
// Locker interface, the Grant it hands out, the errors that say whether a
// failed call certainly holds nothing, the options that mean the same on
// every backend, and the registry of strategies by name.
//
// A strategy is judged only through the history its grants produce, so a
// Grant carries what the checker and the fenced resource need: the fencing
// token (strictly increasing across holders of one lock), the key, the
// lease or session the key lives with, and a channel that closes when the
// client learns that it lost the lock.
//
// A strategy runs on one backend (Strategy.Backend: etcd, redis, ...),
// over the connection that backend dials for each client (Conn). What is
// a backend's own — etcd's lease keeper and keepalive policies, Redis's
// renewal — lives in that backend's package (etcd/etcdlocks,
// redislocks), which builds its strategies' Factory from its own typed
// one; this package imports no backend.
package locks

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockbench/lockbench/verdict"
)

// Grant is a held lock.
type Grant struct {
	// Key is the backend key whose existence is the lock.
	Key string
	// Token is a fencing token that grows with every new holder (etcd:
	// Key's create revision; Redis: a counter). A resource guarded by the
	// lock compares it to reject a stale holder's writes; 0 when the
	// strategy has none to give.
	Token int64
	// Lease is the lease or session Key lives and dies with (etcd's lease
	// ID), for diagnosis and for telling whose key went; 0 when the
	// backend has none (a Redis key carries its own expiry).
	Lease int64
	// Lost is closed when the client learns that the lock is gone (its
	// lease expired, was revoked or could not be renewed); the holder must
	// stop acting on the lock. It may close late: the server lets a lock go
	// before the client hears of it.
	Lost <-chan struct{}
}

// Locker is one client's handle on one named lock. A Locker is used by one
// goroutine at a time, as a client process is in a history.
type Locker interface {
	// Lock blocks until the lock is held or ctx ends. On error the lock is
	// not held by this call, and the error wraps ErrNotAcquired when that is
	// certain (the waiter's key is known to be gone); otherwise the outcome
	// is unknown (e.g. the cleanup after a cancel did not complete).
	Lock(ctx context.Context) (*Grant, error)
	// Unlock gives up g. It deletes only g's own key, so a holder whose
	// lease expired never removes its successor's lock.
	Unlock(ctx context.Context, g *Grant) error
	// Close ends the client's session and gives up what it holds on the
	// backend (etcd: revokes its lease, unless the lease is shared by the
	// client's connection, whose to revoke it is).
	Close(ctx context.Context) error
}

// TryLocker is a Locker that can also attempt the lock without waiting.
type TryLocker interface {
	Locker
	// TryLock takes the lock if it is free and fails with ErrLocked (and
	// ErrNotAcquired) at once if it is held.
	TryLock(ctx context.Context) (*Grant, error)
}

// Sentinel errors, named after the noun as in etcd's concurrency package.
var (
	// ErrNotAcquired wraps every Lock error after which the caller certainly
	// does not hold the lock.
	ErrNotAcquired = errors.New("lock not acquired")
	// ErrLocked is returned by TryLock when another client holds the lock.
	ErrLocked = fmt.Errorf("locked by another client: %w", ErrNotAcquired)
	// ErrLeaseLost is returned when the client's lease is gone.
	ErrLeaseLost = errors.New("lease lost")
)

// Defaults for Options.
const (
	DefaultTTL  = 5 * time.Second
	DefaultName = "lock"
)

// Options are what every strategy is given, on every backend. What a
// backend adds (etcd's keepalive policy and shared lease) comes with its
// connection (Conn).
type Options struct {
	// Name is the lock's name; strategies derive their key(s) from it.
	Name string
	// Prefix is the run's key namespace (e.g. "/lockbench/<run-id>/"): a
	// strategy reads and writes nothing outside it.
	Prefix string
	// TTL is how long the lock outlives a client that stops renewing it
	// (etcd: the lease TTL; Redis: the key's expiry).
	TTL time.Duration
	// OnWakeup, when set, is called each time a waiter is woken by a watch
	// event; the runner records it as a `wakeup` event (herd metrics). A
	// strategy that waits inside code with no hook (etcd's Mutex, a
	// server-side lock service, a retry loop) never calls it.
	OnWakeup func()
}

// WithDefaults fills zero fields and checks what is true of every
// backend; a backend's own package checks the rest (etcd: whole seconds).
func (o Options) WithDefaults() (Options, error) {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	switch {
	case o.TTL < 0:
		return o, fmt.Errorf("lock TTL %s: must be > 0", o.TTL)
	case strings.Contains(o.Name, "/"):
		return o, fmt.Errorf("lock name %q: must not contain /", o.Name)
	}
	if o.OnWakeup == nil {
		o.OnWakeup = func() {}
	}
	return o, nil
}

// Key is the lock's key (or key prefix, for queue strategies).
func (o Options) Key() string { return o.Prefix + "locks/" + o.Name }

// Conn is one client's connection to a backend, as the backend dialed it
// (etcd: *etcdlocks.Conn). A strategy's Factory asserts the concrete type
// of its own backend's connection.
type Conn interface {
	// Backend names the backend the connection is to (Strategy.Backend).
	Backend() string
}

// Factory makes one client's Locker over its connection to the
// strategy's backend.
type Factory func(ctx context.Context, conn Conn, opts Options) (Locker, error)

// Strategy is a registered lock implementation.
type Strategy struct {
	Name        string
	Description string
	Origin      string
	// Backend is the system the strategy runs on ("etcd", "redis"): the
	// backend a runner must deploy and dial for it. Register refuses a
	// strategy without one.
	Backend string
	// Buggy marks a strategy kept on purpose to prove the checker catches
	// its bug; the suite expects it to fail.
	Buggy bool
	// LockService marks a strategy that runs on a server-side lock service
	// (etcd's v3lock), which a burst of cancelled calls can leave unable
	// to wake waiters: a harness that reuses a deployment checks the
	// service after such a strategy's run.
	LockService bool
	// Hidden keeps a strategy out of Names and All (so out of the default
	// suite, bench and `lockbench list`), while run and suite still find it
	// by name: one registered for a single purpose, such as reproducing a
	// server bug (rpc-trusting), whose verdicts elsewhere would mean
	// nothing.
	Hidden bool
	// Runtime, for a strategy that runs on something lockbench does not
	// bring (an adapter's interpreter or binary), says whether that is
	// installed here: nil, or an error naming what to install. `lockbench
	// list` shows every hidden strategy that has one, with its answer, so
	// that the lock clients one can run are found without reading docs.
	Runtime func(context.Context) error
	// Process marks a strategy whose Lockers are processes of their own
	// (an adapter) given only the members' addresses: no credentials, no
	// TLS files. A harness refuses it on a cluster that needs either,
	// before anything starts, rather than let every acquire fail.
	Process bool
	// OwnLease marks a strategy that keeps its lease or session itself
	// (e.g. with etcd's concurrency.Session) instead of through its
	// backend's keeper, so a backend's refresh policy does not apply to
	// it: a harness runs it once whatever policies were asked for, and
	// labels and judges its runs as its own, never as a policy it did not
	// use.
	OwnLease bool
	// Expect, when set, is what this strategy expects of built-in (or any)
	// scenarios by scenario name, check by check, over the scenario's own
	// expectations: a user's strategy carries its known limits with it
	// instead of copying scenario files (verdict "any" un-asserts a check).
	Expect map[string]map[string]verdict.Verdict
	// Order is the grant order the strategy promises, which its fairness
	// verdict is judged against (docs/checker.md): verdict.FIFO for a
	// queue (a later request granted before an earlier one that is still
	// waiting fails, unless the earlier one's outcome or a fault explains
	// it), verdict.NoOrder for a try-lock where whoever retries first
	// wins. A strategy that leaves it unset (OrderUnknown) is judged as
	// NoOrder: only waits that are long relative to the run fail it.
	Order verdict.Order
	New   Factory
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Strategy{}
)

// Register adds a strategy; registering a name twice is a programming error.
func Register(s Strategy) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[s.Name]; dup {
		panic("locks: strategy registered twice: " + s.Name)
	}
	if s.Backend == "" || s.New == nil {
		panic("locks: strategy registered without a backend or a factory: " + s.Name)
	}
	registry[s.Name] = s
}

// Names lists the registered strategies in a stable order, without the
// hidden ones (Strategy.Hidden).
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, 0, len(registry))
	for n, s := range registry {
		if s.Hidden {
			continue
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup finds a strategy by name; the error lists the valid names.
func Lookup(name string) (Strategy, error) {
	registryMu.RLock()
	s, ok := registry[name]
	registryMu.RUnlock()
	if !ok {
		return Strategy{}, fmt.Errorf("unknown lock %q: valid locks are %s", name, strings.Join(Names(), ", "))
	}
	return s, nil
}

// HiddenWithRuntime returns the hidden strategies that need a runtime
// (Strategy.Runtime), by name: the lock clients run by name.
func HiddenWithRuntime() []Strategy {
	registryMu.RLock()
	defer registryMu.RUnlock()
	var out []Strategy
	for _, s := range registry {
		if s.Hidden && s.Runtime != nil {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// All returns every registered strategy, by name.
func All() []Strategy {
	var out []Strategy
	for _, n := range Names() {
		s, _ := Lookup(n)
		out = append(out, s)
	}
	return out
}

// Process is a Locker that runs as an operating-system process of its
// own (an adapter, package adapters). The runner's client faults act on
// the real process through it, besides holding the client's traffic: a
// crash kills it (the restarted client's Locker starts a fresh one), a
// pause freezes it, so that its own lease refresh stops as a frozen
// program's would.
type Process interface {
	// Kill SIGKILLs the process (and its children) and reaps it; the next
	// Lock starts a fresh one.
	Kill() error
	// Stop freezes the process (SIGSTOP).
	Stop() error
	// Cont thaws it (SIGCONT).
	Cont() error
}
