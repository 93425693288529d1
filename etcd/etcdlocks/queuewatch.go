package etcdlocks

// The queue's watches (queue.go), kept from one wait to the next: of our
// own key, for handovers, and of our predecessor's key name.

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ownWatch is the watch of our own key for handovers (nil ch: none).
type ownWatch struct {
	key    string
	ch     clientv3.WatchChan
	cancel context.CancelFunc
}

// watchOwn returns the watch of key, our key, for handovers: the one open
// since an earlier wait on the same key, or a new one (and the old one
// ended) when the key changed with the lease or the watch ended (waitTurn
// sets a watch that failed to nil). It is not waited for: a handover made
// before the server registers the watch is missed, and the predecessor's
// delete and a re-check (step 3d) grant the lock instead. Events on key
// wait in the watch between acquisitions (our own join's put each time);
// only a handover at the current create revision counts (handover).
// key "" just ends the watch.
func (l *queueLocker) watchOwn(key string) *clientv3.WatchChan {
	if l.own.key == key && l.own.ch != nil {
		return &l.own.ch
	}
	l.endOwn()
	l.own.key = key
	if key != "" {
		// On the same stream as the predecessor's watches (same metadata),
		// so that a handover and the delete of the same txn come from one
		// member.
		ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
		l.own.ch, l.own.cancel = l.cli.Watch(ctx, key, clientv3.WithFilterDelete()), cancel
	}
	return &l.own.ch
}

// keepPredWatch is how long a predecessor's watch, and the watch of our
// own key, are kept after the wait that used them, for the next wait to
// take. Under contention a client waits again within milliseconds;
// meanwhile the kept watch gathers every delete of its key name, and
// each open watch costs a substream in the client and a watcher in etcd
// (10,000 clients over 1,000 names kept ~50,000), so neither is kept for
// a client that waits seldom on this name.
const keepPredWatch = time.Second

// predWatch is the watch of a predecessor's key name, kept from one wait
// to the next (watchPred). ch nil: none. Guarded by queueLocker.mu: the
// idle timer ends it from its own goroutine.
type predWatch struct {
	key string
	ch  clientv3.WatchChan
	// created is the revision the server confirmed the watch at: it
	// delivers every event on key after it.
	created int64
	cancel  context.CancelFunc
	// idle ends this watch and our own key's keepPredWatch after their
	// last wait (nil: in use, or none armed).
	idle *time.Timer
}

// watchPred returns a watch of pred's key name and the revision w after
// which it delivers every event on that name: the watch kept from our
// last wait if it was of the same name, else a new one from the server's
// current revision, once the server confirms it (watchCreated).
//
// Why keep it: a key is named by its lease, so a client's key has the same
// name from one acquisition to the next, and in a busy queue the clients
// come round in the same order: our predecessor is usually the client it
// was last time, under the same name. A kept watch, created before that
// client's new key, covers every change after the state we saw it in (w
// ≤ at), so the wait needs neither a new watch — a create and a cancel,
// each taking the server's watch-store lock that every commit's
// notification takes — nor step 3b's read. Events of the name's earlier
// keys that wait in the watch are told apart by revision (waitTurn takes
// only a delete after at). Naive waits always get a new watch (naiveWait
// takes any event).
func (l *queueLocker) watchPred(ctx context.Context, pred kv, ls *lease) (clientv3.WatchChan, int64, error) {
	l.mu.Lock()
	l.pred.idle = nil // ours now: an idle timer firing meanwhile leaves it
	kept := l.pred
	l.mu.Unlock()
	if !l.naive && kept.key == pred.key && kept.ch != nil {
		return kept.ch, kept.created, nil
	}
	l.dropPred()
	// The watch outlives this wait, so it is not on ctx; but giving up on
	// ctx while the server confirms it ends it.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	stop := context.AfterFunc(ctx, cancel)
	wch, w, err := watchCreated(wctx, l.cli, pred.key, ls)
	stop()
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		cancel()
		return nil, 0, err
	}
	l.mu.Lock()
	l.pred = predWatch{key: pred.key, ch: wch, created: w, cancel: cancel}
	l.mu.Unlock()
	return wch, w, nil
}

// takeWatches disarms the idle timer (idleWatches) before a wait or
// Close uses the kept watches: a timer that fires meanwhile leaves them,
// and one that already ended them did so under l.mu, before this.
func (l *queueLocker) takeWatches() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pred.idle != nil {
		l.pred.idle.Stop()
		l.pred.idle = nil
	}
}

// idleWatches arms the end of the kept watches (the predecessor's and our
// own key's), keepPredWatch from now, unless a wait takes them first.
func (l *queueLocker) idleWatches() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pred.ch == nil && l.own.ch == nil {
		return
	}
	if l.pred.idle != nil {
		l.pred.idle.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(keepPredWatch, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.pred.idle == t {
			l.endPred()
			l.endOwn()
		}
	})
	l.pred.idle = t
}

// dropPred ends the kept predecessor's watch, if any.
func (l *queueLocker) dropPred() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endPred()
}

// endOwn ends the watch of our own key; l.mu held, or no timer armed.
func (l *queueLocker) endOwn() {
	if l.own.cancel != nil {
		l.own.cancel()
	}
	l.own = ownWatch{}
}

// endPred is dropPred with l.mu held.
func (l *queueLocker) endPred() {
	if l.pred.cancel != nil {
		l.pred.cancel()
	}
	if l.pred.idle != nil {
		l.pred.idle.Stop()
	}
	l.pred = predWatch{}
}
