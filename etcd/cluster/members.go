package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/server/v3/etcdserver"

	"github.com/lockbench/lockbench/chaos"
)

// Members is what the runner and the harness need of a cluster lockbench
// started, whatever runs its members: goroutines inside lockbench
// (*Cluster, the embedded kind) or operating-system processes
// (*ProcessCluster). Member faults go through it; a kind that cannot do
// a fault returns an error naming the kind (ErrUnsupported).
type Members interface {
	// Kind names the cluster kind for messages and records: KindEmbedded
	// or KindProcess.
	Kind() string
	// Version is the etcd release the members run ("3.7.3").
	Version() string
	// Endpoints are the members' client URLs, index order.
	Endpoints() []string
	// DirectEndpoints are URLs that skip any relay in front of the
	// members, for runs with no member fault (see Cluster.DirectEndpoints).
	DirectEndpoints() []string
	// Count is the number of members.
	Count() int
	// Running reports whether member i is up (a paused member is up).
	Running(i int) bool
	// Leader is the index of the agreed leader, or -1.
	Leader() int
	// Healthy reports whether every member runs and one leads.
	Healthy() bool
	// Crash kills member i without a leadership hand-over.
	Crash(i int) error
	// Restart starts a crashed member again on its own data.
	Restart(ctx context.Context, i int) error
	// Partition cuts member i from its peers both ways; Heal mends it.
	Partition(i int) error
	Heal(i int) error
	// Pause freezes member i (SIGSTOP): a long GC pause; Resume thaws it.
	Pause(i int) error
	Resume(i int) error
	// ShapePeers delays or drops member i's peer traffic at the peer
	// relays (PeerShape; the zero shape ends it).
	ShapePeers(i int, s PeerShape) error
	// Replace removes member i from the cluster and adds a fresh member
	// with empty data in its place, as an operator replaces a dead disk.
	Replace(ctx context.Context, i int) error
	// SnapshotThreshold is how far (in raft entries) a follower must
	// fall behind the leader's applied index before the leader can only
	// catch it up with a snapshot: the snapshot count plus the entries
	// kept behind a snapshot.
	SnapshotThreshold() uint64
	// Tick and Election are the raft timings the members run with.
	Tick() time.Duration
	Election() time.Duration
	// UnsafeNoFsync reports whether the members run without fsync.
	UnsafeNoFsync() bool
	// PeerRelays reports whether the members' peer traffic goes through
	// relays lockbench can cut and shape (every commit a little slower);
	// SnapshotCount is the snapshot count they run with (0: etcd's
	// default). Runs record both, since they change what is measured.
	PeerRelays() bool
	SnapshotCount() uint64
	// TLS reports whether clients talk https; ClientTLSConfig is then
	// the configuration they need.
	TLS() bool
	ClientTLSConfig() (*tls.Config, error)
	// CheckLockService probes each member's lock service (see
	// ErrLockServiceStuck).
	CheckLockService(ctx context.Context) error
	// DataDir is the cluster's data folder, removed by Close.
	DataDir() string
	// Close stops every member and removes the data folder.
	Close() error
}

// Cluster kinds, as Members.Kind names them.
const (
	KindEmbedded = "embedded"
	KindProcess  = "process"
)

// ErrUnsupported is wrapped by a fault a cluster kind cannot do.
var ErrUnsupported = errors.New("not supported by this cluster kind")

// Open starts the cluster opts ask for: member processes when
// opts.EtcdBin is set (StartProcesses), else the embedded cluster (Start).
func Open(ctx context.Context, opts Options) (Members, error) {
	if opts.EtcdBin != "" {
		pc, err := StartProcesses(ctx, opts)
		if err != nil {
			return nil, err
		}
		return pc, nil
	}
	c, err := Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Refuses returns an error when a cluster of opts cannot do fault, so
// that a run is refused before anything starts; nil when it can.
func Refuses(opts Options, fault chaos.Fault) error {
	needs := fault.Needs()
	switch {
	case opts.EtcdBin == "" && needs.MemberProcesses:
		return fmt.Errorf("fault %s: the %s cluster cannot freeze one member (its members share lockbench's process); run with --etcd-bin self or --etcd-bin PATH", fault.Name(), KindEmbedded)
	case opts.EtcdBin == "" && needs.PeerRelays && !opts.PeerRelays:
		return fmt.Errorf("fault %s: the %s cluster relays its members' peer traffic only when started with --peer-relays (off by default: the relay slows every commit); run with --peer-relays, or with --etcd-bin self|PATH", fault.Name(), KindEmbedded)
	case opts.EtcdBin != "" && needs.SnapshotCount:
		return fmt.Errorf("fault %s: the %s cluster does not set the members' snapshot count yet; run it on the %s cluster (the default without --etcd-bin), which the harness starts with one", fault.Name(), KindProcess, KindEmbedded)
	case needs.Protocol != "":
		return fmt.Errorf("fault %s reads %s's client protocol at the client's relays; etcd's clients speak gRPC, which the relays do not read: run it with a %s lock", fault.Name(), needs.Protocol, needs.Protocol)
	case needs.AsyncReplication:
		return fmt.Errorf("fault %s: etcd commits only what a majority of its members has: it has no asynchronous replication link to cut (the fault is Redis's)", fault.Name())
	case needs.Clock:
		// A lease's expiry is a time.Time read with time.Now, which
		// carries Go's monotonic reading, and every comparison with it
		// (Lease.refresh sets it, Lease.Remaining's time.Until and the
		// lessor's expireExists' now.Before(item.time) read it) uses
		// that reading: a wall clock that jumps moves no lease. Nor can
		// a preloaded clock reach a Go program, which reads the time
		// through the vDSO itself, not the C library.
		return fmt.Errorf("fault %s: etcd's leases expire on Go's monotonic clock (lease.Lease.refresh sets the expiry with time.Now, Lease.Remaining reads it with time.Until, the lessor's expireExists compares it with time.Now: all monotonic readings), which a wall-clock jump does not move, and lockbench cannot move the clock of a Go program (the fault is Redis's, whose keys expire on the wall clock)", fault.Name())
	case needs.EmptyRestart:
		return fmt.Errorf("fault %s: an etcd member restarts on its own data; a member with empty data is replace-member (restart-empty is Redis's, whose nodes persist nothing)", fault.Name())
	case needs.SnapshotCount && (opts.SnapshotCount == 0 || opts.SnapshotCount > MaxCatchUpSnapshotCount):
		return fmt.Errorf("fault %s: the follower must fall 3 × the snapshot count behind, through writes of the fault's own, so the cluster needs --snapshot-count 1..%d (etcd's default is %d); run with e.g. --snapshot-count 100", fault.Name(), MaxCatchUpSnapshotCount, etcdserver.DefaultSnapshotCount)
	}
	return nil
}

// MaxCatchUpSnapshotCount is the highest snapshot count with which
// snapshot-catchup is allowed: its follower must fall three times that
// far behind (1.5 × count + catch-up entries), through writes the fault
// makes itself, within catchUpWait.
const MaxCatchUpSnapshotCount = 1000

// The embedded cluster is one kind of Members.
var _ Members = (*Cluster)(nil)

// Kind is KindEmbedded.
func (c *Cluster) Kind() string { return KindEmbedded }

// Version is the etcd release built into lockbench.
func (c *Cluster) Version() string { return EmbeddedVersion }

// Count is the number of members.
func (c *Cluster) Count() int { return len(c.members) }

// Running reports whether member i's server is up.
func (c *Cluster) Running(i int) bool {
	m, err := c.member(i)
	return err == nil && m.Running()
}

// Pause is refused: the embedded members are goroutines of lockbench's
// own process, which cannot be stopped one member at a time.
func (c *Cluster) Pause(i int) error {
	return fmt.Errorf("pause member %d: %w: the %s cluster's members run inside lockbench; use --etcd-bin self|PATH", i, ErrUnsupported, KindEmbedded)
}

// Resume is refused, as Pause is.
func (c *Cluster) Resume(i int) error {
	return fmt.Errorf("resume member %d: %w: the %s cluster's members run inside lockbench", i, ErrUnsupported, KindEmbedded)
}
