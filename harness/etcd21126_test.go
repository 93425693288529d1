package harness

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
)

// etcd PR #21126 through the runner and the checker
// (examples/etcd-21126.yaml: no leader anywhere for 3 s while client 0
// holds). Whether each lock's holder is told its lease is lost, and
// whether the lock is granted again after that, says which strategies the
// client keeps renewing a dropped lease for: keepalive-requireleader's
// (its program context lives on) is, so no grant follows its loss and
// liveness fails; mutex-requireleader's Session ends its own context, so
// its lease lapses and the lock moves on; mutex requires no leader and
// loses nothing.
func TestScenarioEtcd21126(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	sc, err := scenarios.ParseFile("../examples/etcd-21126.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		lock          string
		lost, grantOn bool // a lease-lost; a grant after it
		liveness      verdict.Verdict
	}{
		{"keepalive-requireleader", true, false, verdict.Fail},
		{"mutex-requireleader", true, true, ""},
		{"mutex", false, true, verdict.Pass},
	} {
		t.Run(tc.lock, func(t *testing.T) {
			res, err := Run(context.Background(), RunSpec{Lock: tc.lock, Scenario: sc, Seed: 1, Out: t.TempDir(),
				Cluster: cluster.Options{UnsafeNoFsync: true, DataParent: t.TempDir()}})
			if err != nil {
				t.Fatal(err)
			}
			events, err := history.ReadFile(filepath.Join(res.Dir, rundir.HistoryFile))
			if err != nil {
				t.Fatal(err)
			}
			lost, grantOn := grantAfterLoss(events)
			if lost != tc.lost || (lost && grantOn != tc.grantOn) {
				t.Errorf("lease lost %v, a grant after it %v; want %v, %v (run folder %s)", lost, grantOn, tc.lost, tc.grantOn, res.Dir)
			}
			if v := res.Summary.Checks[verdict.Liveness].Verdict; tc.liveness != "" && v != tc.liveness {
				t.Errorf("liveness %s, want %s: %v (run folder %s)", v, tc.liveness, res.Summary.Violations, res.Dir)
			}
		})
	}
}

// grantAfterLoss says whether the history has a lease-lost, and whether
// an acquire was granted after the first one.
func grantAfterLoss(events []history.Event) (lost, grantOn bool) {
	for _, e := range events {
		switch {
		case e.F == history.FLeaseLost:
			lost = true
		case lost && e.F == history.FAcquire && e.Type == history.OK:
			grantOn = true
		}
	}
	return lost, grantOn
}
