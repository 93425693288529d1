package suite

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/scenarios"
)

// TestBaselineCoversTheDefaultSuite: `make regress-baseline` compares the
// committed results/baseline.json with a run of the default suite (every
// strategy × every built-in scenario, locks.Names() × scenarios.Names()).
// A default cell missing from the baseline, a baseline cell the default
// suite no longer runs, or a scenario whose definition changed since makes
// that comparison INCOMPLETE, so the target fails whatever the code does.
// When a strategy or scenario is added, changed or removed, refresh the
// baseline with `make baseline` and commit it.
func TestBaselineCoversTheDefaultSuite(t *testing.T) {
	base, err := report.ReadSuiteFile(filepath.Join("..", "results", "baseline.json"))
	if err != nil {
		t.Fatal(err)
	}
	scs, err := scenarios.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Locks: locks.Names(), Scenarios: scs, Seeds: 1, QuickDuration: DefaultQuickDuration}
	bins := []suiteBin{{opts: cluster.Options{}}}
	want := map[string]bool{}
	for _, sc := range scs {
		if harness.Refused(bins[0].opts, sc) != nil {
			continue // the default suite skips it too
		}
		for _, k := range spec.cellKeys(sc.Name, bins) {
			want[k.Key()] = true
		}
	}
	have := map[string]bool{}
	for _, c := range base.Cells {
		have[c.Key()] = true
	}
	var missing, extra []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if !have[k] {
			missing = append(missing, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(have)) {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(extra) > 0 {
		t.Errorf("results/baseline.json does not cover the default suite (refresh it: make baseline):\n%d default cells missing from it: %v\n%d cells the default suite no longer runs: %v",
			len(missing), missing, len(extra), extra)
	}
	if base.ScenarioHashes == nil {
		t.Log("results/baseline.json has no scenario_hashes (an older suite.json): definitions not compared")
		return
	}
	for name, h := range spec.header(bins).ScenarioHashes {
		if b, ok := base.ScenarioHashes[name]; ok && b != h {
			t.Errorf("scenario %s changed since results/baseline.json was made (refresh it: make baseline)", name)
		}
	}
}
