package scenarios

import (
	"fmt"
	"strings"

	"github.com/lockbench/lockbench/chaos"
)

// Nemesis is a scenario's random mix of faults (chaos.Nemesis): every
// Every, one of Faults, drawn from the seed, for For. Each entry of
// Faults is a fault's name, optionally followed by a space and a target
// role ("move-leader follower", "crash-client holder"); without one, a
// fault that takes a target gets random.
type Nemesis struct {
	Faults []string `json:"faults" yaml:"faults"`
	Every  Duration `json:"every" yaml:"every"`
	For    Duration `json:"for" yaml:"for"`
}

// nemesisKeys are the keys of a scenario's nemesis.
const nemesisKeys = "faults, every, for"

// parseNemesis checks the nemesis and parses its faults and targets; nil
// when the scenario has none.
func (s Scenario) parseNemesis() (*chaos.Nemesis, error) {
	n := s.Nemesis
	if n == nil {
		return nil, nil
	}
	w := s.where(0) + ": nemesis"
	switch {
	case len(n.Faults) == 0:
		return nil, fmt.Errorf("%s: faults: give at least one (valid faults are %s)", w, strings.Join(chaos.Names(), ", "))
	case n.Every <= 0:
		return nil, fmt.Errorf("%s: every %s: must be > 0", w, n.Every)
	case n.For <= 0 || n.For >= n.Every:
		return nil, fmt.Errorf("%s: for %s: must be > 0 and less than every (%s), so that one fault is undone before the next strikes", w, n.For, n.Every)
	}
	out := &chaos.Nemesis{Every: n.Every.D(), For: n.For.D()}
	for i, entry := range n.Faults {
		name, target, _ := strings.Cut(strings.TrimSpace(entry), " ")
		f, err := chaos.Lookup(name)
		if err != nil {
			return nil, fmt.Errorf("%s: fault %d: %w", w, i+1, err)
		}
		target = strings.TrimSpace(target)
		if target == "" && f.Targets() != chaos.NoTarget {
			target = chaos.TRandom
		}
		t, err := chaos.ParseTarget(target, f)
		if err != nil {
			return nil, fmt.Errorf("%s: fault %d: %w", w, i+1, err)
		}
		if t.Kind == chaos.TMember || t.Kind == chaos.TClient {
			return nil, fmt.Errorf("%s: fault %d: target %s: a nemesis strikes again and again; give a role (leader, follower, holder, waiter:K) or random", w, i+1, t)
		}
		if err := s.checkTarget(t, 0); err != nil {
			return nil, fmt.Errorf("%s: fault %d: %w", w, i+1, err)
		}
		out.Faults = append(out.Faults, chaos.NemesisFault{Fault: f, Target: t})
	}
	return out, nil
}

// Schedule is the run's fault steps for seed: the fixed steps (Faults), then
// the nemesis's, drawn from the seed (chaos.Nemesis.Steps). The runner
// plans them with the same seed (chaos.Plan).
func (s Scenario) Schedule(seed int64) []chaos.Step {
	steps := append([]chaos.Step(nil), s.Faults()...)
	return append(steps, s.parsedNemesis().Steps(seed, s.Duration.D())...)
}

// parsedNemesis is the nemesis as Validate parsed it; one never validated
// (see Faults) is parsed here, and invalid is then a programming error.
func (s Scenario) parsedNemesis() *chaos.Nemesis {
	if s.nemesis != nil || s.Nemesis == nil {
		return s.nemesis
	}
	nem, err := s.parseNemesis()
	if err != nil {
		panic(err)
	}
	return nem
}

// FaultKinds lists every fault the scenario may inject, its steps' and
// its nemesis's, once each: what a run must provide (Needs) and what a
// cluster must be able to do are asked of them.
func (s Scenario) FaultKinds() []chaos.Fault {
	var out []chaos.Fault
	seen := map[string]bool{}
	add := func(f chaos.Fault) {
		if !seen[f.Name()] {
			seen[f.Name()] = true
			out = append(out, f)
		}
	}
	for _, st := range s.Faults() {
		add(st.Fault)
	}
	if nem := s.parsedNemesis(); nem != nil {
		for _, nf := range nem.Faults {
			add(nf.Fault)
		}
	}
	return out
}
