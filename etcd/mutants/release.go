package mutants

import (
	"context"
	"errors"
	"log"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/locks"
)

// Mistakes about a request that got no answer in time: a release whose
// failure is dropped, a join made again under a new key, and a waiter
// that starts its watch from whenever its request to watch arrives. Each
// leaves the lock free, or blocked, while somebody waits.
const (
	// swallowUnlockError logs a failed release and returns nil, "the
	// lease will clean it up": but the session keeps the lease alive, so
	// a delete lost with a leader (or refused) leaves the key, a lock
	// nobody can take (orphans, liveness: release-lost).
	swallowUnlockError bug = "swallow-unlock-error"
	// rejoinOnTimeout, a queue waiter whose join (the put of its key)
	// timed out, joins again under a new key and forgets the first: a put
	// whose answer was only late committed, and its key stands in the
	// queue under the live lease ahead of the waiter itself; everybody
	// waits behind it (liveness, orphans: join-late).
	rejoinOnTimeout bug = "rejoin-on-timeout"
	// watchFromNow, after a failed try, watches the key from the
	// revision current when its watch reaches the server, not from the
	// one after its try: a release between the two is missed, and the
	// waiter tries again only at its periodic retry while the lock stands
	// free (liveness: release-race).
	watchFromNow bug = "watch-from-now"
)

// retryEvery is watchFromNow's periodic retry, "in case a watch misses
// an event": the lock may stand free that long while it waits.
const retryEvery = 2 * time.Second

// unlockQuietly is swallowUnlockError's release.
func (l *locker) unlockQuietly(ctx context.Context, g *locks.Grant) error {
	// Step 4: delete the key only if it is still the one granted.
	cmp := clientv3.Compare(clientv3.CreateRevision(g.Key), "=", g.Token)
	if _, err := l.cli.Txn(ctx).If(cmp).Then(clientv3.OpDelete(g.Key)).Commit(); err != nil {
		// Step 4 (mutant): the failure is logged and dropped; the lease
		// is left to the session, which keeps it alive.
		log.Printf("unlock %s: %v (the lease will clean it up)", g.Key, err)
	}
	return nil
}

// join is the queue's step 1: put the waiter's own key under lease id.
// rejoinOnTimeout puts again under a new key while the put times out.
func (q *queueLocker) join(ctx context.Context, id clientv3.LeaseID) (entry, error) {
	me := entry{key: q.key + "/" + randomName()}
	put, err := q.cli.Put(ctx, me.key, "", clientv3.WithLease(id))
	for q.bug == rejoinOnTimeout && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		// Step 1 (mutant): no answer in time, so "it did not go through":
		// join again under a fresh key, forgetting the first.
		me.key = q.key + "/" + randomName()
		put, err = q.cli.Put(ctx, me.key, "", clientv3.WithLease(id))
	}
	if err != nil {
		return me, err
	}
	me.rev = put.Header.Revision
	return me, nil
}

// waitFromNow is watchFromNow's step 3: watch the key for a delete from
// now on, and try again every retryEvery anyway.
func waitFromNow(ctx context.Context, cli *clientv3.Client, key string) error {
	wctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), retryEvery)
	defer cancel()
	// Step 3 (mutant): no revision given: the watch starts wherever the
	// store is when it arrives, after the failed try.
	for wr := range cli.Watch(wctx, key, clientv3.WithFilterPut()) {
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
	return nil // the periodic retry: try again
}
