package chaos

import (
	"math/rand/v2"
	"time"
)

// Nemesis is a random mix of faults over a run, as Jepsen's etcd test
// runs its nemeses: every Every, one of Faults, drawn from the seed,
// strikes its target and is undone For later. The same seed draws the
// same schedule, so a failing mix can be replayed.
type Nemesis struct {
	Faults []NemesisFault
	// Every is the time between two strikes, the first at Every; For how
	// long each lasts (less than Every, so that they do not overlap).
	Every, For time.Duration
}

// NemesisFault is one fault a nemesis may draw, with its target (a role
// or random, resolved when it strikes, as a step's).
type NemesisFault struct {
	Fault  Fault
	Target Target
}

// Steps draws the nemesis's schedule for a run of the given length from
// seed: a step at every multiple of Every before the end. Its random
// stream is its own, so that adding a nemesis leaves a scenario's fixed
// steps' draws (Plan) as they were.
func (n *Nemesis) Steps(seed int64, length time.Duration) []Step {
	if n == nil || len(n.Faults) == 0 || n.Every <= 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6e656d65736973)) // "nemesis"
	var out []Step
	for at := n.Every; at < length; at += n.Every {
		f := n.Faults[rng.IntN(len(n.Faults))]
		out = append(out, Step{At: at, Fault: f.Fault, Target: f.Target, For: n.For})
	}
	return out
}
