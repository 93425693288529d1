package mutants

import (
	"context"
	"fmt"
	"sort"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/locks"
)

// queueLocker is the queue base: each waiter puts its own key under the
// lock's prefix; the oldest key (lowest create revision) holds, and every
// other waiter watches the key just before its own, then reads again.
type queueLocker struct{ *locker }

// entry is one waiter's key in the queue.
type entry struct {
	key string
	rev int64 // create revision
}

func (q *queueLocker) Lock(ctx context.Context) (*locks.Grant, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", locks.ErrNotAcquired, err)
	}
	id, lost, err := q.leaseFor(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", locks.ErrNotAcquired, err)
	}
	// Step 1: join the queue with our own key.
	me, err := q.join(ctx, id)
	if isLeaseGone(err) && q.forget(id) {
		return q.Lock(ctx) // expired before the client heard: on a new lease
	}
	if err != nil {
		return nil, unknownUnless(q.dropLease(ctx, id), fmt.Errorf("join: %w", err))
	}
	requeued := false
	for {
		// Step 2: read the queue; the first key holds.
		pred, seen, err := q.predecessor(ctx, me)
		if err == nil && pred == nil {
			return &locks.Grant{Key: me.key, Token: me.rev, Lease: int64(id), Lost: lost}, nil
		}
		// Step 3: wait for the predecessor's key to go, then read again.
		if err == nil {
			if err = q.waitTurn(ctx, &me, &requeued, pred.key, seen); err == nil {
				q.opts.OnWakeup()
				continue
			}
		}
		return nil, q.leave(ctx, me, id, err)
	}
}

// predecessor reads the queue and returns the entry just before me (nil
// when me is first) and the revision of the read.
func (q *queueLocker) predecessor(ctx context.Context, me entry) (*entry, int64, error) {
	resp, err := q.cli.Get(ctx, q.key+"/", clientv3.WithPrefix())
	if err != nil {
		return nil, 0, err
	}
	var all []entry
	for _, kv := range resp.Kvs {
		all = append(all, entry{key: string(kv.Key), rev: kv.CreateRevision})
	}
	if q.bug == orderByName {
		// Step 2 (mutant): the queue's order taken from the key names.
		sort.Slice(all, func(i, j int) bool { return all[i].key < all[j].key })
	} else {
		sort.Slice(all, func(i, j int) bool { return all[i].rev < all[j].rev })
	}
	for i, e := range all {
		if e.key == me.key {
			if i == 0 {
				return nil, resp.Header.Revision, nil
			}
			return &all[i-1], resp.Header.Revision, nil
		}
	}
	return nil, 0, fmt.Errorf("own key %s is gone (lease lost)", me.key)
}

// leave removes our key after a failed or cancelled wait.
func (q *queueLocker) leave(ctx context.Context, me entry, id clientv3.LeaseID, cause error) error {
	if q.bug == leakOnCancel {
		// Step 4 (mutant): give up without removing our key.
		return fmt.Errorf("%w: %v", locks.ErrNotAcquired, cause)
	}
	// Step 4: remove our key (only at its revision) before saying so.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := deleteOwn(cctx, q.cli, me.key, me.rev, id, q.dropLease); err != nil {
		return fmt.Errorf("leave after %v: %w", cause, err)
	}
	return fmt.Errorf("%w: %v", locks.ErrNotAcquired, cause)
}
