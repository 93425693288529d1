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
}

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
