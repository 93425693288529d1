// Package locks defines the Locker interface that every lock strategy
// implements, and a registry of strategies by name.
//
// A strategy is judged only through the history its grants produce, so a
// Grant carries what the checker and the fenced resource need: the fencing
// token (the lock key's create revision, strictly increasing across holders
// of one lock), the key, the lease and a channel that closes when the client
// learns its lease is gone.
//
// # Leases
//
// Every strategy takes its lease from one shared keeper (lease.go): one
// lease per Locker, granted by the first Lock and reused while it lives; a
// Lock after the lease is lost grants a new one (and a Lock whose write is
// refused because the server no longer knows the lease retries once with a
// new one). Options.KeepAlive picks the refresh: the client's KeepAlive
// stream (auto), one KeepAliveOnce every 0.8×TTL (seed), or a KeepAliveOnce
// every TTL/4 with the deadline counted from each refresh's send time
// (safe, safe.go). Close revokes the lease. A client holding several names
// shares one lease among their Lockers (Options.Lease, a ClientLease),
// which then outlives them.
//
// # Errors
//
// A Lock error wraps ErrNotAcquired only when the caller certainly holds
// nothing and left nothing behind: the waiter's key is known to be gone.
// Each strategy gets there the same way. A failure before any key is
// written (no lease, context ended while a txn strategy waits) is certain.
// A failure after the waiter's key was written (cancelled or failed wait)
// deletes the key, at its create revision, and is certain once the delete
// is confirmed. A failure of the write itself (the put, or the v3lock Lock
// call, returned an error: it may have happened, or may still happen) or
// of that cleanup is settled by revoking the client's lease, which removes
// any key under it and makes any later put with it fail; it is certain
// once the revoke is confirmed. Otherwise the error does not wrap
// ErrNotAcquired (outcome unknown) and the lease, no longer refreshed,
// expires within one TTL, so no stray key can block the lock for longer.
// Likewise an Unlock whose delete cannot be confirmed gives the lease up.
package locks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/verdict"
)

// Grant is a held lock.
type Grant struct {
	// Key is the etcd key whose existence is the lock.
	Key string
	// Token is Key's create revision: a fencing token that grows with every
	// new holder. A resource guarded by the lock compares it
	// (CreateRevision(Key) == Token) to reject a stale holder's writes.
	Token int64
	// Lease is the lease Key is attached to.
	Lease clientv3.LeaseID
	// Lost is closed when the client learns that the lease is gone (expired,
	// revoked, or no longer kept alive); the holder must stop acting on the
	// lock. It may close late: the server expires a lease before the client
	// hears of it.
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
	// Unlock gives up g. It deletes only g's own key at g's revision, so a
	// holder whose lease expired never removes its successor's lock.
	Unlock(ctx context.Context, g *Grant) error
	// Close ends the client's session and revokes its lease (a lease
	// shared through Options.Lease is its ClientLease's to revoke).
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

// KeepAlive is how a client keeps its lease alive.
type KeepAlive string

// Keepalive policies.
const (
	// KeepAliveAuto is the client's KeepAlive stream, refreshing every TTL/3.
	KeepAliveAuto KeepAlive = "auto"
	// KeepAliveSeed sends one KeepAliveOnce every 0.8×TTL, as the seed
	// article's code schedules it: a little network delay lets the lease
	// lapse while the holder believes it is alive.
	KeepAliveSeed KeepAlive = "seed"
	// KeepAliveSafe counts the lease's life from the client's side of the
	// server's clock: the deadline is the *send* time of the last answered
	// refresh + the granted TTL − Options.SafeMargin, and a timer closes
	// Lost exactly then, so the holder stops believing before the server
	// can expire the lease (which counts from when the leader received the
	// refresh, necessarily later). auto and seed count from the answer's
	// arrival and may believe up to a return trip (auto: plus up to 1 s of
	// polling) after the server expired the lease. See docs/leases.md.
	KeepAliveSafe KeepAlive = "safe"
)

// KeepAliveOwn labels the runs of a strategy that keeps its own lease
// (Strategy.OwnLease): no policy of this package applies to it. It is a
// label, not a policy Options or a flag accept.
const KeepAliveOwn KeepAlive = "own"

// EffectiveKeepAlive is the policy lock's clients really run under when k
// is asked for: KeepAliveOwn for a strategy that keeps its own lease, else
// k or the default.
func EffectiveKeepAlive(lock string, k KeepAlive) KeepAlive {
	if st, err := Lookup(lock); err == nil && st.OwnLease {
		return KeepAliveOwn
	}
	return KeepAliveOrDefault(k)
}

// DefaultKeepAlive is the policy of Options with none: safe, the one
// policy whose holder stops before the server can expire its lease
// (client-isolation: exclusion held in every seed under safe, failed in
// most under auto; docs/leases.md). Records written before policies were
// recorded carry none and ran auto (see KeepAlive.Overrun).
const DefaultKeepAlive = KeepAliveSafe

// KeepAliveOrDefault is k, or DefaultKeepAlive when k is empty.
func KeepAliveOrDefault(k KeepAlive) KeepAlive {
	if k == "" {
		return DefaultKeepAlive
	}
	return k
}

// KeepAlives lists the keepalive policies, for flag help and errors.
var KeepAlives = []KeepAlive{KeepAliveAuto, KeepAliveSeed, KeepAliveSafe}

// ParseKeepAlive checks a policy name; the error lists the valid ones.
func ParseKeepAlive(s string) (KeepAlive, error) {
	for _, k := range KeepAlives {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("keepalive %q: valid policies are %s", s, keepAliveList())
}

func keepAliveList() string {
	names := make([]string, len(KeepAlives))
	for i, k := range KeepAlives {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// Defaults for Options.
const (
	DefaultTTL  = 5 * time.Second
	DefaultName = "lock"
)

// Options are common to all strategies.
type Options struct {
	// Name is the lock's name; strategies derive their key(s) from it.
	Name string
	// Prefix is the run's key namespace (e.g. "/lockbench/<run-id>/"): a
	// strategy reads and writes nothing outside it.
	Prefix string
	// TTL is the lease TTL, in whole seconds (etcd grants seconds).
	TTL time.Duration
	// KeepAlive is the lease refresh policy.
	KeepAlive KeepAlive
	// SafeMargin is what the safe policy takes off the TTL for the two
	// clocks' rate difference and the timer's lateness (0: DefaultSafeMargin
	// of the TTL). It must be below TTL/2: a larger one leaves too little
	// time between refreshes.
	SafeMargin time.Duration
	// OnWakeup, when set, is called each time a waiter is woken by a watch
	// event; the runner records it as a `wakeup` event (herd metrics).
	// queue and queue-naive call it when the predecessor's key is deleted,
	// txn-watch when the lock key is deleted (a delete older than the
	// waiter's last attempt does not count). mutex and rpc never call it:
	// they wait inside etcd's code (client Mutex, server lock service),
	// which has no hook.
	OnWakeup func()
	// Lease, when set, is the client's lease every Locker of its
	// connection shares (ClientLease); nil, the Locker keeps its own. The
	// strategies on lockbench's lease keeper use it; one that keeps its
	// lease otherwise (Strategy.OwnLease, a process adapter, a user's)
	// may ignore it.
	Lease *ClientLease
}

// WithDefaults fills zero fields and validates the rest.
func (o Options) WithDefaults() (Options, error) {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	o.KeepAlive = KeepAliveOrDefault(o.KeepAlive)
	switch {
	case o.TTL < time.Second || o.TTL%time.Second != 0:
		return o, fmt.Errorf("lease TTL %s: must be a whole number of seconds ≥1s", o.TTL)
	case !slices.Contains(KeepAlives, o.KeepAlive):
		return o, fmt.Errorf("keepalive %q: valid policies are %s", o.KeepAlive, keepAliveList())
	case o.SafeMargin < 0 || o.SafeMargin >= o.TTL/2:
		return o, fmt.Errorf("safe margin %s: must be ≥0 and below half the TTL (%s)", o.SafeMargin, o.TTL/2)
	case strings.Contains(o.Name, "/"):
		return o, fmt.Errorf("lock name %q: must not contain /", o.Name)
	}
	if o.SafeMargin == 0 {
		o.SafeMargin = DefaultSafeMargin(o.TTL)
	}
	if o.OnWakeup == nil {
		o.OnWakeup = func() {}
	}
	return o, nil
}

// Key is the lock's key (or key prefix, for queue strategies) in etcd.
func (o Options) Key() string { return o.Prefix + "locks/" + o.Name }

// Factory makes one client's Locker over an open etcd client.
type Factory func(ctx context.Context, cli *clientv3.Client, opts Options) (Locker, error)

// Strategy is a registered lock implementation.
type Strategy struct {
	Name        string
	Description string
	Origin      string
	// Buggy marks a strategy kept on purpose to prove the checker catches
	// its bug; the suite expects it to fail.
	Buggy bool
	// LockService marks a strategy that runs on etcd's server-side lock
	// service (v3lock), which a burst of cancelled calls can leave unable
	// to wake waiters (see cluster.ErrLockServiceStuck): a harness that
	// reuses a cluster checks the service after such a strategy's run.
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
	// OwnLease marks a strategy that keeps its lease itself (e.g. with
	// etcd's concurrency.Session) instead of through the shared keeper, so
	// it ignores Options.KeepAlive: a harness runs it once whatever
	// policies were asked for, and labels and judges its runs as
	// KeepAliveOwn, never as a policy it did not use.
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
