package etcdlocks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/verdict"
)

func init() {
	Register(locks.Strategy{
		Name:        "txn",
		Description: "one key: If(CreateRevision(key)==0) Then(Put(key, lease)); jittered exponential backoff while held",
		Origin:      "seed articles two and three",
		Order:       verdict.NoOrder,
	}, newTxn(false))
	Register(locks.Strategy{
		Name:        "txn-watch",
		Description: "the txn try-lock, but every waiter watches the key and retries on its delete",
		Origin:      "reproduces the herd effect",
		Order:       verdict.NoOrder,
	}, newTxn(true))
}

// Backoff of the txn strategy between attempts: the n-th wait is drawn from
// [d/2, d] with d = min(backoffMax, backoffBase·2ⁿ).
const (
	backoffBase = 2 * time.Millisecond
	backoffMax  = 100 * time.Millisecond
)

// txnLocker is a try-lock on one key: whoever creates Options.Key() holds
// the lock. The plain strategy polls with backoff; with watch set, every
// waiter watches the key and retries when it is deleted, so each release
// wakes every waiter and each of them sends a write txn (the herd).
type txnLocker struct {
	cli    *clientv3.Client
	opts   Options
	key    string
	leases *leaseKeeper
	watch  bool
}

func newTxn(watch bool) Factory {
	return func(ctx context.Context, cli *clientv3.Client, opts Options) (locks.Locker, error) {
		opts, err := opts.WithDefaults()
		if err != nil {
			return nil, err
		}
		return &txnLocker{cli: cli, opts: opts, key: opts.Key(), leases: newLeaseKeeper(cli, opts), watch: watch}, nil
	}
}

// attempt is one try: create the key under the client's lease if it does
// not exist. It returns the grant, or nil and the revision at which the
// key was seen held. A waiter has no key in etcd, so it needs its lease
// only here: a lease lost while waiting is replaced at the next attempt.
func (l *txnLocker) attempt(ctx context.Context) (*locks.Grant, int64, error) {
	var leaseRetried bool
	for {
		// Step 1: the client's lease (granted on first use, reused while
		// alive; once more with a new one if it expired before the client
		// heard: underLease).
		ls, resp, err := underLease(ctx, l.leases, &leaseRetried, func(ls *lease) (*clientv3.TxnResponse, error) {
			// Step 2: if the key does not exist, put it under our lease;
			// else read it.
			return l.cli.Txn(ctx).
				If(clientv3.Compare(clientv3.CreateRevision(l.key), "=", 0)).
				Then(clientv3.OpPut(l.key, "", clientv3.WithLease(ls.id))).
				// Not WithKeysOnly: etcd 3.7's keys-only range leaves out
				// the lease, which step 3 compares.
				Else(clientv3.OpGet(l.key)).
				Commit()
		})
		switch {
		case ls == nil:
			return nil, 0, err
		case err != nil:
			// The put may or may not have happened, and may still happen:
			// only revoking the lease makes the outcome certain.
			return nil, 0, l.leases.settle(ctx, ls, fmt.Errorf("try lock: %w", err))
		case resp.Succeeded:
			// Created: held, fenced by the key's create revision.
			return grantOf(l.key, resp.Header.Revision, ls), 0, nil
		}
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 || clientv3.LeaseID(kvs[0].Lease) != ls.id {
			return nil, resp.Header.Revision, nil
		}
		// Step 3: the key is ours from an earlier acquisition whose release
		// did not complete: remove it (only at its revision) and try again,
		// rather than hand out the same token twice.
		cctx, cancel := cleanupCtx(ctx)
		err = deleteOwn(cctx, l.cli, l.key, kvs[0].CreateRevision)
		cancel()
		if err != nil {
			return nil, 0, l.leases.settle(ctx, ls, fmt.Errorf("remove stale key: %w", err))
		}
	}
}

func (l *txnLocker) TryLock(ctx context.Context) (*locks.Grant, error) {
	g, _, err := l.attempt(ctx)
	switch {
	case err != nil:
		return nil, err
	case g == nil:
		return nil, locks.ErrLocked
	}
	return g, nil
}

func (l *txnLocker) Lock(ctx context.Context) (*locks.Grant, error) {
	// Errors while waiting are certain: a waiter has no key in etcd.
	var (
		wch       clientv3.WatchChan
		err       error
		stopWatch = func() {}
	)
	defer func() { stopWatch() }()
	for n := 0; ; n++ {
		if l.watch && wch == nil {
			// Step A (txn-watch): watch the key from the server's current
			// revision, confirmed before the next attempt, so that no
			// delete after an attempt that saw the key held can be missed
			// (the argument of queueLocker's doc comment).
			wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
			wch, _, err = watchCreated(wctx, l.cli, l.key, nil)
			switch {
			case err == nil:
				stopWatch = cancel
			case errors.Is(err, errWatch):
				// Watch refused (no leader, ...): back off this round.
				cancel()
				wch = nil
			default:
				cancel()
				return nil, notAcquired(err)
			}
		}
		// Step B: try to create the key (unless the wait is over).
		if err := ctx.Err(); err != nil {
			return nil, notAcquired(err)
		}
		g, seen, err := l.attempt(ctx)
		if err != nil {
			return nil, err
		}
		if g != nil {
			return g, nil
		}
		// Step C: held by another client: wait for the key's delete, or
		// back off.
		if wch != nil {
			err = l.waitRelease(ctx, wch, seen)
			if errors.Is(err, errWatch) {
				stopWatch()
				wch = nil
				err = pause(ctx, nil, backoff(n))
			}
		} else {
			err = pause(ctx, nil, backoff(n))
		}
		if err != nil {
			return nil, notAcquired(err)
		}
	}
}

// waitRelease waits for a delete of the key newer than seen, the revision
// at which the last attempt found it held: older deletes, still queued in
// the watch, were of earlier holders and do not count as wake-ups.
func (l *txnLocker) waitRelease(ctx context.Context, wch clientv3.WatchChan, seen int64) error {
	if _, err := waitDelete(ctx, nil, wch, seen); err != nil {
		return err
	}
	// Woken by the key's delete: one wake-up.
	l.opts.OnWakeup()
	return nil
}

// backoff is the n-th wait of the plain txn strategy, jittered.
func backoff(n int) time.Duration {
	d := backoffMax
	if n < 16 && backoffBase<<n < backoffMax {
		d = backoffBase << n
	}
	return d/2 + rand.N(d/2+1)
}

func (l *txnLocker) Unlock(ctx context.Context, g *locks.Grant) error {
	return unlockOwn(ctx, l.cli, l.leases, g)
}

func (l *txnLocker) Close(ctx context.Context) error { return l.leases.close(ctx) }
