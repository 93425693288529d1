// Package chaos holds the faults a scenario can inject, as values behind
// one small interface, and the targets they act on. Each fault is recorded
// in the history with a start (invoke) and an end (ok, or info when it
// could not be undone), so the checker knows when a fault was active.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"
)

// World is what faults act on: the cluster's members and the run's
// clients. The runner implements it.
type World interface {
	// Members is the number of cluster members; 0 for an external cluster,
	// where member faults are refused.
	Members() int
	// Leader is the leading member's index, or -1.
	Leader() int
	// RunningMembers lists members that are up.
	RunningMembers() []int
	CrashMember(i int) error
	RestartMember(ctx context.Context, i int) error
	PartitionMember(i int) error
	HealMember(i int) error

	// Clients is the number of client processes.
	Clients() int
	// Holder is the client holding the lock, or -1.
	Holder() int
	// Waiters lists waiting clients in queue order (oldest request first).
	Waiters() []int
	CrashClient(i int) error
	RestartClient(ctx context.Context, i int) error
	PauseClient(i int) error
	ResumeClient(i int) error
	IsolateClient(i int, cut bool) error
	DelayClient(i int, d time.Duration) error
	RevokeLease(ctx context.Context, i int) error
	// CancelWaiting cancels the pending Lock call of every waiting client
	// at once (each then carries on with its workload) and says how many
	// it cancelled.
	CancelWaiting() int
}

// Fault is one kind of fault. Inject applies it to a resolved target and
// returns how to undo it (nil when there is nothing to undo).
type Fault interface {
	Name() string
	// Targets says which target kinds the fault accepts.
	Targets() TargetClass
	Inject(ctx context.Context, w World, target int, arg time.Duration) (undo func(context.Context) error, err error)
}

// TargetClass says whether a fault acts on members, clients or nothing.
type TargetClass int

// Target classes.
const (
	NoTarget TargetClass = iota
	MemberTarget
	ClientTarget
)

type fault struct {
	name    string
	targets TargetClass
	inject  func(ctx context.Context, w World, t int, arg time.Duration) (func(context.Context) error, error)
}

func (f fault) Name() string         { return f.name }
func (f fault) Targets() TargetClass { return f.targets }
func (f fault) Inject(ctx context.Context, w World, t int, arg time.Duration) (func(context.Context) error, error) {
	return f.inject(ctx, w, t, arg)
}

// faults is every fault by name.
var faults = map[string]Fault{}

func register(f fault) { faults[f.name] = f }

func init() {
	register(fault{"crash-member", MemberTarget, func(ctx context.Context, w World, t int, _ time.Duration) (func(context.Context) error, error) {
		// A power cut: no leadership hand-over. Undo restarts it on its data.
		if err := w.CrashMember(t); err != nil {
			return nil, err
		}
		return func(ctx context.Context) error { return w.RestartMember(ctx, t) }, nil
	}})
	register(fault{"restart-member", MemberTarget, func(ctx context.Context, w World, t int, _ time.Duration) (func(context.Context) error, error) {
		return nil, w.RestartMember(ctx, t)
	}})
	register(fault{"partition-member", MemberTarget, func(ctx context.Context, w World, t int, _ time.Duration) (func(context.Context) error, error) {
		// Cut from its peers both ways; its clients stay connected to it.
		if err := w.PartitionMember(t); err != nil {
			return nil, err
		}
		return func(context.Context) error { return w.HealMember(t) }, nil
	}})
	register(fault{"heal", NoTarget, func(ctx context.Context, w World, _ int, _ time.Duration) (func(context.Context) error, error) {
		for i := 0; i < w.Members(); i++ {
			if err := w.HealMember(i); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}})
	register(fault{"crash-client", ClientTarget, func(ctx context.Context, w World, t int, _ time.Duration) (func(context.Context) error, error) {
		// Gone without revoking its lease: its keys stay until the TTL ends.
		if err := w.CrashClient(t); err != nil {
			return nil, err
		}
		return func(ctx context.Context) error { return w.RestartClient(ctx, t) }, nil
	}})
	register(fault{"pause-client", ClientTarget, func(ctx context.Context, w World, t int, _ time.Duration) (func(context.Context) error, error) {
		// Frozen where it stands, and no keepalive leaves it (a GC pause).
		if err := w.PauseClient(t); err != nil {
			return nil, err
		}
		return func(context.Context) error { return w.ResumeClient(t) }, nil
	}})
	register(fault{"isolate-client", ClientTarget, func(ctx context.Context, w World, t int, _ time.Duration) (func(context.Context) error, error) {
		// Its network is cut; its process runs on.
		if err := w.IsolateClient(t, true); err != nil {
			return nil, err
		}
		return func(context.Context) error { return w.IsolateClient(t, false) }, nil
	}})
	register(fault{"delay-client", ClientTarget, func(ctx context.Context, w World, t int, d time.Duration) (func(context.Context) error, error) {
		if d <= 0 {
			d = DefaultDelay
		}
		if err := w.DelayClient(t, d); err != nil {
			return nil, err
		}
		return func(context.Context) error { return w.DelayClient(t, 0) }, nil
	}})
	register(fault{"cancel-waiters", NoTarget, func(ctx context.Context, w World, _ int, _ time.Duration) (func(context.Context) error, error) {
		// Every waiter gives up at once, as after a deploy or a burst of
		// client timeouts: a burst of cancelled calls and watches.
		if w.CancelWaiting() == 0 {
			return nil, errors.New("no client was waiting")
		}
		return nil, nil
	}})
	register(fault{"revoke-lease", ClientTarget, func(ctx context.Context, w World, t int, _ time.Duration) (func(context.Context) error, error) {
		// An operator revokes the client's lease (etcdctl lease revoke).
		return nil, w.RevokeLease(ctx, t)
	}})
}

// DefaultDelay is the latency delay-client adds each way when the step
// gives none.
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

// Target is a parsed target: a kind and, for member:N, client:N and
// waiter:K, a number.
type Target struct {
	Kind string
	N    int
}

// Target kinds.
const (
	TLeader   = "leader"
	TFollower = "follower"
	TMember   = "member"
	THolder   = "holder"
	TWaiter   = "waiter"
	TClient   = "client"
	TRandom   = "random"
	TNone     = ""
)

// ValidTargets documents the target syntax for error messages.
const ValidTargets = "leader, follower, member:N (members); holder, waiter:K, client:N (clients); random"

func (t Target) String() string {
	switch t.Kind {
	case TMember, TClient, TWaiter:
		return t.Kind + ":" + strconv.Itoa(t.N)
	}
	return t.Kind
}

// ParseTarget parses a target and checks that it suits the fault.
func ParseTarget(s string, f Fault) (Target, error) {
	kind, num, hasNum := strings.Cut(s, ":")
	t := Target{Kind: kind}
	if hasNum {
		n, err := strconv.Atoi(num)
		if err != nil || n < 0 {
			return t, fmt.Errorf("target %q: %q is not a number ≥0; valid targets are %s", s, num, ValidTargets)
		}
		t.N = n
	}
	numbered := kind == TMember || kind == TClient || kind == TWaiter
	if numbered != hasNum {
		return t, fmt.Errorf("target %q: valid targets are %s", s, ValidTargets)
	}
	var class TargetClass
	switch kind {
	case TLeader, TFollower, TMember:
		class = MemberTarget
	case THolder, TWaiter, TClient:
		class = ClientTarget
	case TRandom:
		class = f.Targets()
	case TNone:
		class = NoTarget
	default:
		return t, fmt.Errorf("target %q: valid targets are %s", s, ValidTargets)
	}
	if class != f.Targets() {
		return t, fmt.Errorf("fault %s cannot target %q: it takes %s", f.Name(), s, f.Targets())
	}
	return t, nil
}

func (c TargetClass) String() string {
	switch c {
	case MemberTarget:
		return "a member (leader, follower, member:N, random)"
	case ClientTarget:
		return "a client (holder, waiter:K, client:N, random)"
	}
	return "no target"
}

// Resolve picks the concrete member or client a target names now. draw is
// the step's pre-drawn random number, so that the same seed picks the same
// member or client whenever the choice is among the same candidates.
func Resolve(t Target, class TargetClass, w World, draw uint64) (int, error) {
	pick := func(xs []int) (int, error) {
		if len(xs) == 0 {
			return -1, fmt.Errorf("no %s to target", t.Kind)
		}
		return xs[draw%uint64(len(xs))], nil
	}
	switch t.Kind {
	case TNone:
		return -1, nil
	case TLeader:
		if l := w.Leader(); l >= 0 {
			return l, nil
		}
		return -1, fmt.Errorf("no leader to target")
	case TFollower:
		var fs []int
		for _, m := range w.RunningMembers() {
			if m != w.Leader() {
				fs = append(fs, m)
			}
		}
		return pick(fs)
	case TMember:
		if t.N >= w.Members() {
			return -1, fmt.Errorf("member:%d: the cluster has members 0..%d", t.N, w.Members()-1)
		}
		return t.N, nil
	case THolder:
		if h := w.Holder(); h >= 0 {
			return h, nil
		}
		return -1, fmt.Errorf("no holder to target")
	case TWaiter:
		ws := w.Waiters()
		if t.N >= len(ws) {
			return -1, fmt.Errorf("waiter:%d: only %d waiters", t.N, len(ws))
		}
		return ws[t.N], nil
	case TClient:
		if t.N >= w.Clients() {
			return -1, fmt.Errorf("client:%d: the run has clients 0..%d", t.N, w.Clients()-1)
		}
		return t.N, nil
	case TRandom:
		n := w.Members()
		if class == ClientTarget {
			n = w.Clients()
		}
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return pick(all)
	}
	return -1, fmt.Errorf("target %q: valid targets are %s", t, ValidTargets)
}

// Step is one scheduled fault.
type Step struct {
	At     time.Duration
	Fault  Fault
	Target Target
	// For is how long the fault lasts before it is undone; 0 means it is
	// not undone (or is instantaneous).
	For time.Duration
	// Arg is the fault's parameter (delay-client's latency).
	Arg time.Duration
}

// PlannedStep is a step with its random draw fixed by the seed.
type PlannedStep struct {
	Step
	Draw uint64
}

// Plan fixes the schedule: steps in time order, each with a draw from the
// seed. The same steps and seed give the same plan.
func Plan(steps []Step, seed int64) []PlannedStep {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6c6f636b62656e63)) // "lockbenc"
	out := make([]PlannedStep, len(steps))
	for i, s := range steps {
		out[i] = PlannedStep{Step: s, Draw: rng.Uint64()}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].At < out[b].At })
	return out
}
