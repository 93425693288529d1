package mutants

import (
	"context"
	"testing"

	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/suite"
	"github.com/lockbench/lockbench/verdict"
)

// TestChecksCatchMissedReleasesAndJoins runs each of the three mutants
// of an unanswered request on the scenario written for its class, with
// its control, over seeds 1–2: the class's check must fail the mutant
// (in every seed, or in at least one where the bug needs a race that
// seeds 1–2 may both miss: want is then "some") and pass the control in
// every seed.
func TestChecksCatchMissedReleasesAndJoins(t *testing.T) {
	if testing.Short() {
		t.Skip("runs suite cells on an etcd cluster")
	}
	tests := []struct {
		scenario, mutant, control, check string
		every                            bool // the mutant fails in every seed, not only some
	}{
		// A release lost with a leader cut off, swallowed: its key stays.
		{"release-lost", "mut-swallow-unlock-error", "mut-control-try", verdict.Orphans, true},
		// A late join made again under a new key: the queue stands behind
		// the first.
		{"join-late", "mut-rejoin-on-timeout", "mut-control-queue", verdict.Liveness, true},
		// A release between a failed try and a watch from "now" is
		// missed: a race that five pairs run every round (1–4 stalls a
		// run in 5 of 5 seeds), still a race: one seed of two suffices.
		{"release-race", "mut-watch-from-now", "mut-control-try", verdict.Liveness, false},
	}
	for _, tc := range tests {
		t.Run(tc.mutant, func(t *testing.T) {
			sc, err := scenarios.Lookup(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			res, err := suite.Run(context.Background(), suite.Spec{
				Locks: []string{tc.mutant, tc.control}, Scenarios: []scenarios.Scenario{sc}, Seeds: 2, Out: t.TempDir(),
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Cells) != 4 {
				t.Fatalf("%d cells, want 4", len(res.Cells))
			}
			caught := 0
			for _, cell := range res.Cells {
				s := cell.Summary
				r := s.Checks[tc.check]
				t.Logf("%s seed %d: %s %s, metrics %v", s.Lock, s.Seed, tc.check, r.Verdict, r.Metrics)
				switch {
				case r.NotJudged:
					t.Errorf("%s seed %d: %s not judged: %s", s.Lock, s.Seed, tc.check, r.Note)
				case s.Lock == tc.control && (r.Verdict != verdict.Pass || !cell.Matches):
					t.Errorf("control seed %d: %s %s, as expected %v (%s)", s.Seed, tc.check, r.Verdict, cell.Matches, cell.Note)
				case s.Lock == tc.mutant && r.Verdict == verdict.Fail && len(r.Violations) > 0:
					caught++
				case s.Lock == tc.mutant && tc.every:
					t.Errorf("mutant seed %d: %s %s", s.Seed, tc.check, r.Verdict)
				}
			}
			if caught == 0 {
				t.Errorf("%s passed %s in both seeds of %s", tc.mutant, tc.check, tc.scenario)
			}
		})
	}
}
