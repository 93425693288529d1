package suite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
)

// TestSuite runs a 2 × 1 × 2 matrix (strategies × scenario × keepalive
// policies) end to end: every cell judged against its scenario and naming
// its policy, suite.json written, and the rpc cells' lock service found
// sound (no cluster replaced).
func TestSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	sc, err := scenarios.Lookup("contention")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var seen []string
	res, err := Run(ctx, Spec{Locks: []string{"queue", "rpc"}, Scenarios: []scenarios.Scenario{sc}, Seeds: 1,
		KeepAlives: []etcdlocks.KeepAlive{etcdlocks.KeepAliveAuto, etcdlocks.KeepAliveSafe},
		// 1 s cells: 300 ms ones failed progress under -race at load ~10.
		Out: t.TempDir(), QuickDuration: time.Second,
		Progress: func(done, total int, cell string) { seen = append(seen, cell) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 4 || len(seen) != 4 || seen[3] != "rpc × contention (keepalive safe) seed 1" {
		t.Fatalf("cells %d, progress %q", len(res.Cells), seen)
	}
	for i, c := range res.Cells {
		if want := []string{"auto", "safe"}[i%2]; c.Summary.KeepAlive != want {
			t.Errorf("cell %d: keepalive %q, want %q", i, c.Summary.KeepAlive, want)
		}
		if !c.Matches || c.Summary.Acquisitions == 0 {
			t.Errorf("%s × %s (%s): matches %v, %d acquisitions, note %q, checks %v", c.Summary.Lock, c.Summary.Scenario, c.Summary.KeepAlive, c.Matches, c.Summary.Acquisitions, c.Note, c.Summary.Checks[verdict.Progress])
		}
	}
	if res.Mismatches != 0 || len(res.Notes) != 0 {
		t.Errorf("mismatches %d, notes %q", res.Mismatches, res.Notes)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, rundir.SuiteFile)); err != nil {
		t.Error(err)
	}
}

// TestDefaultKeepAliveAgrees: report keys summaries by the default policy
// without importing package locks, so the two must name the same one.
func TestDefaultKeepAliveAgrees(t *testing.T) {
	if string(etcdlocks.DefaultKeepAlive) != report.DefaultKeepAlive {
		t.Fatalf("etcdlocks.DefaultKeepAlive %q, report.DefaultKeepAlive %q", etcdlocks.DefaultKeepAlive, report.DefaultKeepAlive)
	}
	if string(etcdlocks.KeepAliveOwn) != report.OwnKeepAlive {
		t.Fatalf("etcdlocks.KeepAliveOwn %q, report.OwnKeepAlive %q", etcdlocks.KeepAliveOwn, report.OwnKeepAlive)
	}
}

// TestSuitesStartedTogetherGetTheirOwnFolders: suites started in the same
// millisecond (shards launched together) must not share a folder, where
// the last to finish would overwrite the others' suite.json.
func TestSuitesStartedTogetherGetTheirOwnFolders(t *testing.T) {
	out := t.TempDir()
	seen := map[string]bool{}
	for range 50 {
		dir, err := makeSuiteDir(out, time.Now(), "")
		if err != nil {
			t.Fatal(err)
		}
		if seen[dir] {
			t.Fatalf("two suites were given %s", dir)
		}
		seen[dir] = true
	}
	if entries, _ := os.ReadDir(out); len(entries) != 50 {
		t.Errorf("%d folders, want 50", len(entries))
	}
}
