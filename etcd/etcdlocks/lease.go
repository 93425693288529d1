package etcdlocks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/locks"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// settleTimeout bounds the cleanup that makes a failed operation's outcome
// certain (a conditional delete, or revoking the lease), once the caller's
// context has ended.
const settleTimeout = 2 * time.Second

// lease is one granted lease and the goroutine that keeps it alive.
type lease struct {
	id clientv3.LeaseID
	// lost is closed when the client learns the lease is gone, or stops
	// keeping it alive; it is every grant's locks.Grant.Lost.
	lost     chan struct{}
	lostOnce sync.Once
	// stop ends the keepalive goroutine; done is closed once it has ended.
	stop context.CancelFunc
	done chan struct{}
}

func (l *lease) markLost() { l.lostOnce.Do(func() { close(l.lost) }) }

func (l *lease) isLost() bool {
	select {
	case <-l.lost:
		return true
	default:
		return false
	}
}

// leaseKeeper holds a client's one lease, shared by all its acquisitions of
// a lock while it lives: the first Lock grants it, later ones reuse it, and
// after it is lost the next Lock grants a new one. Every strategy gets its
// lease here, so the keepalive policy (Options.KeepAlive) is the same code
// for all of them.
//
// Like the locks.Locker that owns it, a leaseKeeper is used by one goroutine at
// a time; only lease.lost is shared with the keepalive goroutine.
type leaseKeeper struct {
	cli    *clientv3.Client
	ttl    time.Duration
	policy KeepAlive
	// margin is the safe policy's Options.SafeMargin.
	margin time.Duration
	cur    *lease
	// shared marks a ClientLease's keeper: a locks.Locker's Close leaves it to
	// the ClientLease's.
	shared bool
	// latest is the ID of the last lease granted (0: none yet), for
	// ClientLease.ID, which other goroutines call.
	latest atomic.Int64
}

// newLeaseKeeper is the keeper a locks.Locker on cli takes its lease from: the
// client's shared one (Options.Lease), or one of its own.
func newLeaseKeeper(cli *clientv3.Client, opts Options) *leaseKeeper {
	if opts.Lease != nil {
		if opts.Lease.k.cli != cli {
			panic("locks: Options.Lease is another connection's ClientLease")
		}
		return opts.Lease.k
	}
	margin := opts.SafeMargin
	if margin == 0 {
		margin = DefaultSafeMargin(opts.TTL)
	}
	return &leaseKeeper{cli: cli, ttl: opts.TTL, policy: opts.KeepAlive, margin: margin}
}

// ClientLease is the one lease a client's Lockers share, whatever lock
// names they serve, as one concurrency.Session serves every Mutex of a
// process. Without it each locks.Locker keeps a lease of its own, so a client
// that used k names keeps k leases alive (k grants, k keepalives), and
// with many names the leases, not the locks, are etcd's load.
//
// Its owner (the runner, for each client connection) makes it, passes it
// in Options.Lease to every locks.Locker of that connection, and closes it
// after them: a locks.Locker's Close leaves a shared lease alone. Its TTL and
// keepalive policy are the ones it was made with. The Lockers sharing it
// are used by one goroutine at a time between them, as one client
// process holds or waits for one lock at a time; a failed acquisition
// that gives the lease up (its outcome unknown) ends every key under it.
type ClientLease struct{ k *leaseKeeper }

// NewClientLease makes cli's shared lease with opts' TTL and keepalive
// policy; no lease is granted until a locks.Locker first asks for one.
func NewClientLease(cli *clientv3.Client, opts Options) (*ClientLease, error) {
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	opts.Lease = nil
	k := newLeaseKeeper(cli, opts)
	k.shared = true
	return &ClientLease{k: k}, nil
}

// ID is the last lease granted for the Lockers sharing it (it may have
// been lost since), or 0 when none has asked for one yet. Safe to call
// from any goroutine: a fault revoking a client's lease reads it.
func (c *ClientLease) ID() clientv3.LeaseID { return clientv3.LeaseID(c.k.latest.Load()) }

// Close stops keeping the lease alive and revokes it, ending every key
// under it; call it after the Lockers sharing it are closed.
func (c *ClientLease) Close(ctx context.Context) error { return c.k.end(ctx) }

// get returns the live lease, granting a new one (and starting its
// keepalive) when there is none or the last one is lost.
func (k *leaseKeeper) get(ctx context.Context) (*lease, error) {
	if k.cur != nil {
		if !k.cur.isLost() {
			return k.cur, nil
		}
		// The old lease is gone; its keepalive goroutine ends by itself, or
		// is stopped here.
		k.cur.stop()
		<-k.cur.done
		k.cur = nil
	}
	// The safe policy counts the lease's first TTL from here: the server
	// counts it from when the grant reaches the leader, which is later.
	sent := time.Now()
	resp, err := k.cli.Grant(ctx, int64(k.ttl/time.Second))
	if err != nil {
		// No key can exist under a lease we never learnt of; if the grant
		// did happen, the lease expires on its own.
		return nil, fmt.Errorf("grant lease: %w", err)
	}
	granted := time.Now()
	k.latest.Store(int64(resp.ID))
	kctx, stop := context.WithCancel(k.cli.Ctx())
	l := &lease{id: resp.ID, lost: make(chan struct{}), stop: stop, done: make(chan struct{})}
	switch k.policy {
	case KeepAliveSeed:
		go k.seed(kctx, l, granted, time.Duration(resp.TTL)*time.Second)
	case KeepAliveSafe:
		go k.safe(kctx, l, sent, time.Duration(resp.TTL)*time.Second)
	default:
		// The client's KeepAlive stream refreshes every TTL/3. It closes the
		// channel when the server says the lease is gone, when no answer
		// came for a whole TTL, or when the context ends.
		ch, err := k.cli.KeepAlive(kctx, resp.ID)
		if err != nil {
			stop()
			k.revoke(ctx, resp.ID)
			return nil, fmt.Errorf("keep lease alive: %w", err)
		}
		go func() {
			defer close(l.done)
			defer l.markLost()
			for range ch {
			}
		}()
	}
	k.cur = l
	return l, nil
}

// seed keeps l alive the way the seed article's scheme-two code does: one
// KeepAliveOnce every 0.8×TTL on a fixed schedule, whatever the previous
// one took. A refresh delayed by more than 0.2×TTL beyond the previous
// one's delay therefore reaches the server after the lease has lapsed,
// while the auto policy (every TTL/3) tolerates 2/3×TTL. Calls are synchronous: a tick that comes while a call is
// still out waits for it.
//
// The client learns that the lease is gone as the client's own KeepAlive
// does: when the server answers that it no longer exists, or when no
// refresh was answered for one TTL since the last answer.
func (k *leaseKeeper) seed(ctx context.Context, l *lease, granted time.Time, ttl time.Duration) {
	defer close(l.done)
	defer l.markLost()
	deadline := granted.Add(ttl)
	expire := time.NewTimer(time.Until(deadline))
	defer expire.Stop()
	tick := time.NewTicker(k.ttl * 8 / 10)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-expire.C:
			// No refresh was answered for a whole TTL.
			return
		case <-tick.C:
		}
		// An answer after the deadline is of no use: by then the client
		// has given the lease up.
		cctx, cancel := context.WithDeadline(ctx, deadline)
		resp, err := k.cli.KeepAliveOnce(cctx, l.id)
		cancel()
		switch {
		case err == nil:
			deadline = time.Now().Add(time.Duration(resp.TTL) * time.Second)
			expire.Reset(time.Until(deadline))
		case errors.Is(err, rpctypes.ErrLeaseNotFound), ctx.Err() != nil:
			return
		}
	}
}

// abandon stops keeping l alive (closing l.lost) and revokes it, which
// deletes every key attached to it, including one that a write still in
// flight might create later (a Put with a revoked lease fails). It returns
// nil when the lease is certainly gone: revoked now, or already unknown to
// the server. Otherwise the lease is left to expire within one TTL, since
// nothing refreshes it any more.
func (k *leaseKeeper) abandon(ctx context.Context, l *lease) error {
	l.stop()
	<-l.done
	l.markLost()
	if k.cur == l {
		k.cur = nil
	}
	return k.revoke(ctx, l.id)
}

// revoke revokes the lease, trying again until settleTimeout: a revoke is
// idempotent (a second one finds no lease), and one stranded at a leader
// that died fails after the client's per-request deadline
// (RPCDeadline), when the next try reaches the new leader.
func (k *leaseKeeper) revoke(ctx context.Context, id clientv3.LeaseID) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	for {
		_, err := k.cli.Revoke(ctx, id)
		if err == nil || errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return nil
		}
		if pause(ctx, nil, 50*time.Millisecond) != nil {
			return fmt.Errorf("revoke lease %x: %w", int64(id), err)
		}
	}
}

// close is a locks.Locker's Close: it ends the locks.Locker's own lease (end), and
// leaves a shared one to its ClientLease.
func (k *leaseKeeper) close(ctx context.Context) error {
	if k.shared {
		return nil
	}
	return k.end(ctx)
}

// end stops the keepalive and revokes the current lease, if any.
func (k *leaseKeeper) end(ctx context.Context) error {
	if k.cur == nil {
		return nil
	}
	return k.abandon(ctx, k.cur)
}

// settle makes the outcome of a failed Lock certain when it can. A Lock
// that failed after a write of unknown outcome (an error from the Put that
// queues the waiter, a cleanup delete that failed) may have left a key
// behind that would block everyone else for as long as the lease is kept
// alive. settle abandons the lease: when the revoke is confirmed the key is
// certainly gone and the error wraps locks.ErrNotAcquired; otherwise it does not,
// and the runner records the outcome as unknown (the lease, no longer
// refreshed, expires within one TTL either way).
func (k *leaseKeeper) settle(ctx context.Context, l *lease, cause error) error {
	if err := k.abandon(ctx, l); err != nil {
		return fmt.Errorf("%w (outcome unknown: %v)", cause, err)
	}
	return notAcquired(cause)
}

// expired forgets l, which the server said it does not know: the request
// that said so failed as a whole, and there is nothing left to revoke.
func (k *leaseKeeper) expired(l *lease) {
	l.stop()
	<-l.done
	l.markLost()
	if k.cur == l {
		k.cur = nil
	}
}

// underLease gets the client's lease and runs put, a request that writes
// under it. A put refused with "lease not found" wrote nothing: the lease
// expired before the client heard, so it is forgotten and put runs once
// more under a new one. Only once (*retried, which a caller that loops
// for its own reasons keeps across its turns), so that a server that
// keeps refusing ends the call instead of granting leases forever. It
// returns the lease put last ran under and put's answer; an error getting
// the lease comes back with a nil lease, wrapping locks.ErrNotAcquired (no
// write was sent under it).
func underLease[T any](ctx context.Context, k *leaseKeeper, retried *bool, put func(*lease) (T, error)) (*lease, T, error) {
	for {
		ls, err := k.get(ctx)
		if err != nil {
			var none T
			return nil, none, notAcquired(err)
		}
		resp, err := put(ls)
		if !*retried && isLeaseNotFound(err) {
			k.expired(ls)
			*retried = true
			continue
		}
		return ls, resp, err
	}
}

// isLeaseNotFound reports an error saying that the server does not know
// the lease (expired or revoked, before the client heard of it). A request
// failing so failed as a whole: it wrote nothing. The v3lock client is a
// bare gRPC stub, so its errors are matched by their message.
func isLeaseNotFound(err error) bool {
	return err != nil && (errors.Is(err, rpctypes.ErrLeaseNotFound) || rpctypes.ErrorDesc(err) == rpctypes.ErrLeaseNotFound.Error())
}

// notAcquired wraps err so that it also wraps locks.ErrNotAcquired.
func notAcquired(err error) error {
	if errors.Is(err, locks.ErrNotAcquired) {
		return err
	}
	return fmt.Errorf("%w: %w", locks.ErrNotAcquired, err)
}

// leaseLost is the error for a waiter whose lease went while it waited.
func leaseLost(l *lease) error {
	return fmt.Errorf("%w: lease %x", locks.ErrLeaseLost, int64(l.id))
}

// grantOf builds the grant for a held key.
func grantOf(key string, token int64, l *lease) *locks.Grant {
	return &locks.Grant{Key: key, Token: token, Lease: int64(l.id), Lost: l.lost}
}

// cleanupCtx is the context for a cleanup that must run even though the
// caller's context has ended.
func cleanupCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
}

// deleteOwn deletes key only if it is still the key created at rev: a
// holder whose lease expired must never delete a successor's key of the
// same name. It succeeds (nil) whether or not the key was still there.
func deleteOwn(ctx context.Context, cli *clientv3.Client, key string, rev int64) error {
	_, err := cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev)).
		Then(clientv3.OpDelete(key)).
		Commit()
	return err
}

// OverrunSlack is what every policy's Overrun adds for what no policy
// controls: the answer's one-way trip, the holder's reaction to Lost, and
// a loaded machine's scheduling (the default suite runs on 2 shared cores).
const OverrunSlack = 500 * time.Millisecond

// Overrun is the belief overrun policy k allows a holder of a lease of
// ttl: the longest it may go on believing it holds after its lease is gone
// (expired, or revoked by an operator) before Lost closes. The lease check
// holds a run to it (check.Options.OverrunBound), so that a lock that
// tells its holder as late as its policy says passes, and one that tells
// it later, or never, fails. Each bound is the policy's mechanism, plus
// OverrunSlack (measured figures: docs/leases.md):
//
//   - safe stops before the server can expire the lease (≤ 0); it learns
//     of a revoke from the answer to its next refresh, sent every TTL/4:
//     TTL/4.
//   - auto (etcd's KeepAlive, as a concurrency.Session runs it; also
//     KeepAliveOwn): it counts the TTL from the last answer's arrival and
//     checks that deadline on a 1 s timer (client/v3 lease.go
//     deadlineLoop), so an expiry is noticed up to 1 s late; a revoke is
//     heard at the next refresh, sent from a 500 ms loop once TTL/3 has
//     passed since the last answer: max(1 s, TTL/3 + 500 ms).
//   - seed counts from the answer on a precise timer (an expiry: the
//     answer's one-way trip late) and hears of a revoke at its next
//     refresh, every 0.8×TTL: 0.8×TTL.
func (k KeepAlive) Overrun(ttl time.Duration) time.Duration {
	switch k {
	case KeepAliveSafe:
		return SafeRefreshInterval(ttl) + OverrunSlack
	case KeepAliveSeed:
		return ttl*8/10 + OverrunSlack
	}
	// auto, own, and none: a record from before policies were recorded,
	// when every run was auto.
	return max(time.Second, ttl/3+500*time.Millisecond) + OverrunSlack
}
