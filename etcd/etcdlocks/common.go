package etcdlocks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockbench/lockbench/locks"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Helpers shared by the strategies that do their own waiting.

// unlockOwn deletes g's key only if it is still the key g was granted (its
// create revision is g's token). If that cannot be confirmed, the key may
// still exist under a lease this client keeps alive; the lease is given up
// so that the key ends with it.
func unlockOwn(ctx context.Context, cli *clientv3.Client, leases *leaseKeeper, g *locks.Grant) error {
	return unlockWith(ctx, leases, g, func(ctx context.Context) error { return deleteOwn(ctx, cli, g.Key, g.Token) })
}

// unlockWith is unlockOwn with del, a txn that deletes g's key only if it
// is still g's (and may do more in the same txn: queue's handover).
func unlockWith(ctx context.Context, leases *leaseKeeper, g *locks.Grant, del func(context.Context) error) error {
	// Step 1: delete the key if it is still this grant's.
	err := del(ctx)
	if err == nil {
		return nil
	}
	// Step 2: unknown outcome: stop refreshing the lease, and revoke it.
	if leases.cur != nil && int64(leases.cur.id) == g.Lease {
		if rerr := leases.abandon(ctx, leases.cur); rerr == nil {
			return nil
		}
	}
	return fmt.Errorf("unlock %s: %w", g.Key, err)
}

// errWatch marks a watch that failed or ended without the event waited for
// (no leader, compaction, a cancelled stream): the caller re-reads.
var errWatch = errors.New("watch interrupted")

// watchCreated opens a watch on key from the server's current revision and
// returns once the server has confirmed it (the created notification),
// with the revision the server reports in it. It gives up when ls (if not
// nil) is lost.
//
// The server reads that revision after it has registered the watcher, so
// every event after it is delivered: the state at that revision (or any
// later one) plus the watch miss nothing.
func watchCreated(ctx context.Context, cli *clientv3.Client, key string, ls *lease) (clientv3.WatchChan, int64, error) {
	wch := cli.Watch(ctx, key, clientv3.WithCreatedNotify(), clientv3.WithFilterPut())
	select {
	case wr, ok := <-wch:
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		if !ok || wr.Err() != nil || !wr.Created {
			return nil, 0, fmt.Errorf("%w: %v", errWatch, wr.Err())
		}
		return wch, wr.Header.Revision, nil
	case <-lostOf(ls):
		return nil, 0, leaseLost(ls)
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
}

// waitDelete waits on a watch of one key for a delete after revision
// after (older ones, of an earlier key of the same name, may still be
// queued in the watch), and returns its revision. It gives up when ls (if
// not nil) is lost.
func waitDelete(ctx context.Context, ls *lease, wch clientv3.WatchChan, after int64) (int64, error) {
	for {
		select {
		case wr, ok := <-wch:
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			if !ok || wr.Err() != nil || wr.Canceled {
				return 0, fmt.Errorf("%w: %v", errWatch, wr.Err())
			}
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE && ev.Kv.ModRevision > after {
					return ev.Kv.ModRevision, nil
				}
			}
		case <-lostOf(ls):
			return 0, leaseLost(ls)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// pause sleeps d unless ctx ends or the lease (if not nil) is lost first.
func pause(ctx context.Context, ls *lease, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-lostOf(ls):
		return leaseLost(ls)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lostOf is ls.lost, or a nil channel (never ready) for no lease.
func lostOf(ls *lease) <-chan struct{} {
	if ls == nil {
		return nil
	}
	return ls.lost
}
