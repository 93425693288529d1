package chaos

import (
	"math/rand/v2"
	"sort"
	"time"
)

// Step is one scheduled fault, as a scenario describes it: the fault is
// looked up and the target parsed once, when the scenario is loaded.
type Step struct {
	// At is when the fault strikes, from the start of the run.
	At     time.Duration
	Fault  Fault
	Target Target
	// For is how long the fault lasts before it is undone; 0 means it is
	// not undone (or is instantaneous).
	For time.Duration
	// Arg is the fault's parameter (delay-client's or delay-answers'
	// latency).
	Arg time.Duration
	// On, when set (OnAcquire, OnRelease), times the fault to a call
	// instead of a clock: from At on, it strikes as a client invokes that
	// call, and the call waits until it is in place, so that the call's
	// own requests meet it (a release's delete lost with a leader, a
	// join's answer late). A fault that takes a client strikes at a call
	// of the client its target names at that moment; any other, at any
	// client's call.
	On string
}

// The calls a step can be timed to (Step.On).
const (
	OnAcquire = "acquire"
	OnRelease = "release"
)

// ValidOn documents Step.On's values for error messages.
const ValidOn = "acquire, release (the call whose invoke strikes the step)"

// PlannedStep is a step with its random draw fixed by the seed, so that a
// run can be replayed with the same targets.
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
