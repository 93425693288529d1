package chaos

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// faults is every fault by name.
var faults = map[string]Fault{}

func init() {
	member := Needs{Members: true}
	proxy := Needs{ClientProxy: true}
	register(spec{"crash-member", MemberTarget, member, CostElection}, crashMember)
	register(spec{"restart-member", MemberTarget, member, CostElection}, restartMember)
	peers := Needs{Members: true, PeerNetwork: true}
	register(spec{"partition-member", MemberTarget, peers, CostElection}, partitionMember)
	register(spec{"heal", NoTarget, peers, CostElection}, heal)
	register(spec{"pause-member", MemberTarget, Needs{Members: true, MemberProcesses: true}, CostElection}, pauseMember)
	register(spec{"crash-client", ClientTarget, proxy, CostLease}, crashClient)
	register(spec{"pause-client", ClientTarget, proxy, CostLease}, pauseClient)
	register(spec{"isolate-client", ClientTarget, proxy, CostLease}, isolateClient)
	register(spec{"delay-client", ClientTarget, Needs{ClientProxy: true, Arg: ArgDelay}, CostSlowdown}, delayClient)
	register(spec{"delay-answers", ClientTarget, Needs{ClientProxy: true, Arg: ArgDelay}, CostSlowdown}, delayAnswers)
	register(spec{"cancel-waiters", NoTarget, Needs{}, CostCancelledWaits}, cancelWaiters)
	register(spec{"revoke-lease", ClientTarget, Needs{OperatorAPI: true}, CostRevoke}, revokeLease)
	// A member fault of a replicated deployment: the failover it sets up
	// is the cost.
	register(spec{"cut-replication", NoTarget, Needs{Members: true, AsyncReplication: true}, CostElection}, cutReplication)
}

// cutReplication cuts every replica's link to the primary: what the
// primary acknowledges meanwhile reaches no replica, so a failover loses
// it (Redis's asynchronous replication). Undo heals the links.
func cutReplication(_ context.Context, w Replication, _ int, _ time.Duration) (Undo, error) {
	if err := w.CutReplication(true); err != nil {
		return nil, err
	}
	return func(context.Context) error { return w.CutReplication(false) }, nil
}

// spec is what a fault says of itself; every property a scenario, a
// cluster, the checker or the report asks of a fault is here, so nothing
// outside this package decides by a fault's name.
type spec struct {
	name    string
	targets TargetClass
	needs   Needs
	cost    Cost
}

// fault is a Fault that acts on the part W of the World: its inject
// function's parameter type is the declaration of what it uses.
type fault[W any] struct {
	spec
	inject func(ctx context.Context, w W, target int, arg time.Duration) (Undo, error)
}

func register[W any](s spec, inject func(context.Context, W, int, time.Duration) (Undo, error)) {
	faults[s.name] = fault[W]{spec: s, inject: inject}
}

func (f fault[W]) Name() string         { return f.name }
func (f fault[W]) Targets() TargetClass { return f.targets }
func (f fault[W]) Needs() Needs         { return f.needs }
func (f fault[W]) Cost() Cost           { return f.cost }

func (f fault[W]) Inject(ctx context.Context, w World, target int, arg time.Duration) (Undo, error) {
	// Every World has every part; only a nil World lacks W.
	part, ok := w.(W)
	if !ok {
		return nil, fmt.Errorf("%s: no world to act on", f.name)
	}
	return f.inject(ctx, part, target, arg)
}

// crashMember is a power cut: no leadership hand-over. Undo restarts it on
// its data.
func crashMember(_ context.Context, w MemberFaults, t int, _ time.Duration) (Undo, error) {
	if err := w.CrashMember(t); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return w.RestartMember(ctx, t) }, nil
}

func restartMember(ctx context.Context, w MemberFaults, t int, _ time.Duration) (Undo, error) {
	return nil, w.RestartMember(ctx, t)
}

// partitionMember cuts the member from its peers both ways; its clients
// stay connected to it.
func partitionMember(_ context.Context, w MemberFaults, t int, _ time.Duration) (Undo, error) {
	if err := w.PartitionMember(t); err != nil {
		return nil, err
	}
	return func(context.Context) error { return w.HealMember(t) }, nil
}

// pauseMember freezes a member process where it stands, like a leader in
// a long GC pause: its peers and clients see it stop answering, its
// connections stay open. Undo thaws it; it carries on, unaware.
func pauseMember(_ context.Context, w MemberProcesses, t int, _ time.Duration) (Undo, error) {
	if err := w.PauseMember(t); err != nil {
		return nil, err
	}
	return func(context.Context) error { return w.ResumeMember(t) }, nil
}

// heal restores every member's peer links.
func heal(_ context.Context, w interface {
	Membership
	MemberFaults
}, _ int, _ time.Duration) (Undo, error) {
	for i := 0; i < w.Members(); i++ {
		if err := w.HealMember(i); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// crashClient: gone without revoking its lease, its keys stay until the
// TTL ends. Undo restarts it as the same client.
func crashClient(_ context.Context, w ClientProcesses, t int, _ time.Duration) (Undo, error) {
	if err := w.CrashClient(t); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return w.RestartClient(ctx, t) }, nil
}

// pauseClient freezes the client where it stands, and no keepalive leaves
// it (a GC pause).
func pauseClient(_ context.Context, w ClientProcesses, t int, _ time.Duration) (Undo, error) {
	if err := w.PauseClient(t); err != nil {
		return nil, err
	}
	return func(context.Context) error { return w.ResumeClient(t) }, nil
}

// isolateClient cuts the client's network; its process runs on.
func isolateClient(_ context.Context, w ClientNetwork, t int, _ time.Duration) (Undo, error) {
	if err := w.IsolateClient(t, true); err != nil {
		return nil, err
	}
	return func(context.Context) error { return w.IsolateClient(t, false) }, nil
}

func delayClient(_ context.Context, w ClientNetwork, t int, d time.Duration) (Undo, error) {
	if d <= 0 {
		d = DefaultDelay
	}
	if err := w.DelayClient(t, d); err != nil {
		return nil, err
	}
	return func(context.Context) error { return w.DelayClient(t, 0) }, nil
}

// delayAnswers: the client's answers come late (a congested or far-away
// return path) while its requests do not: past its RPC deadline, every
// write it makes commits while the client sees a timeout.
func delayAnswers(_ context.Context, w ClientNetwork, t int, d time.Duration) (Undo, error) {
	if d <= 0 {
		d = DefaultDelay
	}
	if err := w.DelayAnswers(t, d); err != nil {
		return nil, err
	}
	return func(context.Context) error { return w.DelayAnswers(t, 0) }, nil
}

// cancelWaiters: every waiter gives up at once, as after a deploy or a
// burst of client timeouts: a burst of cancelled calls and watches.
func cancelWaiters(_ context.Context, w LockService, _ int, _ time.Duration) (Undo, error) {
	if w.CancelWaiting() == 0 {
		return nil, errors.New("no client was waiting")
	}
	return nil, nil
}

// revokeLease: an operator revokes the client's lease (etcdctl lease
// revoke).
func revokeLease(ctx context.Context, w LockService, t int, _ time.Duration) (Undo, error) {
	return nil, w.RevokeLease(ctx, t)
}

// DefaultDelay is the latency delay-client adds each way, and
// delay-answers to the answers, when the step gives none.
const DefaultDelay = 200 * time.Millisecond

// Names lists the faults.
func Names() []string {
	out := make([]string, 0, len(faults))
	for n := range faults {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup finds a fault; the error lists the valid ones.
func Lookup(name string) (Fault, error) {
	f, ok := faults[name]
	if !ok {
		return nil, fmt.Errorf("unknown fault %q: valid faults are %s", name, strings.Join(Names(), ", "))
	}
	return f, nil
}

// Taking lists the faults whose steps take the argument arg (see
// Needs.Arg), for error messages.
func Taking(arg string) []string {
	var out []string
	for _, n := range Names() {
		if faults[n].Needs().Arg == arg {
			out = append(out, n)
		}
	}
	return out
}
