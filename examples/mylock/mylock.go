// Package mylock is an example of a lock strategy of one's own, written
// only against lockbench's public locks API and etcd's client, and run
// through the whole lockbench CLI by a three-line main
// (cmd/lockbench-mylock) that imports it and calls cli.Main.
//
// The lock is one key, created by a transaction if it is absent, under
// the client's session lease; a waiter watches the key for its deletion
// and tries again. Correct, but not fair, and every release wakes every
// waiter (the thundering herd lockbench measures).
package mylock

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/locks"
)

// Registered on import: lockbench's list, run, suite and bench find it
// by this name.
func init() {
	etcdlocks.Register(locks.Strategy{
		Name:        "mylock",
		Description: "example: a single-key txn try-lock whose waiters watch the key",
		Origin:      "examples/mylock",
		// Its lease is a concurrency.Session's, not lockbench's keeper:
		// --keepalive does not apply to it.
		OwnLease: true,
	}, New)
}

// New is the strategy's etcdlocks.Factory: one Locker per client.
func New(_ context.Context, cli *clientv3.Client, opts etcdlocks.Options) (locks.Locker, error) {
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	return &Locker{cli: cli, key: opts.Key(), ttl: int(opts.TTL / time.Second), onWakeup: opts.OnWakeup}, nil
}

// Locker is one client's handle on the lock.
type Locker struct {
	cli      *clientv3.Client
	key      string
	ttl      int
	onWakeup func()
	sess     *concurrency.Session // the client's lease while it lives
}

// session returns the client's live session, making a new one once the
// old lease is gone.
func (l *Locker) session(ctx context.Context) (*concurrency.Session, error) {
	if l.sess != nil {
		select {
		case <-l.sess.Done():
			l.sess = nil
		default:
			return l.sess, nil
		}
	}
	s, err := concurrency.NewSession(l.cli, concurrency.WithTTL(l.ttl), concurrency.WithContext(context.WithoutCancel(ctx)))
	if err != nil {
		return nil, err
	}
	l.sess = s
	return s, nil
}

// Lock creates the key if it is absent; otherwise it waits for the key's
// deletion and tries again.
func (l *Locker) Lock(ctx context.Context) (*locks.Grant, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: %v", locks.ErrNotAcquired, err)
		}
		s, err := l.session(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: session: %v", locks.ErrNotAcquired, err)
		}
		resp, err := l.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(l.key), "=", 0)).
			Then(clientv3.OpPut(l.key, "", clientv3.WithLease(s.Lease()))).
			Commit()
		if err != nil {
			// The put may have happened: give the lease up, so that a key
			// this client may hold ends with it. The outcome is unknown.
			l.dropSession(ctx)
			return nil, fmt.Errorf("try lock: %w", err)
		}
		if resp.Succeeded {
			// The key's create revision is the fencing token.
			return &locks.Grant{Key: l.key, Token: resp.Header.Revision, Lease: int64(s.Lease()), Lost: s.Done()}, nil
		}
		if err := l.waitDelete(ctx, resp.Header.Revision); err != nil {
			return nil, fmt.Errorf("%w: %v", locks.ErrNotAcquired, err)
		}
		l.onWakeup()
	}
}

// waitDelete returns once the key is deleted after revision seen; the
// watch starts just after it, so a delete in between is not missed.
func (l *Locker) waitDelete(ctx context.Context, seen int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range l.cli.Watch(wctx, l.key, clientv3.WithRev(seen+1), clientv3.WithFilterPut()) {
		if err := wr.Err(); err != nil {
			return err
		}
		if len(wr.Events) > 0 {
			return nil
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("watch %s ended", l.key)
}

// Unlock deletes the key only if it is still the one granted, so a
// holder whose lease expired never deletes its successor's lock.
func (l *Locker) Unlock(ctx context.Context, g *locks.Grant) error {
	_, err := l.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(g.Key), "=", g.Token)).
		Then(clientv3.OpDelete(g.Key)).
		Commit()
	if err != nil {
		l.dropSession(ctx)
		return fmt.Errorf("unlock %s: %w", g.Key, err)
	}
	return nil
}

// dropSession revokes the client's lease after an operation whose
// outcome is unknown; the next Lock makes a new one.
func (l *Locker) dropSession(ctx context.Context) {
	if l.sess == nil {
		return
	}
	s := l.sess
	l.sess = nil
	s.Orphan()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	l.cli.Revoke(rctx, s.Lease())
}

// Close ends the client's session and revokes its lease.
func (l *Locker) Close(context.Context) error {
	if l.sess == nil {
		return nil
	}
	s := l.sess
	l.sess = nil
	return s.Close()
}
