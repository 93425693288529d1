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
	// Dial opens one connection to endpoints: the members' own listeners,
	// or the fault relays in front of them that carry one client's
	// traffic. It is a lock client's, or, with opts.Admin, the run's own
	// (for the resource and clean-up), which nothing counts or bounds.
	Dial(ctx context.Context, endpoints []string, opts DialOptions) (Connection, error)
}

// DialOptions shape a connection.
type DialOptions struct {
	// Admin marks the run's own connection: its requests are not the
	// lock's, so they are neither counted (Connection.RPCs) nor bounded by
	// the lock clients' per-request deadline.
	Admin bool
	// OnLease, when set, is told the ID of every lease or session the
	// connection is granted, as it is granted: the runner learns which
	// client a waiter's key (named by its lease) is before any grant
	// names it.
	OnLease func(id int64)
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
	// RPCs counts the requests the connection sent (0 for an admin one).
	RPCs() int64
	// Close closes the connection.
	Close() error
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
