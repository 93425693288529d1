package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func init() {
	Register(Strategy{
		Name:        "queue",
		Description: "pfx/<lease> keys, lowest create revision holds; each waiter watches its predecessor, then re-checks for older keys",
		Origin:      "seed article, scheme one, done right",
		New:         newQueue(false),
	})
	Register(Strategy{
		Name:        "queue-naive",
		Description: "the queue as the seed article's code does it: takes the lock on its predecessor's first event, no re-check",
		Origin:      "kept on purpose: a known-buggy strategy the checker must catch",
		Buggy:       true,
		New:         newQueue(true),
	})
}

// queueLocker is a fair FIFO lock over a key prefix. Each acquisition puts
// a key under the client's lease; keys are ordered by create revision and
// the oldest holds. A waiter watches only its immediate predecessor, so a
// release wakes one waiter (no herd). When the predecessor goes, the
// waiter re-checks that no older key remains: the predecessor may have
// been a waiter that crashed in the middle of the queue.
//
// Key names. The key is Options.Key() + "/" + <lease ID in hex>, as in
// etcd's Mutex: the name is reused by every acquisition on one lease. A
// fresh name per acquisition would be simpler to reason about, but etcd
// keeps one index entry per deleted key until the next compaction, and
// every read of the queue (a range over the prefix) visits them all: one
// new entry per acquisition makes each read slower as a run goes on
// (measured: 0.14 ms per range over an empty prefix, 0.77 ms with 5,000
// deleted keys in it). A reused name invites an ABA deadlock if keys are
// compared by name (DESIGN §6: the predecessor leaves and re-joins under
// the same name behind us, and we wait for it); so a key here is always a
// name at a create revision, every comparison is of both, only keys older
// than ours (create revision below ours) are ever predecessors, and only
// a delete after the revision at which the predecessor was seen counts.
//
// Synced watch. The waiter opens its watch first and only then re-reads
// the predecessor, so its watcher is "synced" (it starts at the server's
// current revision) and a handoff costs one commit (the release), one
// notification and one local read. concurrency.Mutex opens its watch at the
// revision of an earlier Get, which the store has usually passed by then,
// so etcd only catches that watcher up on its 100 ms resync tick (DESIGN
// §6).
//
// Why no delete can be missed: the server confirms the watch with the
// revision W at which it started (read after the watcher was registered:
// every event after W is delivered), and the re-read is of the state at a
// revision R ≥ W. If the predecessor is still there at R, its delete comes
// after R, hence after W, and the watch delivers it; if not, the re-read
// shows it gone. This holds whichever members serve the watch and the read.
type queueLocker struct {
	cli    *clientv3.Client
	opts   Options
	pfx    string // Options.Key() + "/"
	leases *leaseKeeper
	// naive takes the lock on the first event of the predecessor's key,
	// with no re-check: the seed article's scheme one as its code does it.
	naive bool
}

func newQueue(naive bool) Factory {
	return func(ctx context.Context, cli *clientv3.Client, opts Options) (Locker, error) {
		opts, err := opts.WithDefaults()
		if err != nil {
			return nil, err
		}
		return &queueLocker{cli: cli, opts: opts, pfx: opts.Key() + "/", leases: newLeaseKeeper(cli, opts), naive: naive}, nil
	}
}

// kv is a key at its create revision.
type kv struct {
	key string
	rev int64
}

func (l *queueLocker) keyOf(ls *lease) string { return fmt.Sprintf("%s%x", l.pfx, int64(ls.id)) }

func (l *queueLocker) Lock(ctx context.Context) (*Grant, error) {
	// Steps 1 and 2: the lease, and our key in the queue.
	ls, me, pred, err := l.join(ctx)
	if err != nil {
		return nil, err
	}
	// Step 3: wait until no older key remains.
	if err := l.wait(ctx, ls, me, pred, me.rev); err != nil {
		return nil, l.leave(ctx, ls, me, err)
	}
	// A lease this client no longer refreshes will not keep the lock.
	if ls.isLost() {
		return nil, l.leave(ctx, ls, me, leaseLost(ls))
	}
	// Step 4: our key is the oldest: the lock is held, fenced by the key's
	// create revision.
	return grantOf(me.key, me.rev, ls), nil
}

// join puts our key at the tail of the queue and returns it with its
// predecessor (nil: none, the lock is ours).
func (l *queueLocker) join(ctx context.Context) (*lease, kv, *kv, error) {
	leaseRetry, staleRetry := true, true
	for {
		// Step 1: the client's lease (granted on first use, reused while
		// alive).
		ls, err := l.leases.get(ctx)
		if err != nil {
			return nil, kv{}, nil, notAcquired(err)
		}
		// Step 2: join the queue. One txn puts our key under the lease and
		// reads the two newest keys of the queue at the put's revision: the
		// newest is ours, the other (if any) our predecessor. Our key's
		// create revision is the txn's revision.
		me := kv{key: l.keyOf(ls)}
		resp, err := l.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(me.key), "=", 0)).
			Then(clientv3.OpPut(me.key, "", clientv3.WithLease(ls.id)),
				clientv3.OpGet(l.pfx, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(2), clientv3.WithKeysOnly())).
			Else(clientv3.OpGet(me.key, clientv3.WithKeysOnly())).
			Commit()
		switch {
		case leaseRetry && isLeaseNotFound(err):
			// The lease expired before the client heard: once more, with a
			// new one.
			l.leases.expired(ls)
			leaseRetry = false
			continue
		case err != nil:
			// The put may or may not have happened, and may still happen:
			// only revoking the lease makes the outcome certain.
			return nil, kv{}, nil, l.leases.settle(ctx, ls, fmt.Errorf("join queue: %w", err))
		case !resp.Succeeded:
			// Our key is already there: left by an earlier acquisition of
			// this client whose cleanup did not finish. Remove it (only at
			// its revision) and join again, rather than inherit its place.
			stale := resp.Responses[0].GetResponseRange().Kvs
			if !staleRetry || len(stale) == 0 {
				return nil, kv{}, nil, notAcquired(fmt.Errorf("join queue: key %s is in the way", me.key))
			}
			staleRetry = false
			cctx, cancel := cleanupCtx(ctx)
			err := deleteOwn(cctx, l.cli, me.key, stale[0].CreateRevision)
			cancel()
			if err != nil {
				return nil, kv{}, nil, l.leases.settle(ctx, ls, fmt.Errorf("remove stale key %s: %w", me.key, err))
			}
			continue
		}
		me.rev = resp.Header.Revision
		for _, k := range resp.Responses[1].GetResponseRange().Kvs {
			if k.CreateRevision < me.rev {
				return ls, me, &kv{key: string(k.Key), rev: k.CreateRevision}, nil
			}
		}
		return ls, me, nil, nil
	}
}

// wait returns nil once me is the oldest key of the queue, starting from
// pred, the newest older key in the state at revision at (nil: none).
func (l *queueLocker) wait(ctx context.Context, ls *lease, me kv, pred *kv, at int64) error {
	for pred != nil {
		// Step 3a: watch the predecessor's key from the server's current
		// revision, and wait until the server confirms the watch (at
		// revision w).
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		wch, w, err := watchCreated(wctx, l.cli, pred.key, ls)
		if err != nil {
			cancel()
			if !errors.Is(err, errWatch) {
				return err
			}
			// A watch refused or cut (no leader, compaction): pause and
			// start over from a fresh read.
			if err := pause(ctx, ls, 50*time.Millisecond); err != nil {
				return err
			}
			if pred, at, err = l.newest(ctx, me, 0); err != nil {
				return err
			}
			continue
		}
		if l.naive {
			// Naive: if the predecessor's key is gone, take the lock; else
			// take it on the key's first event. No look at older keys.
			err = l.naiveWait(ctx, ls, wch, *pred)
			cancel()
			return err
		}
		// Step 3b: re-read, at the watch's revision or later, the newest
		// key older than ours, and check that ours is still there. Not
		// needed if the watch started no later than the state pred was
		// seen in (w ≤ at): then the watch covers every change since.
		if w > at {
			cur, curAt, err := l.newest(ctx, me, w)
			if err != nil || cur == nil || *cur != *pred {
				// Ours is gone (error), or no older key remains (held), or
				// the predecessor went before the watch and an older key is
				// the new predecessor: watch that one instead.
				cancel()
				if err != nil {
					return err
				}
				pred, at = cur, curAt
				continue
			}
			at = curAt
		}
		// Step 3c: wait for the predecessor's delete (at revision d; it was
		// there at revision at, so an earlier delete of its name is not
		// its own).
		d, err := waitDelete(ctx, ls, wch, at)
		cancel()
		switch {
		case err == nil:
			// Woken by the predecessor's delete: one wake-up.
			l.opts.OnWakeup()
		case !errors.Is(err, errWatch):
			return err
		default:
			if err := pause(ctx, ls, 50*time.Millisecond); err != nil {
				return err
			}
		}
		// Step 3d: the predecessor is gone, but it may have been a waiter
		// that crashed in the middle of the queue while an older key still
		// holds: re-check, at the delete's revision, before taking the
		// lock.
		if pred, at, err = l.newest(ctx, me, d); err != nil {
			return err
		}
	}
	return nil
}

// naiveWait is the seed article's wait: the predecessor's key gone, or any
// event on it, means "mine".
func (l *queueLocker) naiveWait(ctx context.Context, ls *lease, wch clientv3.WatchChan, pred kv) error {
	resp, err := l.cli.Get(ctx, pred.key, clientv3.WithKeysOnly())
	if err != nil {
		return err
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != pred.rev {
		return nil
	}
	for {
		select {
		case wr, ok := <-wch:
			if !ok || wr.Err() != nil || wr.Canceled {
				return fmt.Errorf("%w: %v", errWatch, wr.Err())
			}
			if len(wr.Events) > 0 {
				l.opts.OnWakeup()
				return nil
			}
		case <-ls.lost:
			return leaseLost(ls)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// newest returns the newest key older than me (nil: none, so me holds) and
// the revision of the state it read, in one read that also checks that me
// is still there: a key deleted with its expired lease must not go on to
// "hold" the lock.
//
// With rev > 0 it reads the state at revision rev, serializably: from the
// member it reaches, with no round of agreement among members (a
// linearizable read costs one), which takes a step off every handoff. This
// is sound because keys only ever join the queue behind me (a new key's
// create revision is above mine): if no older key exists at rev, none
// exists later, and me, there at rev, is the oldest from then on for as
// long as it exists. And the state at a revision is the same on every
// member that has applied it. A member that has not applied rev yet
// answers "future revision", and the read is tried again (the client takes
// the members in turn; one in seven reads met a lagging member at 8
// clients); a member that has compacted rev, or a third refusal, makes the
// read linearizable instead.
//
// A later revision than asked is as good (the caller's watch delivers
// every event after rev, so after any later one too); the read is never
// made before me.rev, since a watch served by a lagging member can report
// a revision older than me.
func (l *queueLocker) newest(ctx context.Context, me kv, rev int64) (*kv, int64, error) {
	older := append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(me.rev-1), clientv3.WithKeysOnly())
	if rev > 0 {
		rev = max(rev, me.rev)
		at := []clientv3.OpOption{clientv3.WithRev(rev), clientv3.WithSerializable()}
		for try := 0; try < 3; try++ {
			resp, err := l.cli.Txn(ctx).
				Then(clientv3.OpGet(me.key, append(at, clientv3.WithKeysOnly())...),
					clientv3.OpGet(l.pfx, append(older, at...)...)).
				Commit()
			if err == nil {
				if mine := resp.Responses[0].GetResponseRange().Kvs; len(mine) == 0 || mine[0].CreateRevision != me.rev {
					return nil, 0, fmt.Errorf("%w: key %s@%d is gone", ErrLeaseLost, me.key, me.rev)
				}
				return firstKV(resp.Responses[1].GetResponseRange().Kvs), rev, nil
			}
			if ctx.Err() != nil {
				return nil, 0, err
			}
			if !errors.Is(err, rpctypes.ErrFutureRev) {
				break
			}
		}
	}
	resp, err := l.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(me.key), "=", me.rev)).
		Then(clientv3.OpGet(l.pfx, older...)).
		Commit()
	if err != nil {
		return nil, 0, err
	}
	if !resp.Succeeded {
		return nil, 0, fmt.Errorf("%w: key %s@%d is gone", ErrLeaseLost, me.key, me.rev)
	}
	return firstKV(resp.Responses[0].GetResponseRange().Kvs), resp.Header.Revision, nil
}

func firstKV(kvs []*mvccpb.KeyValue) *kv {
	if len(kvs) == 0 {
		return nil
	}
	return &kv{key: string(kvs[0].Key), rev: kvs[0].CreateRevision}
}

// leave ends a Lock that failed while its key was in the queue: the key
// must go, and only a confirmed delete (or lease revoke) makes the failure
// certain.
func (l *queueLocker) leave(ctx context.Context, ls *lease, me kv, cause error) error {
	if errors.Is(cause, ErrLeaseLost) {
		// The lease is gone or no longer refreshed: revoke it to be sure.
		return l.leases.settle(ctx, ls, cause)
	}
	cctx, cancel := cleanupCtx(ctx)
	defer cancel()
	// The put's answer came back, so no write of this key is in flight: a
	// conditional delete settles it.
	if err := deleteOwn(cctx, l.cli, me.key, me.rev); err != nil {
		// The key may still be there, under a lease this client keeps
		// alive, and would block the queue: give the lease up.
		return l.leases.settle(ctx, ls, fmt.Errorf("%w; delete %s: %v", cause, me.key, err))
	}
	return notAcquired(cause)
}

func (l *queueLocker) Unlock(ctx context.Context, g *Grant) error {
	return unlockOwn(ctx, l.cli, l.leases, g)
}

func (l *queueLocker) Close(ctx context.Context) error { return l.leases.close(ctx) }

// TryLock puts our key only if the queue is empty, in one txn: a range
// compare over the prefix is true only when no key in it exists (every key
// would need create revision 0). A busy lock leaves no key behind.
func (l *queueLocker) TryLock(ctx context.Context) (*Grant, error) {
	for retry := true; ; retry = false {
		// Step 1: the client's lease.
		ls, err := l.leases.get(ctx)
		if err != nil {
			return nil, notAcquired(err)
		}
		// Step 2: put our key if, and only if, the queue is empty.
		key := l.keyOf(ls)
		resp, err := l.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(l.pfx), "=", 0).WithPrefix()).
			Then(clientv3.OpPut(key, "", clientv3.WithLease(ls.id))).
			Commit()
		switch {
		case retry && isLeaseNotFound(err):
			// The lease expired before the client heard: once more.
			l.leases.expired(ls)
			continue
		case err != nil:
			return nil, l.leases.settle(ctx, ls, fmt.Errorf("try lock: %w", err))
		case !resp.Succeeded:
			return nil, ErrLocked
		}
		return grantOf(key, resp.Header.Revision, ls), nil
	}
}
