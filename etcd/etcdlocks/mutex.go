package etcdlocks

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/verdict"
)

func init() {
	Register(locks.Strategy{
		Name:        "mutex",
		Description: "etcd's client-side concurrency.Mutex over a Session (one per client)",
		Origin:      "etcd's own client lock",
		Order:       verdict.FIFO,
	}, newMutex)
}

// mutexLocker wraps concurrency.Mutex unchanged: it is the reference that
// the other strategies are measured against, so its Lock and TryLock are
// exactly what users of etcd's client get. Unlock deletes the key only at
// the grant's revision (see Unlock), which in the normal case is the same
// delete as Mutex.Unlock's.
//
// The Session is the one thing done differently, the way etcd's own v3lock
// server does it: it is made over the client's lease from leaseKeeper
// (concurrency.WithLease) and orphaned at once, so that the lease is kept
// alive by the Options.KeepAlive policy like every other strategy's, not by
// the Session's own KeepAlive. (NewSession always starts a KeepAlive; the
// orphaning stops it before it matters, though it may send one refresh
// right after the grant.) With the auto policy this is the same refresh,
// the client's KeepAlive stream, that a Session runs.
//
// Wake-ups are not reported (Options.OnWakeup): Mutex waits inside etcd's
// code, which exposes no hook.
type mutexLocker struct {
	cli    *clientv3.Client
	opts   Options
	leases *leaseKeeper
	// sess is the orphaned Session over sessLease.
	sess      *concurrency.Session
	sessLease *lease
	mu        *concurrency.Mutex
}

func newMutex(ctx context.Context, cli *clientv3.Client, opts Options) (locks.Locker, error) {
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	return &mutexLocker{cli: cli, opts: opts, leases: newLeaseKeeper(cli, opts)}, nil
}

// session returns a Session over the client's live lease.
func (l *mutexLocker) session(ctx context.Context) (*concurrency.Session, *lease, error) {
	ls, err := l.leases.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	if l.sessLease != ls {
		// Its context is the client's, not this call's, so that cancelling
		// one Lock does not touch later ones.
		s, err := concurrency.NewSession(l.cli, concurrency.WithLease(ls.id), concurrency.WithContext(l.cli.Ctx()))
		if err != nil {
			return nil, nil, fmt.Errorf("new session: %w", err)
		}
		s.Orphan()
		l.sess, l.sessLease = s, ls
	}
	return l.sess, ls, nil
}

func (l *mutexLocker) Lock(ctx context.Context) (*locks.Grant, error) {
	return l.acquire(ctx, (*concurrency.Mutex).Lock)
}

func (l *mutexLocker) TryLock(ctx context.Context) (*locks.Grant, error) {
	return l.acquire(ctx, (*concurrency.Mutex).TryLock)
}

// acquire runs Mutex.Lock or Mutex.TryLock.
func (l *mutexLocker) acquire(ctx context.Context, lock func(*concurrency.Mutex, context.Context) error) (*locks.Grant, error) {
	for retry := true; ; retry = false {
		// Step 1: a session over the client's live lease, to hang the
		// waiter key on.
		s, ls, err := l.session(ctx)
		if err != nil {
			return nil, notAcquired(err)
		}
		// Step 2: etcd's Mutex puts the waiter key and waits for every
		// older key under the prefix to go (TryLock: if an older key
		// exists, it deletes its own and reports locks.ErrLocked).
		m := concurrency.NewMutex(s, l.opts.Key())
		err = lock(m, ctx)
		switch {
		case err == nil:
			// Step 3: the token is the create revision Mutex compares in
			// IsOwner.
			l.mu = m
			return grantOf(m.Key(), mutexToken(m), ls), nil
		case retry && isLeaseNotFound(err):
			// The waiter put failed as a whole: the lease expired before
			// the client heard. Once more, with a new one.
			l.leases.expired(ls)
		case errors.Is(err, concurrency.ErrLocked):
			return nil, fmt.Errorf("%w (%v)", locks.ErrLocked, err)
		default:
			return nil, l.failed(ctx, m, ls, err)
		}
	}
}

// failed turns a Mutex error into Lock's. Mutex marks its key "\x00" once
// it has deleted it, and ErrSessionExpired means the key went with the
// lease: only then is the failure certain as Mutex leaves it. Otherwise (the
// waiter put failed, or Mutex's cleanup delete did) the key may remain
// under this client's lease, so the lease is given up (settle).
func (l *mutexLocker) failed(ctx context.Context, m *concurrency.Mutex, ls *lease, err error) error {
	if m.Key() == "\x00" || errors.Is(err, concurrency.ErrSessionExpired) {
		return notAcquired(err)
	}
	return l.leases.settle(ctx, ls, err)
}

func (l *mutexLocker) Unlock(ctx context.Context, g *locks.Grant) error {
	if l.mu == nil || l.mu.Key() != g.Key || mutexToken(l.mu) != g.Token {
		return fmt.Errorf("unlock %s@%d: not held by this client", g.Key, g.Token)
	}
	l.mu = nil
	// Mutex.Unlock deletes its key by name, and the name (the lease ID) is
	// the same for every acquisition on one lease: delete it only at this
	// grant's revision instead, so a stale grant never removes a later
	// one's key. In the normal case the two are the same delete.
	return unlockOwn(ctx, l.cli, l.leases, g)
}

func (l *mutexLocker) Close(ctx context.Context) error {
	l.sess, l.sessLease, l.mu = nil, nil, nil
	return l.leases.close(ctx)
}

// mutexToken is the create revision of m's key, as IsOwner compares it.
func mutexToken(m *concurrency.Mutex) int64 {
	owner := m.IsOwner()
	return owner.GetCompare().GetCreateRevision()
}
