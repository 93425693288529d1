package chaos

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// planText writes a plan as text, byte for byte what a replay must match.
func planText(plan []PlannedStep) string {
	var b strings.Builder
	for _, p := range plan {
		fmt.Fprintf(&b, "%s %s %s %s %d\n", p.At, p.Fault.Name(), p.Target, p.For, p.Draw)
	}
	return b.String()
}

// TestNemesisPlanIsTheSeeds: the same seed gives a byte-identical plan,
// another seed another mix; strikes come every Every before the end, each
// one of the nemesis's faults; and a nemesis leaves the fixed steps'
// draws as they were.
func TestNemesisPlanIsTheSeeds(t *testing.T) {
	var n Nemesis
	for _, name := range []string{"crash-member", "move-leader", "compact", "crash-client"} {
		f, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		kind := TRandom
		if f.Targets() == NoTarget {
			kind = TNone
		}
		n.Faults = append(n.Faults, NemesisFault{Fault: f, Target: Target{Kind: kind}})
	}
	n.Every, n.For = time.Second, 500*time.Millisecond
	heal, _ := Lookup("heal")
	fixed := []Step{{At: 2500 * time.Millisecond, Fault: heal}}
	plan := func(seed int64) []PlannedStep {
		return Plan(append(append([]Step(nil), fixed...), n.Steps(seed, 20*time.Second)...), seed)
	}
	a, b, other := planText(plan(7)), planText(plan(7)), planText(plan(8))
	if a != b {
		t.Fatalf("seed 7 twice:\n%s\nvs\n%s", a, b)
	}
	if a == other {
		t.Error("seeds 7 and 8 drew the same plan")
	}
	steps := n.Steps(7, 20*time.Second)
	seen := map[string]bool{}
	for i, s := range steps {
		seen[s.Fault.Name()] = true
		if s.At != time.Duration(i+1)*time.Second || s.For != n.For {
			t.Errorf("step %d at %s for %s, want at %ds for %s", i, s.At, s.For, i+1, n.For)
		}
	}
	if len(steps) != 19 || len(seen) != len(n.Faults) {
		t.Errorf("%d steps drawing %d of %d faults; want 19 drawing each", len(steps), len(seen), len(n.Faults))
	}
	if plan(7)[2].Draw != Plan(fixed, 7)[0].Draw {
		t.Error("the nemesis changed the fixed step's draw")
	}
	if (*Nemesis)(nil).Steps(7, time.Minute) != nil {
		t.Error("no nemesis drew steps")
	}
}
