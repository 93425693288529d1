package etcd

import (
	"context"
	"time"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/etcd/cluster"
)

// Members is a cluster lockbench started, as the runner's members
// (backend.Members) with etcd's operator faults on them: defragment, move
// the leader (chaos.Store, beside the Admin's Compact), and the peer
// network and membership (chaos.Peers).
type Members struct{ cluster.Members }

// Defragment defragments member i's backend.
func (m Members) Defragment(ctx context.Context, i int) error {
	_, _, err := cluster.Defragment(ctx, m.Members, i)
	return err
}

// MoveLeader hands the leadership to member i.
func (m Members) MoveLeader(ctx context.Context, i int) error {
	return cluster.MoveLeader(ctx, m.Members, i)
}

// ShapePeers delays or drops member i's peer traffic.
func (m Members) ShapePeers(i int, delay, jitter time.Duration, drop float64) error {
	return m.Members.ShapePeers(i, cluster.PeerShape{Delay: delay, Jitter: jitter, Drop: drop})
}

// ReplaceMember replaces member i with a fresh one.
func (m Members) ReplaceMember(ctx context.Context, i int) error {
	return m.Replace(ctx, i)
}

// CatchUpBySnapshot makes member i catch up by a snapshot.
func (m Members) CatchUpBySnapshot(ctx context.Context, i int) error {
	_, err := cluster.CatchUpBySnapshot(ctx, m.Members, i)
	return err
}

// MembersOf is c as the runner's members, nil for none (an external
// cluster, which lockbench did not start).
func MembersOf(c cluster.Members) backend.Members {
	if c == nil {
		return nil
	}
	return Members{c}
}
