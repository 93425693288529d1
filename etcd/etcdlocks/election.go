package etcdlocks

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3election/v3electionpb"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/verdict"
)

func init() {
	Register(locks.Strategy{
		Name:        "election",
		Description: "etcd's concurrency.Election as a lock: Campaign to acquire, Resign to release, over a Session of its own (as leader election is deployed)",
		Origin:      "etcd's own client election",
		// A Session keeps its lease, as users of Election run it:
		// --keepalive does not apply.
		OwnLease: true,
		Order:    verdict.FIFO,
	}, newElection)
	Register(locks.Strategy{
		Name:        "election-rpc",
		Description: "etcd's server-side election service (v3election Campaign/Resign) over the client's lease",
		Origin:      "etcd's own election service",
		Order:       verdict.FIFO,
	}, newElectionRPC)
}

// electionValue is what every campaigner proclaims: the lock is the
// leader key's existence, not its value.
const electionValue = "lockbench"

// electionLocker runs concurrency.Election unchanged, the way a program
// that elects a leader uses it: one Session per client (its own lease and
// keepalive), Campaign blocks until this client leads, Resign ends it. The
// leader key's create revision (Election.Rev) is the fencing token, and
// the Session's end is the lost lease.
//
// Wake-ups are not reported (Options.OnWakeup): Campaign waits inside
// etcd's code, which exposes no hook.
type electionLocker struct {
	cli  *clientv3.Client
	opts Options
	sess *concurrency.Session
	held *concurrency.Election
	// exits makes a failed Campaign end the program's Session as a process
	// exit would (election-exits, electionexits.go).
	exits bool
}

func newElection(_ context.Context, cli *clientv3.Client, opts Options) (locks.Locker, error) {
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	return &electionLocker{cli: cli, opts: opts}, nil
}

// session returns the client's live Session, making a new one once the
// old one has ended (its lease expired or was revoked).
func (l *electionLocker) session() (*concurrency.Session, error) {
	if l.sess != nil {
		select {
		case <-l.sess.Done():
			l.sess = nil
		default:
			return l.sess, nil
		}
	}
	// Its context is the client's, not a call's, so that cancelling one
	// Lock does not end the Session.
	s, err := concurrency.NewSession(l.cli, concurrency.WithTTL(int(l.opts.TTL/time.Second)), concurrency.WithContext(l.cli.Ctx()))
	if err != nil {
		return nil, fmt.Errorf("new session: %w", err)
	}
	l.sess = s
	return s, nil
}

func (l *electionLocker) Lock(ctx context.Context) (*locks.Grant, error) {
	for retry := true; ; retry = false {
		// Step 1: a Session, whose lease the campaign key hangs on.
		s, err := l.session()
		if err != nil {
			return nil, notAcquired(err)
		}
		// Step 2: Campaign puts this client's key under the prefix and
		// waits until every older key is gone; on a cancelled context it
		// resigns by itself. It does not re-read its own key after waiting.
		e := concurrency.NewElection(s, l.opts.Key())
		err = e.Campaign(ctx, electionValue)
		switch {
		case err == nil:
			// Step 3: Election's own record of the key it leads with is
			// the grant.
			l.held = e
			return &locks.Grant{Key: e.Key(), Token: e.Rev(), Lease: int64(s.Lease()), Lost: s.Done()}, nil
		case retry && isLeaseNotFound(err):
			// The put failed as a whole: the Session's lease ended before
			// its keepalive noticed. Once more, on a new Session.
			s.Orphan()
			l.sess = nil
		case l.exits:
			return nil, l.exit(s, err)
		default:
			// The key may remain (the put's outcome, or Campaign's own
			// resignation, unknown): end the Session, whose revoke removes
			// it.
			return nil, l.dropSession(ctx, fmt.Errorf("campaign: %w", err))
		}
	}
}

func (l *electionLocker) Unlock(ctx context.Context, g *locks.Grant) error {
	e := l.held
	if e == nil || e.Key() != g.Key || e.Rev() != g.Token {
		return fmt.Errorf("unlock %s@%d: not held by this client", g.Key, g.Token)
	}
	l.held = nil
	// Step 1: Resign deletes the leader key only at its create revision,
	// so a stale leader never removes a later campaigner's key.
	if err := e.Resign(ctx); err != nil {
		// Step 2: unknown outcome: the key may remain under the Session's
		// lease; end the Session so that it goes.
		return l.dropSession(ctx, fmt.Errorf("resign %s: %w", g.Key, err))
	}
	return nil
}

// dropSession ends the Session after a request of unknown outcome: its
// lease is revoked, and with it any key this client may still have. The
// error wraps locks.ErrNotAcquired when the revoke is confirmed.
func (l *electionLocker) dropSession(ctx context.Context, cause error) error {
	s := l.sess
	l.sess, l.held = nil, nil
	if s == nil {
		return cause
	}
	return endSession(ctx, l.cli, s, cause)
}

// endSession orphans s and revokes its lease, and with it any key left
// under it; the error wraps locks.ErrNotAcquired when the revoke is
// confirmed.
func endSession(ctx context.Context, cli *clientv3.Client, s *concurrency.Session, cause error) error {
	s.Orphan()
	rctx, cancel := cleanupCtx(ctx)
	defer cancel()
	if _, err := cli.Revoke(rctx, s.Lease()); err != nil && !isLeaseNotFound(err) {
		return fmt.Errorf("%w (outcome unknown: revoke: %v)", cause, err)
	}
	return notAcquired(cause)
}

func (l *electionLocker) Close(context.Context) error {
	s := l.sess
	l.sess, l.held = nil, nil
	if s == nil {
		return nil
	}
	return s.Close()
}

// electionRPCLocker uses etcd's election service: the server runs
// concurrency.Election.Campaign on the client's behalf, over the lease the
// client passes and keeps alive (Options.KeepAlive), and answers with the
// leader key and its create revision, which is the fencing token.
//
// Wake-ups are not reported (Options.OnWakeup): the wait happens inside
// the server.
type electionRPCLocker struct {
	opts     Options
	election v3electionpb.ElectionClient
	leases   *leaseKeeper
	held     *v3electionpb.LeaderKey
}

func newElectionRPC(_ context.Context, cli *clientv3.Client, opts Options) (locks.Locker, error) {
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	return &electionRPCLocker{opts: opts, election: v3electionpb.NewElectionClient(cli.ActiveConnection()), leases: newLeaseKeeper(cli, opts)}, nil
}

func (l *electionRPCLocker) Lock(ctx context.Context) (*locks.Grant, error) {
	retried := false
	// Step 1: the client's lease (granted on first use, reused while
	// alive), and the campaign under it: the server puts the key and waits
	// until this client leads.
	ls, resp, err := underLease(ctx, l.leases, &retried, func(ls *lease) (*v3electionpb.CampaignResponse, error) {
		return l.election.Campaign(ctx, &v3electionpb.CampaignRequest{Name: []byte(l.opts.Key()), Lease: int64(ls.id), Value: []byte(electionValue)})
	})
	if ls == nil {
		return nil, err
	}
	if err != nil {
		// The server may have left the campaign key under our lease (its
		// Campaign resigns on a cancelled wait, but the client cannot know
		// it did): revoking the lease makes the outcome certain.
		return nil, l.leases.settle(ctx, ls, fmt.Errorf("campaign rpc: %w", err))
	}
	// Step 2: the server's answer is the grant: its key and create
	// revision, trusted as a caller of the election service trusts it.
	l.held = resp.Leader
	return grantOf(string(resp.Leader.Key), resp.Leader.Rev, ls), nil
}

func (l *electionRPCLocker) Unlock(ctx context.Context, g *locks.Grant) error {
	lk := l.held
	if lk == nil || string(lk.Key) != g.Key || lk.Rev != g.Token {
		return fmt.Errorf("unlock %s@%d: not held by this client", g.Key, g.Token)
	}
	l.held = nil
	// Step 1: the server's Resign deletes the key only at its revision;
	// step 2, on an unknown outcome, gives the lease up (unlockWith).
	return unlockWith(ctx, l.leases, g, func(ctx context.Context) error {
		_, err := l.election.Resign(ctx, &v3electionpb.ResignRequest{Leader: lk})
		return err
	})
}

func (l *electionRPCLocker) Close(ctx context.Context) error {
	l.held = nil
	return l.leases.close(ctx)
}
