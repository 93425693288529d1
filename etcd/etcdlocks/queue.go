package etcdlocks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/verdict"
)

func init() {
	Register(locks.Strategy{
		Name:        "queue",
		Description: "pfx/<lease> keys, lowest create revision holds; each waiter watches its predecessor, then re-checks for older keys; a holder that knows its successor hands over in its release txn",
		Origin:      "seed article, scheme one, done right",
		Order:       verdict.FIFO,
	}, newQueue(false))
	Register(locks.Strategy{
		Name:        "queue-naive",
		Description: "the queue as the seed article's code does it: takes the lock on its predecessor's first event, no re-check",
		Origin:      "kept on purpose: a known-buggy strategy the checker must catch",
		Buggy:       true,
		Order:       verdict.FIFO,
	}, newQueue(true))
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
// compared by name (docs/design.md §10: the predecessor leaves and re-joins under
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
// so etcd only catches that watcher up on its 100 ms resync tick
// (docs/design.md §10). And the watch is kept for the next wait, which
// in a busy queue usually has the same predecessor (watchPred): then the
// wait costs no new watch and no read at all.
//
// Why no delete can be missed: the server confirms the watch with the
// revision W at which it started (read after the watcher was registered:
// every event after W is delivered), and the re-read is of the state at a
// revision R ≥ W. If the predecessor is still there at R, its delete comes
// after R, hence after W, and the watch delivers it; if not, the re-read
// shows it gone. This holds whichever members serve the watch and the read.
//
// Handover. A waiter woken by its predecessor's delete must still learn,
// at that delete's revision or later, that no older key is left and that
// its own key is still there (etcd #11456): one read, on every handoff's
// critical path. A holder that knows its successor does that work in its
// release instead: one txn deletes its key and, if the successor's key is
// still there at the create revision the holder saw, writes handoverValue
// into it (handOver). The successor also watches its own key, and that
// put, at the release's revision, is its grant: a handoff then costs one
// commit and one notification, as the ideal handoff does. A holder knows
// its successors when its re-check after a wake-up read them (up to
// maxNext), or a handover passed them on (the rest of the releaser's
// list, in the put's value), or an extension reached its key while it
// waited: a holder whose list is about to run out reads, in its handover
// txn, the keys after the list's last, and its next join puts them into
// that key (refillAt). Otherwise it releases with a plain delete, and the
// successor re-checks as before (and reads a new list). Why a handover
// grants is argued at handOver (queuehandover.go) and waitTurn.
type queueLocker struct {
	cli    *clientv3.Client
	opts   Options
	pfx    string // Options.Key() + "/"
	leases *leaseKeeper
	// naive takes the lock on the first event of the predecessor's key,
	// with no re-check: the seed article's scheme one as its code does it.
	naive bool

	// mu guards next, ext, refill and pred.
	mu sync.Mutex
	// next are the successors the current grant (by token) will hand over
	// to on Unlock; zero when none is known.
	next handoff
	// ext is an extension put into our key (by create revision, as token)
	// while it waited: successors for when the list handed over runs out.
	ext handoff
	// refill is the extension our last handover read, for the next join
	// to put into the key it is for.
	refill refill
	// own watches our key (named by the lease, so reused by every
	// acquisition on it) for handovers, from the first wait on a lease to
	// Close, the next lease, or keepPredWatch without a wait: one watch a
	// busy client, not one an acquisition. Only the worker's goroutine
	// and, while no wait runs, the idle timer (under mu) touch it.
	own ownWatch
	// pred watches the key name of our last predecessor, kept for the next
	// wait (watchPred).
	pred predWatch
}

func newQueue(naive bool) Factory {
	return func(ctx context.Context, cli *clientv3.Client, opts Options) (locks.Locker, error) {
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

func (l *queueLocker) Lock(ctx context.Context) (*locks.Grant, error) {
	// Steps 1 and 2: the lease, and our key in the queue.
	ls, me, pred, err := l.join(ctx)
	if err != nil {
		return nil, err
	}
	// Step 3: wait until no older key remains (or the predecessor hands
	// the lock over).
	next, err := l.wait(ctx, ls, me, pred, me.rev)
	if err != nil {
		return nil, l.leave(ctx, ls, me, err)
	}
	// A lease this client no longer refreshes will not keep the lock.
	if ls.isLost() {
		return nil, l.leave(ctx, ls, me, leaseLost(ls))
	}
	// Step 4: our key is the oldest: the lock is held, fenced by the key's
	// create revision. Remember the successors, if a read saw any, the
	// handover passed some on or an extension came, for the handover at
	// Unlock.
	l.setNext(me.rev, longer(next, l.takeExt(me.rev)))
	return grantOf(me.key, me.rev, ls), nil
}

// join puts our key at the tail of the queue and returns it with its
// predecessor (nil: none, the lock is ours).
func (l *queueLocker) join(ctx context.Context) (*lease, kv, *kv, error) {
	leaseRetried, staleRetry := false, true
	for {
		// Step 1: the client's lease (granted on first use, reused while
		// alive; once more with a new one if it expired before the client
		// heard: underLease).
		ls, resp, err := underLease(ctx, l.leases, &leaseRetried, func(ls *lease) (*clientv3.TxnResponse, error) {
			// Step 2: join the queue. One txn puts our key under the lease
			// and reads the two newest keys of the queue at the put's
			// revision: the newest is ours, the other (if any) our
			// predecessor. Our key's create revision is the txn's revision.
			// It also carries the extension our last handover read, if any
			// (extend).
			key := l.keyOf(ls)
			return l.cli.Txn(ctx).
				If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
				Then(append([]clientv3.Op{clientv3.OpPut(key, "", clientv3.WithLease(ls.id)),
					clientv3.OpGet(l.pfx, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(2), clientv3.WithKeysOnly())},
					l.extend(key)...)...).
				Else(clientv3.OpGet(key, clientv3.WithKeysOnly())).
				Commit()
		})
		if ls == nil {
			return nil, kv{}, nil, err
		}
		me := kv{key: l.keyOf(ls)}
		switch {
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

// wait returns once me is the oldest key of the queue, starting from pred,
// the newest older key in the state at revision at (nil: none). It also
// returns the oldest keys newer than me that its last re-check after a
// wake-up read, or that a handover passed on, whichever are more: the
// successors a later Unlock may hand the lock over to.
func (l *queueLocker) wait(ctx context.Context, ls *lease, me kv, pred *kv, at int64) ([]kv, error) {
	// The watches are kept a while for the next wait.
	l.takeWatches()
	defer l.idleWatches()
	// Step 3: watch our own key for a handover (watchOwn); a holder may
	// have handed over to us already.
	own := new(clientv3.WatchChan) // none: a nil channel
	if !l.naive {
		own = l.watchOwn(me.key)
		if h, passed := l.pollHandover(own, me); h > 0 {
			l.opts.OnWakeup()
			return passed, nil
		}
	}
	var next []kv
	for pred != nil {
		// Step 3a: watch the predecessor's key name: the watch kept from
		// our last wait if it was on the same name (watchPred), else one
		// from the server's current revision, once the server confirms it.
		// Either way the watch delivers every event on the name after
		// revision w.
		wch, w, err := l.watchPred(ctx, *pred, ls)
		if err != nil {
			if !errors.Is(err, errWatch) {
				return nil, err
			}
			// A watch refused or cut (no leader, compaction): pause and
			// start over from a fresh read.
			if err := pause(ctx, ls, 50*time.Millisecond); err != nil {
				return nil, err
			}
			if pred, _, at, err = l.newest(ctx, me, 0, false); err != nil {
				return nil, err
			}
			continue
		}
		if l.naive {
			// Naive: if the predecessor's key is gone, take the lock; else
			// take it on the key's first event. No look at older keys.
			err = l.naiveWait(ctx, ls, wch, *pred)
			l.dropPred()
			return nil, err
		}
		// Step 3b: re-read, at the watch's revision or later, the newest
		// key older than ours, and check that ours is still there. Not
		// needed if the watch started no later than the state pred was
		// seen in (w ≤ at): then the watch covers every change since. A
		// kept watch always did.
		if w > at {
			cur, _, curAt, err := l.newest(ctx, me, w, false)
			if err != nil || cur == nil || *cur != *pred {
				// Ours is gone (error), or no older key remains (held), or
				// the predecessor went before the watch and an older key is
				// the new predecessor: watch that one instead.
				if err != nil {
					return nil, err
				}
				pred, at = cur, curAt
				continue
			}
			at = curAt
		}
		// Step 3c: wait for the predecessor's delete (at revision d; it was
		// there at revision at, so an earlier delete of its name is not
		// its own), or for a handover into our key (at revision d).
		d, handed, passed, err := l.waitTurn(ctx, ls, wch, own, me, at)
		switch {
		case err == nil:
			// Woken by the predecessor's delete or the handover: one
			// wake-up.
			l.opts.OnWakeup()
			if handed {
				// Handed over: ours is the oldest key at d, and there
				// (waitTurn says why): held, with no read.
				return longer(passed, next), nil
			}
		case !errors.Is(err, errWatch):
			return nil, err
		default:
			// The watch ended: the next wait opens a new one.
			l.dropPred()
			if err := pause(ctx, ls, 50*time.Millisecond); err != nil {
				return nil, err
			}
		}
		// Step 3d: the predecessor is gone, but it may have been a waiter
		// that crashed in the middle of the queue while an older key still
		// holds: re-check, at the delete's revision, before taking the
		// lock — unless the handover of the same txn comes first.
		cur, curNext, curAt, handed, err := l.recheck(ctx, me, d, own)
		if err != nil {
			return nil, err
		}
		if handed {
			return longer(curNext, next), nil
		}
		pred, next, at = cur, curNext, curAt
	}
	return next, nil
}

// recheck is step 3d: newest at revision d, unless a handover into me
// comes on *own (handed true, with the successors it passed on). The
// delete that woke us and a handover are one txn, but the handover's
// event, on the other watch, may come just after the delete's: the read
// starts only if none came within handoverGrace, and is then raced
// against a late one — whichever answers first wins. A handover that wins
// ends the read (its context cancelled, and the read waited for, so that
// nothing outlives the call).
func (l *queueLocker) recheck(ctx context.Context, me kv, d int64, own *clientv3.WatchChan) (pred *kv, next []kv, at int64, handed bool, err error) {
	if h, passed := l.awaitHandover(ctx, own, me, handoverGrace); h > 0 {
		return nil, passed, h, true, nil
	}
	if *own == nil {
		pred, next, at, err = l.newest(ctx, me, d, true)
		return pred, next, at, false, err
	}
	type read struct {
		pred *kv
		next []kv
		at   int64
		err  error
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan read, 1)
	go func() {
		p, n, a, e := l.newest(rctx, me, d, true)
		done <- read{p, n, a, e}
	}()
	for {
		select {
		case r := <-done:
			return r.pred, r.next, r.at, false, r.err
		case wr, ok := <-*own:
			h, passed, alive := l.handover(wr, ok, me)
			if !alive {
				*own = nil // the read goes on alone
			}
			if h > 0 {
				cancel()
				<-done
				return nil, passed, h, true, nil
			}
		}
	}
}

// waitTurn waits on wch for the predecessor's delete after revision after
// (handed false), or on *own for a handover into me (handed true, with the
// successors it passed on), and returns the revision d of whichever comes
// first. A handover is a grant: only a holder's release (handOver) puts
// handoverValue into a queue key, and only in a txn that found both its
// own key and ours (at our create revision) still there; handOver argues
// that ours is then the oldest key at the txn's revision, and it exists at
// that revision (the event is a put at our create revision). The handover
// and the predecessor's delete are one txn, but two watches: their events
// may come in either order. A watch of our own key that fails is dropped
// (*own set to nil): the predecessor's watch still tells of every turn, by
// a re-check. It gives up when ls is lost.
func (l *queueLocker) waitTurn(ctx context.Context, ls *lease, wch clientv3.WatchChan, own *clientv3.WatchChan, me kv, after int64) (d int64, handed bool, passed []kv, err error) {
	for {
		select {
		case wr, ok := <-wch:
			if err := ctx.Err(); err != nil {
				return 0, false, nil, err
			}
			if !ok || wr.Err() != nil || wr.Canceled {
				return 0, false, nil, fmt.Errorf("%w: %v", errWatch, wr.Err())
			}
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE && ev.Kv.ModRevision > after {
					// The handover of the same txn may be waiting already.
					if h, passed := l.pollHandover(own, me); h > 0 {
						return h, true, passed, nil
					}
					return ev.Kv.ModRevision, false, nil, nil
				}
			}
		case wr, ok := <-*own:
			h, passed, alive := l.handover(wr, ok, me)
			if h > 0 {
				return h, true, passed, nil
			}
			if !alive {
				*own = nil
			}
		case <-lostOf(ls):
			return 0, false, nil, leaseLost(ls)
		case <-ctx.Done():
			return 0, false, nil, ctx.Err()
		}
	}
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

// newest returns the newest key older than me (nil: none, so me holds),
// with succs the oldest keys newer than me, oldest first (up to maxNext:
// the successors a handover may go to; read only by the re-check after a
// wake-up, since a read right after joining rarely finds any and each is
// one more range over the whole prefix) and the revision of the state it
// read, in one read that also checks
// that me is still there: a key deleted with its expired lease must not go
// on to "hold" the lock.
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
func (l *queueLocker) newest(ctx context.Context, me kv, rev int64, succs bool) (pred *kv, next []kv, at int64, err error) {
	older := append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(me.rev-1), clientv3.WithKeysOnly())
	newer := successors(me.rev)
	if rev > 0 {
		rev = max(rev, me.rev)
		at := []clientv3.OpOption{clientv3.WithRev(rev), clientv3.WithSerializable()}
		ops := []clientv3.Op{clientv3.OpGet(me.key, append(at, clientv3.WithKeysOnly())...), clientv3.OpGet(l.pfx, append(older, at...)...)}
		if succs {
			ops = append(ops, clientv3.OpGet(l.pfx, append(newer, at...)...))
		}
		for try := 0; try < 3; try++ {
			resp, err := l.cli.Txn(ctx).Then(ops...).Commit()
			if err == nil {
				if mine := resp.Responses[0].GetResponseRange().Kvs; len(mine) == 0 || mine[0].CreateRevision != me.rev {
					return nil, nil, 0, fmt.Errorf("%w: key %s@%d is gone", locks.ErrLeaseLost, me.key, me.rev)
				}
				return firstKV(resp.Responses[1].GetResponseRange().Kvs), nextOf(resp.Responses[2:]), rev, nil
			}
			if ctx.Err() != nil {
				return nil, nil, 0, err
			}
			if !errors.Is(err, rpctypes.ErrFutureRev) {
				break
			}
		}
	}
	ops := []clientv3.Op{clientv3.OpGet(l.pfx, older...)}
	if succs {
		ops = append(ops, clientv3.OpGet(l.pfx, newer...))
	}
	resp, err := l.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(me.key), "=", me.rev)).
		Then(ops...).
		Commit()
	if err != nil {
		return nil, nil, 0, err
	}
	if !resp.Succeeded {
		return nil, nil, 0, fmt.Errorf("%w: key %s@%d is gone", locks.ErrLeaseLost, me.key, me.rev)
	}
	return firstKV(resp.Responses[0].GetResponseRange().Kvs), nextOf(resp.Responses[1:]), resp.Header.Revision, nil
}

// successors are the options of a read of the oldest keys of the queue
// (with l.pfx) created after revision rev, oldest first, up to maxNext.
func successors(rev int64) []clientv3.OpOption {
	return []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend),
		clientv3.WithLimit(maxNext), clientv3.WithMinCreateRev(rev + 1), clientv3.WithKeysOnly()}
}

// nextOf is the successors read by newest's last op, if it read them (no
// op: none).
func nextOf(resps []*etcdserverpb.ResponseOp) []kv {
	if len(resps) == 0 {
		return nil
	}
	kvs := resps[0].GetResponseRange().Kvs
	out := make([]kv, 0, len(kvs))
	for _, k := range kvs {
		out = append(out, kv{key: string(k.Key), rev: k.CreateRevision})
	}
	return out
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
	if errors.Is(cause, locks.ErrLeaseLost) {
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

// Unlock deletes g's key; when g knows its successors (its re-check after
// a wake-up read them, or a handover passed them on), it hands the lock over to the
// first in the same txn (handOver).
func (l *queueLocker) Unlock(ctx context.Context, g *locks.Grant) error {
	next := l.takeNext(g.Token)
	if len(next) == 0 {
		return unlockOwn(ctx, l.cli, l.leases, g)
	}
	return unlockWith(ctx, l.leases, g, func(ctx context.Context) error { return l.handOver(ctx, g, next) })
}

// Close ends the watches and revokes the lease (unless it is shared).
func (l *queueLocker) Close(ctx context.Context) error {
	l.takeWatches()
	l.watchOwn("")
	l.dropPred()
	return l.leases.close(ctx)
}

// TryLock puts our key only if the queue is empty, in one txn: a range
// compare over the prefix is true only when no key in it exists (every key
// would need create revision 0). A busy lock leaves no key behind.
func (l *queueLocker) TryLock(ctx context.Context) (*locks.Grant, error) {
	// Step 1: the client's lease (once more with a new one if it expired
	// before the client heard: underLease).
	var leaseRetried bool
	ls, resp, err := underLease(ctx, l.leases, &leaseRetried, func(ls *lease) (*clientv3.TxnResponse, error) {
		// Step 2: put our key if, and only if, the queue is empty.
		return l.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(l.pfx), "=", 0).WithPrefix()).
			Then(clientv3.OpPut(l.keyOf(ls), "", clientv3.WithLease(ls.id))).
			Commit()
	})
	switch {
	case ls == nil:
		return nil, err
	case err != nil:
		return nil, l.leases.settle(ctx, ls, fmt.Errorf("try lock: %w", err))
	case !resp.Succeeded:
		return nil, locks.ErrLocked
	}
	l.setNext(resp.Header.Revision, nil)
	return grantOf(l.keyOf(ls), resp.Header.Revision, ls), nil
}
