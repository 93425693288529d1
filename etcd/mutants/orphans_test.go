package mutants

import (
	"context"
	"testing"

	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/suite"
	"github.com/lockbench/lockbench/verdict"
)

// TestOrphansCatchesLeakOnCancel runs cancel-waiters (seeds 1–2) on the
// mutant whose cancelled Lock leaves its queue key behind and on its
// control: the orphans check must fail the mutant in every seed, naming
// a key left after its Lock returned an error, and judge and pass the
// control.
func TestOrphansCatchesLeakOnCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs suite cells on an etcd cluster")
	}
	sc, err := scenarios.Lookup("cancel-waiters")
	if err != nil {
		t.Fatal(err)
	}
	res, err := suite.Run(context.Background(), suite.Spec{
		Locks: []string{"mut-leak-on-cancel", "mut-control-queue"}, Scenarios: []scenarios.Scenario{sc}, Seeds: 2, Out: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 4 {
		t.Fatalf("%d cells, want 4", len(res.Cells))
	}
	for _, cell := range res.Cells {
		s := cell.Summary
		r := s.Checks[verdict.Orphans]
		switch {
		case r.NotJudged:
			t.Errorf("%s seed %d: orphans not judged: %s", s.Lock, s.Seed, r.Note)
		case s.Lock == "mut-leak-on-cancel" && (r.Verdict != verdict.Fail || len(r.Violations) == 0):
			t.Errorf("mutant seed %d: orphans %s", s.Seed, r.Verdict)
		case s.Lock == "mut-control-queue" && r.Verdict != verdict.Pass:
			t.Errorf("control seed %d: orphans %s: %+v", s.Seed, r.Verdict, r.Violations)
		default:
			t.Logf("%s seed %d: orphans %s, %v judged, %v orphans", s.Lock, s.Seed, r.Verdict, r.Metrics["orphans_judged"], r.Metrics["orphans"])
		}
	}
}
