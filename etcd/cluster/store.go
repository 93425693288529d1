package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// The store faults are what an operator does to a running cluster through
// etcd's own API (etcdctl compaction, defrag, move-leader), so they act
// the same on either kind of Members: a compaction goes through any
// client of the cluster, a defrag or a leader transfer through a
// short-lived client of the member it needs, with the cluster's TLS
// configuration.

// storeDialTimeout bounds the connection of one store fault's client.
const storeDialTimeout = 5 * time.Second

// dialMember connects a client to member i alone.
func dialMember(c Members, i int) (*clientv3.Client, error) {
	if i < 0 || i >= c.Count() {
		return nil, fmt.Errorf("member %d: cluster has members 0..%d", i, c.Count()-1)
	}
	tlsCfg, err := c.ClientTLSConfig()
	if err != nil {
		return nil, err
	}
	return clientv3.New(clientv3.Config{Endpoints: []string{c.Endpoints()[i]}, TLS: tlsCfg, DialTimeout: storeDialTimeout, Logger: zap.NewNop()})
}

// Compact compacts the store's history up to its current revision, as
// etcd's periodic compactor and etcdctl compaction do: a watch that starts
// from an older revision then fails with ErrCompacted. physical waits
// until the backend has removed the old revisions (etcdctl compaction
// --physical), so the call returns once the compaction is done on the
// member that served it. It goes through cli, a client of the cluster
// (the caller's, so that a loop of compactions does not dial each time),
// and returns the revision compacted to.
func Compact(ctx context.Context, cli *clientv3.Client, physical bool) (int64, error) {
	resp, err := cli.Get(ctx, "/lockbench/", clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("compact: read the revision: %w", err)
	}
	rev := resp.Header.Revision
	var opts []clientv3.CompactOption
	if physical {
		opts = append(opts, clientv3.WithCompactPhysical())
	}
	// ErrCompacted: nothing was written since the last compaction, which
	// reached this revision already; the history is compacted to the head.
	if _, err := cli.Compact(ctx, rev, opts...); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return 0, fmt.Errorf("compact to revision %d: %w", rev, err)
	}
	return rev, nil
}

// Defragment defragments member i's backend (etcdctl defrag), which holds
// the backend's lock while it copies the database: the member serves no
// write and no read meanwhile. It returns the member's database size
// before and after.
func Defragment(ctx context.Context, c Members, i int) (before, after DBSize, err error) {
	cli, err := dialMember(c, i)
	if err != nil {
		return before, after, fmt.Errorf("defrag member %d: %w", i, err)
	}
	defer cli.Close()
	ep := c.Endpoints()[i]
	if before, err = dbSize(ctx, cli, ep); err != nil {
		return before, after, fmt.Errorf("defrag member %d: %w", i, err)
	}
	if _, err := cli.Defragment(ctx, ep); err != nil {
		return before, after, fmt.Errorf("defrag member %d: %w", i, err)
	}
	if after, err = dbSize(ctx, cli, ep); err != nil {
		return before, after, fmt.Errorf("defrag member %d: %w", i, err)
	}
	return before, after, nil
}

// DBSize is a member's backend size as its Status reports it.
type DBSize struct {
	// Total is the database file's size; InUse the part live data uses.
	Total, InUse int64
}

func dbSize(ctx context.Context, cli *clientv3.Client, ep string) (DBSize, error) {
	st, err := cli.Status(ctx, ep)
	if err != nil {
		return DBSize{}, fmt.Errorf("status: %w", err)
	}
	return DBSize{Total: st.DbSize, InUse: st.DbSizeInUse}, nil
}

// MoveLeader hands the leadership to member to (etcdctl move-leader): a
// planned leader change, as before a leader's maintenance, unlike a crash
// the old leader steps down at once and the new one campaigns without
// waiting for an election timeout. It returns once the transfer is done,
// and fails when member to leads already, no member leads, or the
// transfer did not complete within moveLeaderWait.
func MoveLeader(ctx context.Context, c Members, to int) error {
	from := c.Leader()
	switch {
	case from < 0:
		return fmt.Errorf("move leader to member %d: no member leads", to)
	case from == to:
		return fmt.Errorf("move leader to member %d: it leads already", to)
	case to < 0 || to >= c.Count():
		return fmt.Errorf("move leader to member %d: cluster has members 0..%d", to, c.Count()-1)
	}
	// A transfer raft gives up (after an election timeout) leaves the
	// server waiting for a leader that never comes, until the call's
	// context ends: bound it, so that the steps after it are not held up.
	ctx, cancel := context.WithTimeout(ctx, moveLeaderWait(c))
	defer cancel()
	// The request must go to the leader, and names the transferee by its
	// raft ID, which its own status reports.
	cli, err := dialMember(c, from)
	if err != nil {
		return fmt.Errorf("move leader to member %d: %w", to, err)
	}
	defer cli.Close()
	st, err := cli.Status(ctx, c.Endpoints()[to])
	if err != nil {
		return fmt.Errorf("move leader to member %d: its status: %w", to, err)
	}
	if _, err := cli.MoveLeader(ctx, st.Header.MemberId); err != nil {
		return fmt.Errorf("move leader from member %d to %d: %w", from, to, err)
	}
	return nil
}

// moveLeaderWait bounds one leader transfer: raft aborts a transfer that
// has not completed within an election timeout; the rest is slack for a
// loaded machine.
func moveLeaderWait(c Members) time.Duration { return 4*c.Election() + time.Second }
