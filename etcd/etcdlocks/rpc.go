package etcdlocks

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3lock/v3lockpb"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/verdict"
)

func init() {
	Register(locks.Strategy{
		Name:        "rpc",
		Description: "etcd's server-side lock service (v3lock Lock/Unlock, as etcdctl lock and jetcd use it)",
		Origin:      "seed article, scheme two",
		LockService: true,
		Order:       verdict.FIFO,
	}, newRPC)
	Register(locks.Strategy{
		Name:        "rpc-trusting",
		Description: "rpc without its re-read: trusts the lock service's answer, as a caller of jetcd's lock client does; registered to reproduce etcd #11456 (make repro-etcd-11456), hidden from the default suite",
		Origin:      "etcd #11456 (docs/processes.md)",
		LockService: true,
		Hidden:      true,
		Order:       verdict.FIFO,
	}, func(ctx context.Context, cli *clientv3.Client, opts Options) (locks.Locker, error) {
		l, err := newRPC(ctx, cli, opts)
		if err != nil {
			return nil, err
		}
		l.(*rpcLocker).trusting = true
		return l, nil
	})
}

// rpcLocker uses etcd's lock service: the server runs concurrency.Mutex on
// the client's behalf, over the lease the client passes and keeps alive.
// The server puts the key Options.Key() + "/" + <lease in hex>.
//
// Wake-ups are not reported (Options.OnWakeup): the wait happens inside
// the server.
type rpcLocker struct {
	cli    *clientv3.Client
	opts   Options
	lock   v3lockpb.LockClient
	leases *leaseKeeper
	held   *locks.Grant
	// trusting skips step 3 of Lock: the grant is whatever the lock
	// service answered (rpc-trusting). Exists to show what etcd 3.4's lock
	// service does to a client that trusts it (#11456): it may answer with
	// a key that is gone.
	trusting bool
}

func newRPC(ctx context.Context, cli *clientv3.Client, opts Options) (locks.Locker, error) {
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	return &rpcLocker{cli: cli, opts: opts, lock: v3lockpb.NewLockClient(cli.ActiveConnection()), leases: newLeaseKeeper(cli, opts)}, nil
}

func (l *rpcLocker) Lock(ctx context.Context) (*locks.Grant, error) {
	// Step 1: the client's lease (granted on first use, reused while
	// alive). Step 2: ask the server for the lock under that lease; it
	// returns the key it holds for us. A put the server refused for an
	// expired lease is asked once more under a new one (underLease).
	retried := false
	ls, resp, err := underLease(ctx, l.leases, &retried, func(ls *lease) (*v3lockpb.LockResponse, error) {
		return l.lock.Lock(ctx, &v3lockpb.LockRequest{Name: []byte(l.opts.Key()), Lease: int64(ls.id)})
	})
	if ls == nil {
		return nil, err // no lease: nothing was asked
	}
	if err != nil {
		// The server may have left a waiter (or holder) key under our lease:
		// it deletes it on a cancelled wait, but the client cannot know it
		// did, nor that a put is not still in flight. Revoking the lease
		// makes the outcome certain.
		return nil, l.leases.settle(ctx, ls, fmt.Errorf("lock rpc: %w", err))
	}
	key := string(resp.Key)
	if l.trusting {
		// No token: the answer does not carry the key's create revision
		// (only step 3's read would), and its header revision is not one
		// (after a wait it is a later read's, shared by every waiter woken
		// by the same delete). Token 0 tells the checker there is none.
		l.held = grantOf(key, 0, ls)
		return l.held, nil
	}
	// Step 3: read the token, the key's create revision. The response
	// header is not it: the server's Mutex returns the header of its put
	// only when the lock was free at once; after a wait it is the header of
	// a later Get, at the store's then revision.
	// (Not WithKeysOnly: etcd 3.7's keys-only range leaves out the lease.)
	gresp, err := l.cli.Get(ctx, key)
	if err != nil {
		// Held but unusable without a token: give it up with the lease.
		return nil, l.leases.settle(ctx, ls, fmt.Errorf("read lock key %s: %w", key, err))
	}
	if len(gresp.Kvs) == 0 || clientv3.LeaseID(gresp.Kvs[0].Lease) != ls.id {
		// The key went with the lease between the two calls.
		return nil, l.leases.settle(ctx, ls, fmt.Errorf("%w: key %s is gone", locks.ErrLeaseLost, key))
	}
	l.held = grantOf(key, gresp.Kvs[0].CreateRevision, ls)
	return l.held, nil
}

// Unlock uses the lock service's Unlock, which deletes the key by name.
// That is safe for a grant whose lease is gone: the key name contains the
// lease ID, and no key can be put again under a dead lease, so the name
// cannot belong to anyone else. Only a later grant of this same client,
// on the same lease, reuses the name; Unlock refuses any grant but the
// one it holds, so a stale grant cannot delete it.
func (l *rpcLocker) Unlock(ctx context.Context, g *locks.Grant) error {
	if l.held == nil || l.held.Key != g.Key || l.held.Token != g.Token {
		return fmt.Errorf("unlock %s@%d: not held by this client", g.Key, g.Token)
	}
	l.held = nil
	// Step 1: ask the server to delete the key.
	_, err := l.lock.Unlock(ctx, &v3lockpb.UnlockRequest{Key: []byte(g.Key)})
	if err == nil {
		return nil
	}
	// Step 2: unknown outcome: the key may remain under a lease this client
	// keeps alive; give the lease up so the key ends with it.
	if cur := l.leases.cur; cur != nil && int64(cur.id) == g.Lease {
		if rerr := l.leases.abandon(ctx, cur); rerr == nil {
			return nil
		}
	}
	return fmt.Errorf("unlock %s: %w", g.Key, err)
}

func (l *rpcLocker) Close(ctx context.Context) error {
	l.held = nil
	return l.leases.close(ctx)
}
