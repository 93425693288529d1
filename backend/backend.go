// Package backend is what a system a lock runs on offers a run, as a value
// (Jepsen's "the db is a value"): how a lock client connects to it, the
// session its Lockers share, and the shared resource the counter
// workloads read and write under the lock. The runner drives every
// backend through these interfaces, so a new system (ZooKeeper) adds a
// package that implements them, not a run loop of its own. It imports no
// backend's client.
package backend

import (
	"context"
	"errors"
	"time"

	"github.com/lockbench/lockbench/locks"
)

// Backend is one system lock clients run on.
type Backend interface {
	// Name is the backend's name, as strategies carry it
	// (locks.Strategy.Backend).
	Name() string
	// Dial opens one lock client's connection to endpoints: the members'
	// own listeners, or the fault relays in front of them that carry one
	// client's traffic.
	Dial(ctx context.Context, endpoints []string, opts DialOptions) (Connection, error)
	// Admin opens the run's own connection (the resource, clean-up, and
	// what the backend can tell of the run's keys): its requests are not
	// the lock's, so they are neither counted nor bounded by the lock
	// clients' per-request deadline.
	Admin(ctx context.Context, endpoints []string) (Admin, error)
}

// DialOptions shape a lock client's connection.
type DialOptions struct { // OnLease, when set, is told the ID of every lease or session the
	// connection is granted, as it is granted: the runner learns which
	// client a waiter's key (named by its lease) is before any grant
	// names it.
	OnLease func(id int64)
	// OnLeaseOp, when set, is told what the connection saw of its leases
	// as it saw it (a grant or renewal answered, a renewal answered with
	// the lease gone, a revoke sent): the runner records it, and the
	// expiry check judges from it what the server promised of each lease.
	// A backend without leases never calls it.
	OnLeaseOp func(LeaseOp)
}

// LeaseOp is one thing a connection saw of one of its leases.
type LeaseOp struct {
	// Op is history.LeaseGrant, LeaseRenew, LeaseGone or LeaseRevoke.
	Op    string
	Lease int64
	// TTL is the lease's TTL as the answer gave it (grant, renew).
	TTL time.Duration
	// Took is how long before the answer its request was sent (grant,
	// renew, gone): the server acted at or after then.
	Took time.Duration
}

// Connection is one connection to the backend. Several clients may share
// one (runner.Config.SharedConns), each with its own Session.
type Connection interface {
	// NewSession starts what one client's Lockers share on this
	// connection (etcd: one lease, kept alive by the backend's policy),
	// whose life is ttl past the client's last sign of life.
	NewSession(ctx context.Context, ttl time.Duration) (Session, error)
	// ReadCounter reads the shared resource at key; ErrNoCounter when it
	// is absent.
	ReadCounter(ctx context.Context, key string) (int64, error)
	// WriteCounter writes v to the shared resource at key. With fence,
	// the resource accepts the write only while fence's grant still holds
	// the lock (etcd: its key still exists at its token); accepted is false
	// when it refused a stale holder.
	WriteCounter(ctx context.Context, key string, v int64, fence *locks.Grant) (accepted bool, err error)
	// RPCs counts the requests the connection sent.
	RPCs() int64
	// Close closes the connection.
	Close() error
}

// Revisions is a Connection to a store whose changes are numbered in one
// order for every client (etcd's revisions): what its answers say lets a
// history merged from several workers' clocks order a release before the
// next grant where the clocks cannot (history.Event.Revision).
type Revisions interface {
	// Seen is the highest revision any answer the connection received
	// carried: a revision already committed.
	Seen() int64
	// Mark is the point in the connection's requests from which WroteSince
	// counts.
	Mark() uint64
	// WroteSince is the highest revision a write sent after mark created
	// and whose answer has arrived: a revision committed after the mark;
	// 0 when none.
	WroteSince(mark uint64) int64
}

// Session is one client's session on a connection: what its strategy's
// Lockers are made over.
type Session interface {
	// Conn is the connection as a strategy of this backend takes it.
	Conn() locks.Conn
	// Lease is the ID of the lease or session the client's Lockers share,
	// 0 when none has been granted yet (or the strategy keeps its own).
	Lease() int64
	// Close ends the session (etcd: revokes the shared lease), after the
	// client's Lockers are closed.
	Close(ctx context.Context) error
}

// ErrNoCounter is ReadCounter's error when the shared resource is absent.
var ErrNoCounter = errors.New("counter missing")

// Admin is the run's own connection.
type Admin interface {
	Connection
	// Keep starts what the run's own keys (the counter, the workers'
	// meeting place) live under for the run (etcd: a lease it keeps
	// alive), so that a run killed before its clean-up leaves them for
	// moments, not for ever.
	Keep(ctx context.Context) error
	// InitCounter puts the counter at key, 0, under what Keep started.
	InitCounter(ctx context.Context, key string) error
	// Release ends what Keep started, and the keys under it.
	Release(ctx context.Context) error
	// Clean removes every key under prefix: nothing of the run may stay
	// behind on a deployment it did not start.
	Clean(ctx context.Context, prefix string) error
}

// Observer is what an Admin of a backend that can watch the run's keys
// also does: the runner records a holder's key deleted under it (by
// someone else, or with its lease) as a key-deleted event, which the
// symmetry and lease checks read. Without one those checks say they could
// not look.
type Observer interface {
	// Revision is the store's revision now, read at prefix.
	Revision(ctx context.Context, prefix string) (int64, error)
	// WatchDeletes calls onDelete with every key under prefix deleted
	// from revision from on, and its deletion's revision, in order, until
	// ctx ends; a broken watch is opened again where it broke.
	WatchDeletes(ctx context.Context, prefix string, from int64, onDelete func(key string, rev int64))
	// LeaseAlive says whether the lease is still alive.
	LeaseAlive(ctx context.Context, lease int64) (bool, error)
}

// ChangeWatcher is an Observer that also sees creations: the runner then
// records which keys each client's lease keeps, and when they go
// (history.FKeyOp), for the expiry and orphans checks.
type ChangeWatcher interface {
	// WatchChanges calls onChange with every key under prefix created or
	// deleted from revision from on, in order, until ctx ends; a broken
	// watch is opened again where it broke. Updates of existing keys are
	// not told.
	WatchChanges(ctx context.Context, prefix string, from int64, onChange func(KeyChange))
}

// KeyChange is a key created or deleted.
type KeyChange struct {
	Key      string
	Revision int64
	// Lease is a created key's lease (0: none; unknown on a delete).
	Lease   int64
	Deleted bool
}

// Claimer is an Admin that claims a run's prefix on a shared cluster at
// once, so that of two runs started together on one prefix (both found it
// empty) only one runs: Claim puts key under what Keep started unless it
// exists, and returns ErrClaimed when it does.
type Claimer interface {
	Claim(ctx context.Context, key string) error
}

// ErrClaimed is Claim's error when another run holds the prefix.
var ErrClaimed = errors.New("another run holds this prefix")

// LeaseRevoker is an Admin that revokes a client's lease, as an operator
// does (the revoke-lease fault).
type LeaseRevoker interface {
	RevokeLease(ctx context.Context, lease int64) error
}

// KeyLister is an Admin that lists the keys under a prefix as they are
// now: the conformance suite (package locktest) reads from it what a
// strategy left on the backend (a waiter's key after a cancelled Lock, a
// holder's after its release), the same way on every backend.
type KeyLister interface {
	// Keys lists every key whose name begins with prefix, in no order.
	Keys(ctx context.Context, prefix string) ([]Key, error)
}

// Key is one key a KeyLister found.
type Key struct {
	// Name is the key (etcd, Redis) or the node's path (ZooKeeper).
	Name string
	// Created orders the keys' creations (etcd: the create revision;
	// ZooKeeper: the creation zxid), 0 where the backend has no such
	// order (Redis): a key deleted and made again has a new one.
	Created int64
	// Owner is the lease or session the key lives and dies with, 0 when
	// none.
	Owner int64
	// Ephemeral says that the key goes by itself once its client is gone:
	// it lives with a lease or session, or carries an expiry (Redis). A
	// holder's or a waiter's key is; one that is not stays until deleted
	// (a queue's parent node, a token counter).
	Ephemeral bool
}

// Meeting is an Admin of a store whose writes are ordered by revision,
// through which several worker processes drive one run (runner.Worker):
// they meet, align their clocks by probe writes, and read the lock's
// queue from it.
type Meeting interface {
	// Put writes value at key (under what Keep started) and returns its
	// revision.
	Put(ctx context.Context, key, value string) (int64, error)
	// Values are the values of the keys under prefix, by key.
	Values(ctx context.Context, prefix string) (map[string]string, error)
	// AwaitPuts waits until n distinct keys have been put at key (or
	// under it, when it ends in "/") since revision from, and says how
	// many it saw when ctx ended first.
	AwaitPuts(ctx context.Context, key string, from int64, n int) (int, error)
	// Queue is the lease of each key under prefix, oldest first.
	Queue(ctx context.Context, prefix string) ([]int64, error)
}

// Members are the members of a deployment lockbench started, which member
// faults act on. What a kind of member cannot suffer it refuses.
type Members interface {
	// Endpoints are the members' client addresses, index order (behind
	// the front doors that cut a crashed member's connections, if any).
	Endpoints() []string
	// DirectEndpoints skip any relay in front of the members, for runs
	// with no member fault.
	DirectEndpoints() []string
	// Count is the number of members.
	Count() int
	// Running reports whether member i is up (a paused member is up).
	Running(i int) bool
	// Leader is the index of the leader (or primary), or -1.
	Leader() int
	// Crash kills member i without a hand-over; Restart starts it again
	// on its own data.
	Crash(i int) error
	Restart(ctx context.Context, i int) error
	// Partition cuts member i from its peers both ways; Heal mends it.
	Partition(i int) error
	Heal(i int) error
	// Pause freezes member i (SIGSTOP); Resume thaws it.
	Pause(i int) error
	Resume(i int) error
}
