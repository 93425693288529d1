package chaos

import (
	"context"
	"time"
)

// The World is split by what faults need, so that each fault says which
// part it acts on and a reader (or a test fake) only deals with that part.

// Membership says where the cluster's members stand, so a target such as
// "leader" or "follower" can be resolved at the moment the fault strikes.
type Membership interface {
	// Members is the number of cluster members; 0 for an external cluster,
	// where member faults are refused.
	Members() int
	// Leader is the leading member's index, or -1.
	Leader() int
	// RunningMembers lists members that are up.
	RunningMembers() []int
}

// MemberFaults are the faults a member suffers: only the embedded cluster
// can do them, since they kill processes and cut peer links.
type MemberFaults interface {
	// CrashMember kills the member without a leadership hand-over.
	CrashMember(i int) error
	// RestartMember brings a crashed member back on its data.
	RestartMember(ctx context.Context, i int) error
	// PartitionMember cuts the member from its peers both ways.
	PartitionMember(i int) error
	// HealMember restores the member's peer links.
	HealMember(i int) error
}

// MemberProcesses are faults only a member that is its own process can
// suffer: the embedded cluster refuses them (cluster.Refuses).
type MemberProcesses interface {
	// PauseMember freezes the member (SIGSTOP): a long GC pause.
	PauseMember(i int) error
	// ResumeMember thaws it (SIGCONT).
	ResumeMember(i int) error
}

// Queue says where the run's clients stand in the lock's queue, so a
// target such as "holder" or "waiter:K" names whoever is there now.
type Queue interface {
	// Clients is the number of client processes.
	Clients() int
	// Holder is the client holding the lock, or -1.
	Holder() int
	// Waiters lists waiting clients in queue order (oldest request first).
	Waiters() []int
}

// ClientProcesses are faults of a client's process, as the OS would do
// them: kill it, bring it back, freeze it.
type ClientProcesses interface {
	// CrashClient kills the process without revoking its lease.
	CrashClient(i int) error
	// RestartClient brings a crashed process back as the same client.
	RestartClient(ctx context.Context, i int) error
	// PauseClient freezes the process and everything it sends.
	PauseClient(i int) error
	// ResumeClient thaws a paused process.
	ResumeClient(i int) error
}

// ClientNetwork are faults of a client's network; its process runs on.
type ClientNetwork interface {
	// IsolateClient cuts (cut) or restores the client's network.
	IsolateClient(i int, cut bool) error
	// DelayClient adds d of latency each way; 0 removes it.
	DelayClient(i int, d time.Duration) error
	// DelayAnswers adds d of latency to what the members send the client
	// (their answers and watch events) only: its requests arrive on time,
	// so a write commits while its answer is still on the way. 0 removes
	// it.
	DelayAnswers(i int, d time.Duration) error
}

// LockService are faults that come from outside the client, through etcd:
// an operator or a burst of timeouts.
type LockService interface {
	// RevokeLease revokes the lease of the client's grant, or, while it
	// waits, of its last grant (strategies reuse a lease while it lives).
	RevokeLease(ctx context.Context, i int) error
	// CancelWaiting cancels the pending Lock call of every waiting client
	// at once (each then carries on with its workload) and says how many
	// it cancelled.
	CancelWaiting() int
}

// Store are faults an operator does to the store through etcd's own API
// (etcdctl compaction, defrag, move-leader): the members stay up, the
// store's history, files or leadership change under the run.
type Store interface {
	// Compact compacts the history to the current revision; physical
	// waits until the backend has removed the old revisions.
	Compact(ctx context.Context, physical bool) error
	// Defragment defragments member i's backend.
	Defragment(ctx context.Context, i int) error
	// MoveLeader hands the leadership to member i.
	MoveLeader(ctx context.Context, i int) error
}

// Replication is a fault of a deployment whose primary replicates to
// replicas asynchronously (Redis): etcd's members refuse it.
type Replication interface {
	// CutReplication cuts (cut) or heals every replica's link to the
	// primary.
	CutReplication(cut bool) error
}

// Positions is what Resolve reads to turn a target into a member or client.
type Positions interface {
	Membership
	Queue
}

// World is everything faults act on: the cluster's members and the run's
// clients. The runner implements it; each fault uses one part.
type World interface {
	Positions
	MemberFaults
	MemberProcesses
	ClientProcesses
	ClientNetwork
	LockService
	Store
	Peers
	Replication
	Clocks
	AcquireReplies
}
