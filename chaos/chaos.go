// Package chaos holds the faults a scenario can inject, as values behind
// one small interface (Fault), and the targets they act on. Faults act on
// a World, split into parts by what faults need (world.go); each fault
// declares the part it uses (faults.go). Each fault is recorded
// in the history with a start (invoke) and an end (ok, or info when it
// could not be undone), so the checker knows when a fault was active.
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
	// Inject applies the fault to target (-1 for NoTarget faults); arg is
	// the step's parameter (delay-client's latency).
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
