// Package mutants is a catalogue of deliberately buggy lock strategies,
// each the kind of mistake people really make with etcd locks, and a
// correct control written the same way. They exist to test lockbench
// itself: every mutant must be caught by the default suite and by
// locktest (but those whose bug needs a fault locktest does not inject),
// and the control must never be flagged (make mutants).
//
// Importing the package registers them (names start with "mut-"); only
// tests and the `mutants` build of the CLI import it, so a normal
// lockbench never lists them.
//
// Every strategy here is written only against the public locks API and
// etcd's client, as a user's lock would be. Two correct bases — a
// single-key try-lock that watches the key, and a queue of keys ordered by
// create revision in which each waiter watches its predecessor — each get
// one bug switched on at a time.
package mutants

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/verdict"
)

// bug names one mistake switched on in a base strategy.
type bug string

// The catalogue. Each comment says the mistake and what should catch it.
const (
	none bug = ""
	// checkThenSet reads the key and, if absent, puts it: two clients can
	// both see it absent (exclusion).
	checkThenSet bug = "check-then-set"
	// noKeepAlive grants a lease per Lock and never refreshes it: a hold
	// longer than the TTL loses the key while the holder carries on
	// (exclusion, unexplained lease loss).
	noKeepAlive bug = "no-keepalive"
	// keepAliveEveryTTL refreshes with one KeepAliveOnce per TTL, i.e. just
	// after the server expired the lease, and never tells the holder
	// (unexplained lease loss).
	keepAliveEveryTTL bug = "keepalive-every-ttl"
	// unlockByName deletes the key by name, without comparing its create
	// revision: a holder that lost its lease deletes its successor's lock
	// (symmetry; etcd issue #22082 is this bug).
	unlockByName bug = "unlock-by-name"
	// noLease puts the key without a lease: a crashed holder's lock is
	// never released (liveness after a crash).
	noLease bug = "no-lease"
	// leaseAsToken hands out the lease ID as the fencing token instead of
	// the key's create revision: a fenced resource rejects the current
	// holder (fencing).
	leaseAsToken bug = "lease-as-token"
	// leakOnCancel leaves the waiter's queue key behind when Lock is
	// cancelled; the session keeps it alive and every later waiter queues
	// behind a client that is not waiting (liveness).
	leakOnCancel bug = "leak-on-cancel"
	// orderByName orders the queue by key name (random) instead of create
	// revision (exclusion).
	orderByName bug = "order-by-name"
	// revokeOnUnlock revokes the session's lease to release, then reuses
	// the session for the next Lock, whose puts fail (progress).
	revokeOnUnlock bug = "revoke-on-unlock"
)

// base is the shape of a strategy before its bug.
type base string

const (
	tryLock base = "try"   // one key, created if absent; waiters watch it
	queue   base = "queue" // a key per waiter, in create-revision order
)

// order is the grant order the base promises.
func (b base) order() verdict.Order {
	if b == queue {
		return verdict.FIFO
	}
	return verdict.NoOrder
}

// catalogue lists every registered strategy: its base and bug.
var catalogue = []struct {
	base base
	bug  bug
}{
	{tryLock, none}, {queue, none},
	{tryLock, checkThenSet}, {tryLock, noKeepAlive}, {tryLock, keepAliveEveryTTL},
	{tryLock, unlockByName}, {tryLock, noLease}, {tryLock, leaseAsToken},
	{queue, leakOnCancel}, {queue, orderByName}, {tryLock, revokeOnUnlock},
	{tryLock, lazyUnlock}, {queue, requeueOnce}, {tryLock, unlockPrefix},
	{tryLock, swallowUnlockError}, {queue, rejoinOnTimeout}, {tryLock, watchFromNow},
}

// Controls are the correct strategies of the catalogue: never flagged.
var Controls = []string{"mut-control-try", "mut-control-queue"}

// Names lists the buggy strategies of the catalogue.
func Names() []string {
	var out []string
	for _, c := range catalogue {
		if c.bug != none {
			out = append(out, "mut-"+string(c.bug))
		}
	}
	return out
}

func init() {
	for _, c := range catalogue {
		name, desc := "mut-"+string(c.bug), "catalogue mutant: "+string(c.bug)
		if c.bug == none {
			name, desc = "mut-control-"+string(c.base), "catalogue control: a correct "+string(c.base)+" lock"
		}
		etcdlocks.Register(locks.Strategy{
			Name: name, Description: desc, Origin: "lockbench's mutant catalogue (package mutants)",
			// Each keeps its lease its own way (the bug's, or a session's).
			Buggy: c.bug != none, OwnLease: true,
			// A queue promises FIFO; a try-lock whose waiters race does not.
			Order: c.base.order(),
		}, factory(c.base, c.bug))
	}
}

func factory(b base, bg bug) etcdlocks.Factory {
	return func(ctx context.Context, cli *clientv3.Client, opts etcdlocks.Options) (locks.Locker, error) {
		opts, err := opts.WithDefaults()
		if err != nil {
			return nil, err
		}
		l := &locker{cli: cli, opts: opts, bug: bg, key: opts.Key()}
		if b == queue {
			return &queueLocker{locker: l}, nil
		}
		return l, nil
	}
}

// locker is the try-lock base, and the lease handling both bases share.
type locker struct {
	cli  *clientv3.Client
	opts etcdlocks.Options
	bug  bug
	key  string

	mu   sync.Mutex
	sess *concurrency.Session // the client's lease while it lives
	// cached and stop serve the bugs that keep a lease ID in a field.
	cached clientv3.LeaseID
	stop   chan struct{}
	lazy   lazyDeletes // lazyUnlock's deletes in flight
}

// leaseFor returns the lease a new key goes under, and the channel that
// closes when the client learns it is gone.
func (l *locker) leaseFor(ctx context.Context) (clientv3.LeaseID, <-chan struct{}, error) {
	ttl := int(l.opts.TTL / time.Second)
	switch l.bug {
	case noLease:
		return clientv3.NoLease, nil, nil
	case noKeepAlive:
		// Step 1 (mutant): a fresh lease per Lock, never refreshed.
		g, err := l.cli.Grant(ctx, int64(ttl))
		if err != nil {
			return 0, nil, fmt.Errorf("grant: %w", err)
		}
		return g.ID, nil, nil
	case keepAliveEveryTTL, revokeOnUnlock:
		return l.cachedLease(ctx, ttl)
	}
	// Step 1: the client's session (a lease with etcd's keepalive), made
	// anew once the old one is gone.
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sess != nil {
		select {
		case <-l.sess.Done():
			l.sess = nil
		default:
		}
	}
	if l.sess == nil {
		s, err := concurrency.NewSession(l.cli, concurrency.WithTTL(ttl), concurrency.WithContext(context.WithoutCancel(ctx)))
		if err != nil {
			return 0, nil, fmt.Errorf("session: %w", err)
		}
		l.sess = s
	}
	if l.bug == silentLoss {
		// Step 1 (mutant): the session's end is never passed on.
		return l.sess.Lease(), make(chan struct{}), nil
	}
	return l.sess.Lease(), l.sess.Done(), nil
}

// cachedLease is the lease of keepAliveEveryTTL and revokeOnUnlock: one
// ID, granted once and kept in a field. keepAliveEveryTTL refreshes it
// with one KeepAliveOnce per TTL (just after the server expired it) and
// grants anew only once a refresh fails; revokeOnUnlock keeps it alive
// with etcd's KeepAlive stream but never notices it is gone.
func (l *locker) cachedLease(ctx context.Context, ttl int) (clientv3.LeaseID, <-chan struct{}, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cached != clientv3.NoLease {
		return l.cached, nil, nil
	}
	g, err := l.cli.Grant(ctx, int64(ttl))
	if err != nil {
		return 0, nil, fmt.Errorf("grant: %w", err)
	}
	l.cached = g.ID
	if l.stop == nil {
		l.stop = make(chan struct{})
	}
	stop := l.stop
	if l.bug == revokeOnUnlock {
		kctx, cancel := context.WithCancel(context.Background())
		go func() { <-stop; cancel() }()
		if _, err := l.cli.KeepAlive(kctx, g.ID); err != nil {
			return 0, nil, fmt.Errorf("keepalive: %w", err)
		}
		return g.ID, nil, nil
	}
	go l.refreshEveryTTL(g.ID, time.Duration(ttl)*time.Second, stop)
	return g.ID, nil, nil
}

// refreshEveryTTL is keepAliveEveryTTL's schedule: a KeepAliveOnce each
// TTL until one fails; then the next Lock grants a new lease.
func (l *locker) refreshEveryTTL(id clientv3.LeaseID, ttl time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(ttl)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), ttl)
		_, err := l.cli.KeepAliveOnce(ctx, id)
		cancel()
		if err != nil {
			l.mu.Lock()
			if l.cached == id {
				l.cached = clientv3.NoLease
			}
			l.mu.Unlock()
			return
		}
	}
}

// dropLease gives the client's lease up after an operation whose outcome
// is unknown, so that a key it may have left ends with it. It reports
// whether that is certain: the lease is revoked (or already gone), so no
// key of this client exists or can be written under it.
func (l *locker) dropLease(ctx context.Context, id clientv3.LeaseID) (gone bool) {
	if id == clientv3.NoLease {
		return false
	}
	l.mu.Lock()
	if l.sess != nil && l.sess.Lease() == id {
		l.sess.Orphan()
		l.sess = nil
	}
	if l.cached == id && l.bug != revokeOnUnlock {
		l.cached = clientv3.NoLease
	}
	l.mu.Unlock()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, err := l.cli.Revoke(cctx, id)
	return err == nil || isLeaseGone(err)
}

// unknownUnless is err, an acquire's failure of unknown outcome, made
// certain (wrapping ErrNotAcquired) when its lease is gone.
func unknownUnless(gone bool, err error) error {
	if gone {
		return fmt.Errorf("%w: %w", locks.ErrNotAcquired, err)
	}
	return err
}

func (l *locker) Lock(ctx context.Context) (*locks.Grant, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: %v", locks.ErrNotAcquired, err)
		}
		id, lost, err := l.leaseFor(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", locks.ErrNotAcquired, err)
		}
		// Step 2: create the key if it does not exist.
		created, rev, err := l.create(ctx, id)
		if isLeaseGone(err) && l.forget(id) {
			continue // expired before the client heard: again, on a new lease
		}
		if l.bug == timeoutAsGranted && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			// Step 2 (mutant): the txn was sent, so a timeout is taken for
			// a grant (token 0: the revision never came back).
			return &locks.Grant{Key: l.key, Lease: int64(id), Lost: lost}, nil
		}
		if err != nil {
			return nil, unknownUnless(l.dropLease(ctx, id), fmt.Errorf("try lock: %w", err))
		}
		if created > 0 {
			token := created
			if l.bug == leaseAsToken {
				token = int64(id)
			}
			return &locks.Grant{Key: l.key, Token: token, Lease: int64(id), Lost: lost}, nil
		}
		// Step 3: held: wait for a delete after the revision we saw it at.
		wait := func() error { return waitDelete(ctx, l.cli, l.key, rev) }
		if l.bug == watchFromNow {
			wait = func() error { return waitFromNow(ctx, l.cli, l.key) }
		}
		if err := wait(); err != nil {
			return nil, fmt.Errorf("%w: %v", locks.ErrNotAcquired, err)
		}
		l.opts.OnWakeup()
	}
}

// create puts the key under lease id if it is absent. It returns the new
// key's create revision, or 0 and the revision at which it was seen held.
func (l *locker) create(ctx context.Context, id clientv3.LeaseID) (created, seen int64, err error) {
	if l.bug == checkThenSet {
		// Step 2 (mutant): check, then set — two steps, not one txn.
		g, err := l.cli.Get(ctx, l.key)
		if err != nil {
			return 0, 0, err
		}
		if len(g.Kvs) > 0 {
			return 0, g.Header.Revision, nil
		}
		p, err := l.cli.Put(ctx, l.key, "", clientv3.WithLease(id))
		if err != nil {
			return 0, 0, err
		}
		return p.Header.Revision, 0, nil
	}
	resp, err := l.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(l.key), "=", 0)).
		Then(clientv3.OpPut(l.key, "", clientv3.WithLease(id))).
		Commit()
	if err != nil {
		return 0, 0, err
	}
	if resp.Succeeded {
		return resp.Header.Revision, 0, nil
	}
	return 0, resp.Header.Revision, nil
}

func (l *locker) Unlock(ctx context.Context, g *locks.Grant) error {
	switch l.bug {
	case unlockByName:
		// Step 4 (mutant): delete by name: maybe someone else's key.
		_, err := l.cli.Delete(ctx, g.Key)
		return err
	case revokeOnUnlock:
		// Step 4 (mutant): release by revoking the lease the session still
		// hands out.
		_, err := l.cli.Revoke(ctx, clientv3.LeaseID(g.Lease))
		return err
	case lazyUnlock:
		return l.unlockLater(g)
	case unlockPrefix:
		return l.unlockByPrefix(ctx, g)
	case swallowUnlockError:
		return l.unlockQuietly(ctx, g)
	}
	// Step 4: delete the key only if it is still the one granted.
	rev := g.Token
	if l.bug == leaseAsToken {
		rev = 0 // the token is not the revision: delete ours by lease below
	}
	return deleteOwn(ctx, l.cli, g.Key, rev, clientv3.LeaseID(g.Lease), l.dropLease)
}

func (l *locker) Close(ctx context.Context) error {
	l.lazy.close()
	l.mu.Lock()
	s, cached, stop := l.sess, l.cached, l.stop
	l.sess, l.cached, l.stop = nil, clientv3.NoLease, nil
	l.mu.Unlock()
	if stop != nil {
		close(stop)
	}
	if cached != clientv3.NoLease {
		l.cli.Revoke(ctx, cached)
	}
	if s != nil {
		// A lease already gone (it expired under load) is as closed.
		if err := s.Close(); err != nil && !isLeaseGone(err) {
			return err
		}
	}
	return nil
}

// deleteOwn deletes key if its create revision is rev (or, with rev 0, if
// it is under lease); when the outcome is unknown, drop gives the lease up.
func deleteOwn(ctx context.Context, cli *clientv3.Client, key string, rev int64, lease clientv3.LeaseID,
	drop func(context.Context, clientv3.LeaseID) bool) error {
	cmp := clientv3.Compare(clientv3.CreateRevision(key), "=", rev)
	if rev == 0 {
		cmp = clientv3.Compare(clientv3.LeaseValue(key), "=", lease)
	}
	if _, err := cli.Txn(ctx).If(cmp).Then(clientv3.OpDelete(key)).Commit(); err != nil {
		drop(ctx, lease)
		return fmt.Errorf("unlock %s: %w", key, err)
	}
	return nil
}

// waitDelete returns once key is deleted after revision seen. The watch
// starts just after seen, so a delete in between is not missed.
func waitDelete(ctx context.Context, cli *clientv3.Client, key string, seen int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range cli.Watch(wctx, key, clientv3.WithRev(seen+1), clientv3.WithFilterPut()) {
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
	return fmt.Errorf("watch %s ended", key)
}

// randomName is a waiter's key name in the queue base.
func randomName() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// cleanupTimeout bounds a cleanup that must run after the caller's
// context has ended.
const cleanupTimeout = 2 * time.Second

// isLeaseGone reports a write refused because the server no longer knows
// the lease: nothing was written.
func isLeaseGone(err error) bool {
	return err != nil && errors.Is(rpctypes.Error(err), rpctypes.ErrLeaseNotFound)
}

// forget drops the session whose lease the server no longer knows, so the
// next attempt makes a new one. It reports whether there was one to drop
// (the bugs that keep their lease ID in a field do not look).
func (l *locker) forget(id clientv3.LeaseID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sess == nil || l.sess.Lease() != id {
		return false
	}
	l.sess.Orphan()
	l.sess = nil
	return true
}
