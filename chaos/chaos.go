// Package chaos holds the faults a scenario can inject, as values behind
// one small interface (Fault), and the targets they act on. Faults act on
// a World, split into parts by what faults need (world.go); each fault
// declares the part it uses (faults.go), what it needs of a run (Needs)
// and what it may cost a correct lock (Cost): scenario validation, the
// cluster's refusals, the checker's excuse windows and the report ask the
// fault, and nothing outside this package decides by a fault's name. Each
// fault is recorded in the history with a start (invoke) and an end (ok,
// or info when it could not be undone), so the checker knows when a fault
// was active.
package chaos

import (
	"context"
	"time"
)

// Fault is one kind of fault. Inject applies it to a resolved target and
// returns how to undo it (nil when there is nothing to undo).
type Fault interface {
	// Name is the fault's name in a scenario's steps.
	Name() string
	// Targets says which target kinds the fault accepts.
	Targets() TargetClass
	// Needs says what a run must provide for the fault to act, so that a
	// scenario is refused before anything starts rather than half run.
	Needs() Needs
	// Cost says what the fault may cost a correct lock, which is how long
	// the checker excuses a lock that is not granted while it lasts.
	Cost() Cost
	// Inject applies the fault to target (-1 for NoTarget faults); arg is
	// the step's parameter (the latency of delay-client or delay-answers).
	Inject(ctx context.Context, w World, target int, arg time.Duration) (Undo, error)
}

// Undo ends a fault that lasts: the nemesis calls it after the step's
// `for`, or when the run ends.
type Undo = func(context.Context) error

// TargetClass says whether a fault acts on members, clients or nothing.
type TargetClass int

// Target classes: what ParseTarget accepts for a fault and what Resolve
// picks from.
const (
	NoTarget TargetClass = iota
	MemberTarget
	ClientTarget
)

// Needs is what a fault requires of the run it is injected into.
type Needs struct {
	// ClientProxy: each client must talk to etcd through its own fault
	// proxy, which cuts, delays or drops its traffic. A crash needs one
	// too: the crashed client's connections must drop before its code can
	// send another RPC (a cancelled Lock's cleanup would otherwise delete
	// its key, which a killed process never does).
	ClientProxy bool
	// Members: cluster members lockbench started and controls; an
	// external cluster refuses the fault.
	Members bool
	// MemberProcesses: members that are processes of their own (run with
	// --etcd-bin), since freezing one member of the embedded cluster would
	// freeze lockbench too.
	MemberProcesses bool
	// PeerRelays: the members' peer traffic must pass through relays
	// lockbench runs, which delay or drop it (member processes always
	// have them; the embedded cluster only when started with them).
	PeerRelays bool
	// SnapshotCount: the members must take snapshots at a low count
	// (cluster.Options.SnapshotCount), so that a follower can fall past
	// the leader's log within seconds.
	SnapshotCount bool
	// AsyncReplication: a deployment whose primary replicates to its
	// replicas asynchronously, through links lockbench can cut (Redis);
	// etcd commits only what a majority has, and refuses the fault.
	AsyncReplication bool
	// PeerNetwork: the members talk to each other over a network that
	// lockbench can cut (partition-member, heal): etcd's and ZooKeeper's
	// peers do; a Redis deployment's replication and Sentinel links are
	// not one such network, and it refuses the fault.
	PeerNetwork bool
	// OperatorAPI: an operator's call through the store's API — revoke a
	// client's lease, compact, defragment, hand the leadership over,
	// replace a member — which etcd has; a backend whose Admin offers
	// none of it (ZooKeeper, Redis) refuses the fault.
	OperatorAPI bool
	// Protocol: the client protocol the client's relays must read, frame
	// by frame, to act on one request (ProtocolZooKeeper:
	// lose-create-reply), "" for a fault that acts on bytes. Only a
	// backend whose clients speak it takes the fault.
	Protocol string
	// EmptyRestart: members that keep no data across a restart (Redis
	// without persistence), so that a member started again is empty
	// (restart-empty); etcd's and ZooKeeper's members restart on their
	// own data and refuse the fault.
	EmptyRestart bool
	// Clock: members whose wall clock lockbench can move without
	// touching the machine's (Redis's redis-server, started with a clock
	// of lockbench's in front of the C library's), and whose expiry of a
	// client's key reads that clock (clock-jump). etcd's leases and
	// ZooKeeper's sessions expire on a monotonic clock a jump does not
	// move, and they refuse the fault.
	Clock bool
	// Arg names the step field that sets the fault's parameter (ArgDelay),
	// "" when the fault takes none.
	Arg string
}

// The step fields a fault's parameter comes from (Needs.Arg).
const (
	// ArgDelay is the step field of a fault that takes a latency.
	ArgDelay = "delay"
	// ArgEvery is the step field of a fault that repeats while it lasts
	// (compact-loop): the time between two of its actions.
	ArgEvery = "every"
)

// Cost is what a fault may cost a correct lock: the checker's excuse for a
// lock that is not granted during and after it, and the report's reading
// of what it did.
type Cost int

// Costs of faults.
const (
	// CostUnknown is a fault this build does not know (a history from
	// another tool or a newer lockbench): judged by its target.
	CostUnknown Cost = iota
	// CostElection: a member fault; the cluster may need an election when
	// it strikes and again when it is undone.
	CostElection
	// CostLease: a client fault (crash, pause, isolation); the client's
	// lease must expire before the lock moves.
	CostLease
	// CostSlowdown: every step of the client is slower while it lasts.
	CostSlowdown
	// CostCancelledWaits: waits are cancelled; no lease is touched, so the
	// lock must move on at once, and a wait that ends while the fault is on
	// ended because of it.
	CostCancelledWaits
	// CostWatchRestart: a compaction; a watch from an older revision fails
	// (ErrCompacted) and must start again from a fresh read. No lease or
	// member is touched, so a correct lock must move on at once.
	CostWatchRestart
	// CostRevoke: the client's lease is revoked by an operator. Its keys
	// go at once and the lock may move on, while the client hears of it
	// only from its next keepalive answer: a holder revoked can hold
	// beside its successor for up to its keepalive policy's overrun,
	// which no lock can prevent. The checks weigh it as a client fault
	// (CostLease) and excuse that overlap from exclusion; the lease check
	// judges how long it lasted.
	CostRevoke
)

// handovers are the faults that move the leadership at once (a leader
// transfer): the members are never without a leader.
var handovers = map[string]bool{}

// HandsOver says whether the fault of that name moves the leadership at
// once, with no leaderless stretch in which leases could not run out (a
// leader transfer), unlike the other member faults (CostElection).
func HandsOver(name string) bool { return handovers[name] }

// CostOf is the cost of the fault of that name, CostUnknown for a name
// this build does not know: a history may come from another tool.
func CostOf(name string) Cost {
	if f, ok := faults[name]; ok {
		return f.Cost()
	}
	return CostUnknown
}
