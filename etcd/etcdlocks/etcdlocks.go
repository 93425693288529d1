// Package etcdlocks holds the lock strategies that run on etcd (§8 of
// docs/design.md), with what is etcd's own: the lease keeper every
// strategy shares, the keepalive policies, the per-request deadline and
// the RPC counter. Each strategy is a locks.Locker registered with
// Backend "etcd"; its Factory takes an etcd client and etcd's Options,
// and Register turns it into the neutral locks.Factory that a runner
// calls with the client's Conn.
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
package etcdlocks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/locks"
)

// Backend is the name etcd's strategies carry (locks.Strategy.Backend).
const Backend = "etcd"

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

// Options are an etcd strategy's: the neutral ones and what etcd's
// leases add.
type Options struct {
	locks.Options
	// KeepAlive is the lease refresh policy.
	KeepAlive KeepAlive
	// SafeMargin is what the safe policy takes off the TTL for the two
	// clocks' rate difference and the timer's lateness (0: DefaultSafeMargin
	// of the TTL). It must be below TTL/2: a larger one leaves too little
	// time between refreshes.
	SafeMargin time.Duration
	// Lease, when set, is the client's lease every Locker of its
	// connection shares (ClientLease); nil, the Locker keeps its own. The
	// strategies on lockbench's lease keeper use it; one that keeps its
	// lease otherwise (Strategy.OwnLease, a process adapter, a user's)
	// may ignore it.
	Lease *ClientLease
}

// WithDefaults fills zero fields and validates the rest: the neutral
// options' checks, and etcd's (a lease TTL is whole seconds).
func (o Options) WithDefaults() (Options, error) {
	base, err := o.Options.WithDefaults()
	if err != nil {
		return o, err
	}
	o.Options = base
	o.KeepAlive = KeepAliveOrDefault(o.KeepAlive)
	switch {
	case o.TTL < time.Second || o.TTL%time.Second != 0:
		return o, fmt.Errorf("lease TTL %s: must be a whole number of seconds ≥1s", o.TTL)
	case !slices.Contains(KeepAlives, o.KeepAlive):
		return o, fmt.Errorf("keepalive %q: valid policies are %s", o.KeepAlive, keepAliveList())
	case o.SafeMargin < 0 || o.SafeMargin >= o.TTL/2:
		return o, fmt.Errorf("safe margin %s: must be ≥0 and below half the TTL (%s)", o.SafeMargin, o.TTL/2)
	}
	if o.SafeMargin == 0 {
		o.SafeMargin = DefaultSafeMargin(o.TTL)
	}
	return o, nil
}

// Conn is one client's connection to etcd (a locks.Conn): its client and
// what its Lockers share, the keepalive policy and, when set, the
// client's one lease (ClientLease).
type Conn struct {
	Client    *clientv3.Client
	KeepAlive KeepAlive
	// Lease is the lease the client's Lockers share; nil: each keeps its
	// own.
	Lease *ClientLease
}

// Backend says the connection is etcd's.
func (*Conn) Backend() string { return Backend }

// Factory makes one client's Locker over an open etcd client.
type Factory func(ctx context.Context, cli *clientv3.Client, opts Options) (locks.Locker, error)

// Locks is f as a locks.Factory: it takes the client and the lease
// settings from the etcd Conn the runner dialed, and refuses any other
// backend's connection.
func (f Factory) Locks() locks.Factory {
	return func(ctx context.Context, conn locks.Conn, opts locks.Options) (locks.Locker, error) {
		c, ok := conn.(*Conn)
		if !ok {
			return nil, fmt.Errorf("an etcd strategy needs an etcd connection, not %s's", conn.Backend())
		}
		return f(ctx, c.Client, Options{Options: opts, KeepAlive: c.KeepAlive, Lease: c.Lease})
	}
}

// Register registers s as an etcd strategy made by f.
func Register(s locks.Strategy, f Factory) {
	s.Backend, s.New = Backend, f.Locks()
	locks.Register(s)
}

// EffectiveKeepAlive is the policy lock's clients really run under when k
// is asked for: KeepAliveOwn for a strategy that keeps its own lease, else
// k or the default.
func EffectiveKeepAlive(lock string, k KeepAlive) KeepAlive {
	if st, err := locks.Lookup(lock); err == nil && st.OwnLease {
		return KeepAliveOwn
	}
	return KeepAliveOrDefault(k)
}
