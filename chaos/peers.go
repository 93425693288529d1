package chaos

import (
	"context"
	"time"
)

// The peer faults: what etcd's robustness suite does to one member's peer
// network and to the membership (tests/robustness/failpoint in etcd-io/
// etcd: DelayPeerNetwork, DropPeerNetwork, MemberReplace,
// BlackholeUntilSnapshot). They all cost a correct lock what a member
// fault costs: an election, when the target leads, or a leader that
// answers late.
func init() {
	relays := Needs{Members: true, PeerRelays: true}
	register(spec{"replace-member", MemberTarget, Needs{Members: true, OperatorAPI: true}, CostElection}, replaceMember)
	register(spec{"delay-peers", MemberTarget, Needs{Members: true, PeerRelays: true, Arg: ArgDelay}, CostElection}, delayPeers)
	register(spec{"drop-peers", MemberTarget, relays, CostElection}, dropPeers)
	register(spec{"snapshot-catchup", MemberTarget, Needs{Members: true, SnapshotCount: true}, CostElection}, snapshotCatchUp)
}

// Peers are the faults of the members' peer network and membership.
type Peers interface {
	// ShapePeers holds each chunk of member i's peer traffic (both ways,
	// every peer) for delay plus up to jitter, and loses the share drop
	// of them, each loss resetting its connection; all zero ends it.
	ShapePeers(i int, delay, jitter time.Duration, drop float64) error
	// ReplaceMember removes member i and adds a fresh one with empty
	// data in its place.
	ReplaceMember(ctx context.Context, i int) error
	// CatchUpBySnapshot cuts follower i from its peers until the
	// leader's log has passed it by more than the snapshot threshold,
	// heals it, and returns once the leader's snapshot has caught it up.
	CatchUpBySnapshot(ctx context.Context, i int) error
}

// DefaultPeerDelay is what delay-peers holds each chunk of the member's
// peer traffic when the step gives no delay; each chunk waits up to half
// as long again (the jitter).
const DefaultPeerDelay = 100 * time.Millisecond

// DropShare is the share of the member's peer traffic drop-peers loses.
const DropShare = 0.5

// replaceMember: an operator replaces a member's dead disk: it is
// removed, and a fresh member with empty data and a new ID joins in its
// place and is sent the whole store.
func replaceMember(ctx context.Context, w Peers, t int, _ time.Duration) (Undo, error) {
	return nil, w.ReplaceMember(ctx, t)
}

// delayPeers: the member's peer links are slow and uneven (a congested
// or far-away host): each of its raft messages is late by the delay and
// up to half of it again. Undo ends it.
func delayPeers(_ context.Context, w Peers, t int, d time.Duration) (Undo, error) {
	if d <= 0 {
		d = DefaultPeerDelay
	}
	if err := w.ShapePeers(t, d, d/2, 0); err != nil {
		return nil, err
	}
	return func(context.Context) error { return w.ShapePeers(t, 0, 0, 0) }, nil
}

// dropPeers: the member's peer links lose half of what they carry (a
// flapping link): raft messages are lost and sent again, connections
// dialled again. Undo ends it.
func dropPeers(_ context.Context, w Peers, t int, _ time.Duration) (Undo, error) {
	if err := w.ShapePeers(t, 0, 0, DropShare); err != nil {
		return nil, err
	}
	return func(context.Context) error { return w.ShapePeers(t, 0, 0, 0) }, nil
}

// snapshotCatchUp: a follower is cut off long enough that the leader
// has compacted the log it lacks, so that once healed it must be sent a
// snapshot: the store is replaced under it while clients may be watching
// through it.
func snapshotCatchUp(ctx context.Context, w Peers, t int, _ time.Duration) (Undo, error) {
	return nil, w.CatchUpBySnapshot(ctx, t)
}
