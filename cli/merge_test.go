package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
)

// mergeData is a literal shard folder under testdata/merge: a 2 × 2
// matrix (queue, mutex × contention, holder-crash) split in two shards,
// and copies of shard 2 from another build, another matrix, a split into
// three and one that claims a key of shard 1.
func mergeData(name string) string { return filepath.Join("testdata", "merge", name) }

// TestMergeJoinsShards: two shards merge into the unsharded suite's
// cells in its order, each shard's folder recorded relative to the
// merged one, the wall times reported.
func TestMergeJoinsShards(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, "merge", "--out", out, "--junit", filepath.Join(out, "junit.xml"), mergeData("shard2of2"), mergeData("shard1of2")+"/suite.json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if !strings.Contains(stdout, "2 of 2 shards, wall time 12s longest shard, 24s summed") {
		t.Errorf("stdout %q: want the wall times", stdout)
	}
	merged := mergedSuite(t, out)
	whole, err := report.ReadSuiteFile(filepath.Join(mergeData("whole"), rundir.SuiteFile))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cellKeys(merged.Cells), cellKeys(whole.Cells); !slices.Equal(got, want) {
		t.Errorf("merged cells %v, want the unsharded suite's %v", got, want)
	}
	if len(merged.Shards) != 2 || merged.Shards[0].Index != 1 || merged.Shards[0].Dir == "" || filepath.IsAbs(merged.Shards[0].Dir) {
		t.Errorf("shards %+v: want 1 and 2, each with a relative folder", merged.Shards)
	}
	if merged.Error != "" || len(merged.NotRun) > 0 || merged.Shard != nil {
		t.Errorf("error %q, not run %v, shard %v: want a complete merged suite", merged.Error, merged.NotRun, merged.Shard)
	}
	if _, err := os.Stat(filepath.Join(out, "junit.xml")); err != nil {
		t.Error(err)
	}
	if code, stdout, _ := runCLI(t, "compare", filepath.Join(mergeData("whole"), rundir.SuiteFile), mergedPath(t, out)); code != 0 {
		t.Errorf("compare whole merged: exit %d, want 0:\n%s", code, stdout)
	}
}

// TestMergeRefuses: shards of different builds, matrices or shard counts,
// a shard twice, or a folder that is no shard exit 2 naming the folders,
// and nothing is written.
func TestMergeRefuses(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		wants []string
	}{
		{"build", []string{"shard1of2", "shard2of2-other-build"}, []string{"shard1of2", "shard2of2-other-build", "different lockbench builds"}},
		{"matrix", []string{"shard1of2", "shard2of2-other-matrix"}, []string{"shard2of2-other-matrix", "different matrices"}},
		{"count", []string{"shard1of2", "shard2of3"}, []string{"shard2of3", "different shard counts (2, 3)"}},
		{"twice", []string{"shard1of2", "shard2of2", "shard1of2"}, []string{"both shard 1/2"}},
		{"a key twice", []string{"shard1of2", "shard2of2-overlapping"}, []string{"shard1of2 and", "shard2of2-overlapping both ran mutex/contention"}},
		{"not a shard", []string{"whole", "shard1of2"}, []string{"whole is not a shard"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := []string{"merge", "--out", out}
			for _, a := range tt.args {
				args = append(args, mergeData(a))
			}
			code, _, stderr := runCLI(t, args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr %s", code, stderr)
			}
			for _, w := range tt.wants {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q: want %q", stderr, w)
				}
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s written (%v): want nothing", out, err)
			}
		})
	}
}

// TestMergeBoundsShardCounts: a shard count or index in suite.json out
// of bounds (2e9 shards once made a merge allocate 3 GB) exits 2 naming
// the file, before anything is sized by it.
func TestMergeBoundsShardCounts(t *testing.T) {
	for _, tc := range []struct {
		index, count int
		want         string
	}{
		{2, 2_000_000_000, "shard 2/2000000000: the count N must be 1..10000"},
		{2, -1, "shard 2/-1: the count N must be 1..10000"},
		{0, 2, "shard 0/2: the index I must be 1..2"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(mergeData("shard2of2"), rundir.SuiteFile))
			if err != nil {
				t.Fatal(err)
			}
			var suite map[string]any
			if err := json.Unmarshal(b, &suite); err != nil {
				t.Fatal(err)
			}
			shard := suite["shard"].(map[string]any)
			shard["index"], shard["count"] = tc.index, tc.count
			edited := filepath.Join(t.TempDir(), "edited")
			if err := os.Mkdir(edited, 0o755); err != nil {
				t.Fatal(err)
			}
			if b, err = json.Marshal(suite); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(edited, rundir.SuiteFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out")
			code, _, stderr := runCLI(t, "merge", "--out", out, mergeData("shard1of2"), edited)
			if code != 2 || !strings.Contains(stderr, filepath.Join(edited, rundir.SuiteFile)) || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q: want 2 naming the file and %q", code, stderr, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s written (%v): want nothing", out, err)
			}
		})
	}
}

// TestMergeMissingShard: a shard not given leaves the merged suite
// incomplete (its cells not run, the shard named), merge exits 1, and so
// does compare against the whole suite, naming the shard.
func TestMergeMissingShard(t *testing.T) {
	out := t.TempDir()
	code, _, stderr := runCLI(t, "merge", "--out", out, mergeData("shard1of2"))
	if code != 1 || !strings.Contains(stderr, "without shard 2/2") {
		t.Fatalf("exit %d, stderr %q: want 1 naming shard 2/2", code, stderr)
	}
	merged := mergedSuite(t, out)
	if want := []string{"queue/contention", "queue/holder-crash"}; !slices.Equal(merged.NotRun, want) {
		t.Errorf("not run %v, want shard 2's cells %v", merged.NotRun, want)
	}
	code, stdout, _ := runCLI(t, "compare", filepath.Join(mergeData("whole"), rundir.SuiteFile), mergedPath(t, out))
	if code != 1 || !strings.Contains(stdout, "without shard 2/2") || !strings.Contains(stdout, "queue/holder-crash") {
		t.Errorf("compare: exit %d, want 1 naming shard 2/2 and its cells:\n%s", code, stdout)
	}
}

// mergedPath is the suite.json of the one merged folder under out.
func mergedPath(t *testing.T, out string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(out, "suite-*-merged", rundir.SuiteFile))
	if err != nil || len(m) != 1 {
		t.Fatalf("merged suites under %s: %v (%v), want one", out, m, err)
	}
	return m[0]
}

func mergedSuite(t *testing.T, out string) report.Suite {
	t.Helper()
	s, err := report.ReadSuiteFile(mergedPath(t, out))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// cellKeys are the cells' keys with their seeds, in order.
func cellKeys(cells []report.Summary) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = c.Key() + "/" + c.RunID
	}
	return out
}

// workerData is one of four workers' run folders of one queue-naive ×
// waiter-crash run (seed 1, clocks skewed by 0, 50, 100 and 150 ms),
// saved from `lockbench run --worker I/4` processes on one cluster.
func workerData(i int) string { return filepath.Join("testdata", "workers", "w"+strconv.Itoa(i)) }

// TestMergeJoinsWorkers: the four workers' folders, in any order, merge
// into one run that fails exclusion as the single-process run does (exit
// 1), each worker's offset printed; without one worker the merge is bad
// input naming it, and writes nothing.
func TestMergeJoinsWorkers(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, "merge", "--out", out, workerData(3), workerData(1), workerData(4), workerData(2))
	if code != ExitViolation {
		t.Fatalf("exit %d, want %d (a violation); stderr %s", code, ExitViolation, stderr)
	}
	for _, want := range []string{"worker 1/4: clock offset +0.000 ms", "worker 4/4: clock offset -1", "clients 0, 4", "held by two processes at once"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout does not say %q:\n%s", want, stdout)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*-merged"))
	if len(dirs) != 1 {
		t.Fatalf("merged folders %v, want one", dirs)
	}
	f, err := rundir.Load(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if f.Config.Worker != nil || len(f.Config.MergedFrom) != 4 || f.Events[0].F != history.FClock {
		t.Errorf("merged config worker %v, merged_from %v, first event %+v", f.Config.Worker, f.Config.MergedFrom, f.Events[0])
	}

	empty := t.TempDir()
	code, _, stderr = runCLI(t, "merge", "--out", empty, workerData(1), workerData(2), workerData(4))
	if code != ExitUsage || !strings.Contains(stderr, "missing worker 3/4") {
		t.Errorf("without worker 3: exit %d, stderr %q; want %d naming it", code, stderr, ExitUsage)
	}
	if left, _ := os.ReadDir(empty); len(left) != 0 {
		t.Errorf("a refused merge wrote %v", left)
	}
}

// merge --json prints the merged suite.json on stdout, its text line on
// stderr.
func TestMergeJSON(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, "merge", "--json", "--out", out, mergeData("shard2of2"), mergeData("shard1of2"))
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	s, err := report.ParseSuite([]byte(stdout))
	if err != nil || len(s.Cells) != 4 || len(s.Shards) != 2 {
		t.Errorf("stdout is not the merged suite.json (%v): %.200s", err, stdout)
	}
	if !strings.Contains(stderr, "2 of 2 shards") {
		t.Errorf("stderr %q: want the suite folder line", stderr)
	}
}
