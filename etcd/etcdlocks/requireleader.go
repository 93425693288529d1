package etcdlocks

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/verdict"
)

// Two ways a program asks etcd's client to tell it of a leader loss
// (clientv3.WithRequireLeader on the context that keeps its lease alive),
// registered to test etcd PR #21126 (make repro-etcd-21126): on a leader
// loss the client closes every KeepAlive channel whose context requires a
// leader (client/v3 lease.go, lessor.closeRequireLeader) but does not stop
// renewing the lease unless that context also ends. Both are hidden from
// the default suite, and both keep their own lease (--keepalive does not
// apply).
func init() {
	Register(locks.Strategy{
		Name:        "mutex-requireleader",
		Description: "etcd's concurrency.Mutex over a Session made with a WithRequireLeader context (its Done closes on a leader loss); registered for etcd PR #21126 (make repro-etcd-21126), hidden from the default suite",
		Origin:      "etcd PR #21126 (docs/leases.md)",
		OwnLease:    true,
		Hidden:      true,
		Order:       verdict.FIFO,
	}, func(_ context.Context, cli *clientv3.Client, opts Options) (locks.Locker, error) {
		return newRequireLeader(cli, opts, false)
	})
	Register(locks.Strategy{
		Name:        "keepalive-requireleader",
		Description: "etcd's concurrency.Mutex on a lease the program keeps with KeepAlive over its own WithRequireLeader context, a closed channel its lost lease; registered to reproduce etcd PR #21126 (make repro-etcd-21126), hidden from the default suite",
		Origin:      "etcd PR #21126 (docs/leases.md)",
		OwnLease:    true,
		Hidden:      true,
		Order:       verdict.FIFO,
	}, func(_ context.Context, cli *clientv3.Client, opts Options) (locks.Locker, error) {
		return newRequireLeader(cli, opts, true)
	})
}

// requireLeaderLocker runs concurrency.Mutex unchanged over a lease whose
// keepalive requires a leader, and takes the end of that keepalive as its
// holder's lost lease: on it the runner drops the lock without unlocking,
// as a program told its lease is gone does, and the next Lock takes a new
// lease.
//
// mutex-requireleader is what concurrency's docs show with one option
// added: NewSession(cli, WithTTL, WithContext(WithRequireLeader(ctx))).
// When the channel closes the Session cancels its own context (session.go,
// NewSession's goroutine), which makes the client drop the lease's
// keepalive (lease.go, keepAliveCtxCloser): the lease then lapses a TTL
// after its last renewal.
//
// keepalive-requireleader keeps the lease as a program that wants one
// lease for its lifetime writes it: cli.KeepAlive(WithRequireLeader(ctx),
// id) with ctx the program's context, which does not end when the channel
// closes; the Mutex gets the lease through an orphaned Session
// (concurrency.WithLease), as etcd's own lock service (v3lock) gives it a
// caller's lease. The closed channel leaves the lease's keepalive entry in
// the client with no subscriber, and the client goes on renewing it
// (PR #21126): the dropped lock's key stays while the program lives.
type requireLeaderLocker struct {
	cli  *clientv3.Client
	opts Options
	// own: keepalive-requireleader (the program keeps the lease).
	own bool
	// program is the program's context (keepalive-requireleader's
	// keepalives), ended by Close only.
	program context.Context
	end     context.CancelFunc
	// sess is the Session the Mutex queues under; lost closes when the
	// client stops reporting renewals of its lease.
	sess *concurrency.Session
	lost <-chan struct{}
	held *concurrency.Mutex
}

func newRequireLeader(cli *clientv3.Client, opts Options, own bool) (locks.Locker, error) {
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	program, end := context.WithCancel(clientv3.WithRequireLeader(cli.Ctx()))
	return &requireLeaderLocker{cli: cli, opts: opts, own: own, program: program, end: end}, nil
}

// session returns the live Session, making a new one (a new lease) once
// the last one's keepalive has ended.
func (l *requireLeaderLocker) session(ctx context.Context) (*concurrency.Session, error) {
	if l.sess != nil {
		select {
		case <-l.lost:
			l.sess.Orphan()
			l.sess = nil
		default:
			return l.sess, nil
		}
	}
	ttl := int(l.opts.TTL / time.Second)
	if !l.own {
		// The Session keeps its lease over a context that requires a
		// leader; its Done is the lost lease.
		s, err := concurrency.NewSession(l.cli, concurrency.WithTTL(ttl), concurrency.WithContext(clientv3.WithRequireLeader(l.cli.Ctx())))
		if err != nil {
			return nil, fmt.Errorf("new session: %w", err)
		}
		l.sess, l.lost = s, s.Done()
		return s, nil
	}
	resp, err := l.cli.Grant(ctx, int64(ttl))
	if err != nil {
		return nil, fmt.Errorf("grant lease: %w", err)
	}
	// The program keeps the lease on its own context, which requires a
	// leader; a closed channel is the lost lease.
	ch, err := l.cli.KeepAlive(l.program, resp.ID)
	if err != nil {
		return nil, l.revoke(ctx, resp.ID, fmt.Errorf("keep lease alive: %w", err))
	}
	lost := make(chan struct{})
	go func() {
		defer close(lost)
		for range ch {
		}
	}()
	// The Mutex takes its lease from a Session; this one is orphaned at
	// once so that only the program's keepalive refreshes the lease.
	s, err := concurrency.NewSession(l.cli, concurrency.WithLease(resp.ID), concurrency.WithContext(l.cli.Ctx()))
	if err != nil {
		// The revoke ends the keepalive too: its next answer says the
		// lease is gone.
		return nil, l.revoke(ctx, resp.ID, fmt.Errorf("new session: %w", err))
	}
	s.Orphan()
	l.sess, l.lost = s, lost
	return s, nil
}

func (l *requireLeaderLocker) Lock(ctx context.Context) (*locks.Grant, error) {
	for retry := true; ; retry = false {
		// Step 1: the live Session, whose lease the waiter key hangs on.
		s, err := l.session(ctx)
		if err != nil {
			return nil, notAcquired(err)
		}
		// Step 2: etcd's Mutex puts the waiter key and waits for every
		// older key under the prefix to go.
		m := concurrency.NewMutex(s, l.opts.Key())
		err = m.Lock(ctx)
		switch {
		case err == nil:
			// Step 3: the grant, lost when the lease's keepalive ends.
			l.held = m
			return &locks.Grant{Key: m.Key(), Token: mutexToken(m), Lease: int64(s.Lease()), Lost: l.lost}, nil
		case retry && isLeaseNotFound(err):
			// The waiter put failed as a whole: the lease had expired.
			// Once more, with a new one.
			l.forget()
		case m.Key() == "\x00" || errors.Is(err, concurrency.ErrSessionExpired):
			// Mutex deleted its key, or the key went with the lease.
			return nil, notAcquired(err)
		default:
			// The key may remain: revoke the lease, which removes it.
			return nil, l.drop(ctx, fmt.Errorf("mutex lock: %w", err))
		}
	}
}

func (l *requireLeaderLocker) Unlock(ctx context.Context, g *locks.Grant) error {
	m := l.held
	if m == nil || m.Key() != g.Key || mutexToken(m) != g.Token {
		return fmt.Errorf("unlock %s@%d: not held by this client", g.Key, g.Token)
	}
	l.held = nil
	// Step 1: Mutex.Unlock deletes the key.
	if err := m.Unlock(ctx); err != nil {
		// Step 2: unknown outcome: revoke the lease so that the key goes.
		return l.drop(ctx, fmt.Errorf("unlock %s: %w", g.Key, err))
	}
	return nil
}

// forget stops using the Session without revoking its lease.
func (l *requireLeaderLocker) forget() {
	if l.sess != nil {
		l.sess.Orphan()
	}
	l.sess, l.held = nil, nil
}

// drop ends the Session after a request of unknown outcome (endSession).
func (l *requireLeaderLocker) drop(ctx context.Context, cause error) error {
	s := l.sess
	l.forget()
	if s == nil {
		return cause
	}
	return endSession(ctx, l.cli, s, cause)
}

// Close revokes the current lease and ends the program's context, and with
// it every keepalive it started.
func (l *requireLeaderLocker) Close(ctx context.Context) error {
	defer l.end()
	s := l.sess
	l.forget()
	if s == nil {
		return nil
	}
	return l.revoke(ctx, s.Lease(), nil)
}

// revoke revokes lease id, a cleanup after cause (nil: none): it returns
// cause, or the revoke's error with it.
func (l *requireLeaderLocker) revoke(ctx context.Context, id clientv3.LeaseID, cause error) error {
	rctx, cancel := cleanupCtx(ctx)
	defer cancel()
	if _, err := l.cli.Revoke(rctx, id); err != nil && !isLeaseNotFound(err) {
		return errors.Join(cause, fmt.Errorf("revoke lease %x: %w", int64(id), err))
	}
	return cause
}
