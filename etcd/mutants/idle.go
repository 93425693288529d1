package mutants

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/locks"
)

// Mutants that leave the lock idle while clients wait, or serve them out
// of order, each hiding under a loose bound: caught only by liveness's
// fault-free bound and fairness's FIFO rule.
const (
	// lazyUnlock returns from Unlock at once and deletes the key two
	// seconds later, in the background, "to take the delete off the
	// critical path": the lock is free (its holder released) while its key
	// keeps every waiter out (liveness, outside faults).
	lazyUnlock bug = "lazy-unlock"
	// requeueOnce gives up its place once per Lock: a waiter still waiting
	// after requeueAfter deletes its key and joins again at the back, "in
	// case its watch went stale", so requests made after it are served
	// first (fairness, FIFO).
	requeueOnce bug = "requeue-once"
)

// lazyDelay is how long lazyUnlock leaves a released key in place: under
// the 5.5 s bound of one bound for everything, over the fault-free one.
const lazyDelay = 2 * time.Second

// requeueAfter is how long a requeueOnce waiter waits before it joins
// again: longer than a wait in the fault-free built-ins (about 8–32
// clients × a few ms), shorter than one behind six holds of 50 ms.
const requeueAfter = 200 * time.Millisecond

// lazyDeletes are lazyUnlock's deletes in flight, stopped by Close.
type lazyDeletes struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	stop chan struct{}
}

func (d *lazyDeletes) done() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stop == nil {
		d.stop = make(chan struct{})
	}
	return d.stop
}

// close stops the deletes not yet made (the session's close revokes the
// lease, and the keys with it) and waits for those under way; a Lock
// after it starts afresh.
func (d *lazyDeletes) close() {
	d.mu.Lock()
	if d.stop != nil {
		close(d.stop)
		d.stop = nil
	}
	d.mu.Unlock()
	d.wg.Wait()
}

// unlockLater is lazyUnlock's Unlock: Step 4 (mutant), the delete
// deferred by lazyDelay.
func (l *locker) unlockLater(g *locks.Grant) error {
	stop := l.lazy.done()
	l.lazy.wg.Add(1)
	go func() {
		defer l.lazy.wg.Done()
		select {
		case <-stop:
			return
		case <-time.After(lazyDelay):
		}
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		deleteOwn(ctx, l.cli, g.Key, g.Token, clientv3.LeaseID(g.Lease), l.dropLease)
	}()
	return nil
}

// waitTurn is the queue's step 3: wait for the predecessor's key to go.
// The requeueOnce mutant waits at most requeueAfter the first time, then
// moves its key to the back of the queue.
func (q *queueLocker) waitTurn(ctx context.Context, me *entry, requeued *bool, pred string, seen int64) error {
	if q.bug != requeueOnce || *requeued {
		return waitDelete(ctx, q.cli, pred, seen)
	}
	wctx, cancel := context.WithTimeout(ctx, requeueAfter)
	err := waitDelete(wctx, q.cli, pred, seen)
	cancel()
	if err == nil || ctx.Err() != nil {
		return err
	}
	// Step 3 (mutant): a new key, behind everyone who came since.
	*requeued = true
	id, _, err := q.leaseFor(ctx)
	if err != nil {
		return err
	}
	// Moved whatever the caller does meanwhile: a key put by a txn whose
	// answer was lost would block the queue (that is leakOnCancel's bug,
	// not this one's).
	mctx, mcancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer mcancel()
	next := q.key + "/" + randomName()
	resp, err := q.cli.Txn(mctx).If(clientv3.Compare(clientv3.CreateRevision(me.key), "=", me.rev)).
		Then(clientv3.OpDelete(me.key), clientv3.OpPut(next, "", clientv3.WithLease(id))).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("own key %s is gone (lease lost)", me.key)
	}
	me.key, me.rev = next, resp.Header.Revision
	return nil
}
