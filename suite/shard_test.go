package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/scenarios"
)

func TestParseShard(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want ShardSpec
		ok   bool
	}{
		{"1/4", ShardSpec{1, 4}, true}, {"4/4", ShardSpec{4, 4}, true}, {"1/1", ShardSpec{1, 1}, true},
		{"0/4", ShardSpec{}, false}, {"5/4", ShardSpec{}, false}, {"1/0", ShardSpec{}, false},
		{"x", ShardSpec{}, false}, {"1/", ShardSpec{}, false}, {"/4", ShardSpec{}, false}, {"-1/4", ShardSpec{}, false}, {"1/4/2", ShardSpec{}, false},
	} {
		got, err := ParseShard(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// defaultUnits are the default suite's cells (every built-in strategy and
// scenario under the default policy) with their expected times.
func defaultUnits(t *testing.T) []ShardUnit {
	t.Helper()
	var scs []scenarios.Scenario
	for _, n := range scenarios.Names() {
		sc, err := scenarios.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		scs = append(scs, sc)
	}
	s := Spec{Locks: locks.Names(), Scenarios: scs, Seeds: 2, QuickDuration: DefaultQuickDuration}
	return s.shardUnits([]suiteBin{{}})
}

// TestAssignShardsCoversOnce: over shards 1..N every cell is in exactly
// one shard, each shard's keys in matrix order, for every N up to more
// shards than cells; and the assignment is the same whatever order the
// cells come in.
func TestAssignShardsCoversOnce(t *testing.T) {
	units := defaultUnits(t)
	order := map[string]int{}
	for i, u := range units {
		order[u.Key] = i
	}
	for n := 1; n <= len(units)+2; n++ {
		shards := AssignShards(units, n)
		seen := map[string]int{}
		for _, keys := range shards {
			for i, k := range keys {
				seen[k]++
				if i > 0 && order[keys[i-1]] > order[k] {
					t.Fatalf("n=%d: %s before %s, out of matrix order", n, keys[i-1], k)
				}
			}
		}
		for _, u := range units {
			if seen[u.Key] != 1 {
				t.Fatalf("n=%d: %s in %d shards, want 1", n, u.Key, seen[u.Key])
			}
		}
		reversed := slices.Clone(units)
		slices.Reverse(reversed)
		again := AssignShards(reversed, n)
		for i := range shards {
			a, b := slices.Clone(shards[i]), slices.Clone(again[i])
			slices.Sort(a)
			slices.Sort(b)
			if !slices.Equal(a, b) {
				t.Fatalf("n=%d shard %d: %v, from the cells reversed %v", n, i+1, a, b)
			}
		}
	}
}

// TestAssignShardsBalancesTime: shards are balanced by expected time, not
// count — no shard exceeds another by more than the longest cell — and a
// long cell gets a shard to itself where an even count would not.
func TestAssignShardsBalancesTime(t *testing.T) {
	units := defaultUnits(t)
	cost := map[string]time.Duration{}
	var longest time.Duration
	for _, u := range units {
		cost[u.Key] = u.Cost
		longest = max(longest, u.Cost)
	}
	for _, n := range []int{2, 3, 4, 8} {
		var loads []time.Duration
		for _, keys := range AssignShards(units, n) {
			var l time.Duration
			for _, k := range keys {
				l += cost[k]
			}
			loads = append(loads, l)
		}
		if spread := slices.Max(loads) - slices.Min(loads); spread > longest {
			t.Errorf("n=%d: loads %v spread %s, more than the longest cell %s", n, loads, spread, longest)
		}
	}
	skewed := []ShardUnit{{"a/long", 10 * time.Second}}
	for _, k := range []string{"b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		skewed = append(skewed, ShardUnit{k + "/short", time.Second})
	}
	got := AssignShards(skewed, 2)
	if !slices.Equal(got[0], []string{"a/long"}) || len(got[1]) != 9 {
		t.Errorf("shards %v: want the 10 s cell alone and the nine 1 s cells together", got)
	}
}

// TestShardedSuiteMerges runs a 2 × 2 matrix whole, then as shards 1/2
// and 2/2, and merges them: the merged cells are the whole suite's keys
// in its order, with the same verdicts, and each merged cell's run folder
// re-checks from the merged folder.
func TestShardedSuiteMerges(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd clusters")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	spec := tinyMatrix(t)
	whole, err := Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	var shards []ShardFolder
	for i := 1; i <= 2; i++ {
		s := spec
		s.Shard = ShardSpec{i, 2}
		res, err := Run(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Cells) == 0 || len(res.Cells) == len(whole.Cells) {
			t.Fatalf("shard %d/2 ran %d of %d cells", i, len(res.Cells), len(whole.Cells))
		}
		shards = append(shards, ShardFolder{Dir: res.Dir})
	}
	loaded, err := LoadShards([]string{shards[1].Dir, shards[0].Dir})
	if err != nil {
		t.Fatal(err)
	}
	dir, merged, err := WriteMerged(spec.Out, loaded)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cellIDs(merged.Cells), cellIDs(whole.Cells); !slices.Equal(got, want) {
		t.Fatalf("merged cells %v, want the whole suite's %v", got, want)
	}
	var fromShards []report.Cell
	for _, sf := range loaded {
		for _, sum := range sf.Suite.Cells {
			fromShards = append(fromShards, report.Cell{Summary: sum})
		}
	}
	for i, c := range merged.Cells {
		w := whole.Cells[i]
		// The merge judges exactly as the shard did.
		j := slices.IndexFunc(fromShards, func(x report.Cell) bool { return x.Summary.RunID == c.Summary.RunID })
		if j < 0 || fromShards[j].Summary.Verdict != c.Summary.Verdict {
			t.Errorf("%s: merged cell %s not its shard's", c.Summary.Key(), c.Summary.RunID)
		}
		// Two runs of one cell agree on a machine that kept up; a
		// saturated run is no evidence (docs/design.md §9).
		if c.Matches != w.Matches || c.Summary.Verdict != w.Summary.Verdict {
			msg := fmt.Sprintf("%s seed %d: merged %s (matches %v, %s), whole %s (matches %v, %s)", c.Summary.Key(), c.Summary.Seed, c.Summary.Verdict, c.Matches, c.Note, w.Summary.Verdict, w.Matches, w.Note)
			if c.Summary.Saturated() || w.Summary.Saturated() {
				t.Log("saturated: " + msg)
				continue
			}
			t.Error(msg)
		}
	}
	re, err := Recheck(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(re.Notes) > 0 || len(re.Cells) != len(whole.Cells) {
		t.Errorf("re-checked merged suite: %d cells, notes %q", len(re.Cells), re.Notes)
	}
}

// parallelMatrix is tinyMatrix two cells at a time, the workers' data
// under a folder of the test's, so that a test can see it removed.
func parallelMatrix(t *testing.T) Spec {
	spec := tinyMatrix(t)
	spec.Parallel = 2
	spec.Cluster.DataParent = t.TempDir()
	return spec
}

// TestParallelSuiteInOrder: two cells at a time give the serial order,
// and every worker's cluster is closed and its data removed.
func TestParallelSuiteInOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd clusters")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	spec := parallelMatrix(t)
	res, err := Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"queue/contention s1", "queue/contention s2", "mutex/contention s1", "mutex/contention s2",
		"queue/herd-hold s1", "queue/herd-hold s2", "mutex/herd-hold s1", "mutex/herd-hold s2"}
	if got := cellIDs(res.Cells); !slices.Equal(got, want) {
		t.Errorf("cells %v, want the serial order %v", got, want)
	}
	if res.Mismatches != 0 {
		t.Errorf("%d cells not as expected on a harness that kept up", res.Mismatches)
	}
	for _, c := range res.Cells {
		if !c.Matches {
			t.Logf("%s seed %d: %s", c.Summary.Key(), c.Summary.Seed, c.Note)
		}
	}
	if res.Header.Floor == nil {
		t.Error("no commit floor")
	}
	left, err := os.ReadDir(spec.Cluster.DataParent)
	if err != nil || len(left) > 0 {
		t.Errorf("data parent holds %v (%v): want every cluster's data removed", left, err)
	}
}

// tinyMatrix is 2 strategies × 2 short scenarios × 2 seeds, at the
// quick cap a suite runs them with.
func tinyMatrix(t *testing.T) Spec {
	t.Helper()
	var scs []scenarios.Scenario
	for _, n := range []string{"contention", "herd-hold"} {
		sc, err := scenarios.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		scs = append(scs, sc)
	}
	return Spec{Locks: []string{"queue", "mutex"}, Scenarios: scs, Seeds: 2, Out: t.TempDir()}
}

// cellIDs are the cells as key and seed, in order.
func cellIDs(cells []report.Cell) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = fmt.Sprintf("%s s%d", c.Summary.Key(), c.Summary.Seed)
	}
	return out
}

// TestParallelSuiteInterrupted: a suite of two workers cancelled as its
// third cell starts (as SIGINT does) writes suite.json with every key
// either in its cells or not run, and closes every worker's cluster.
func TestParallelSuiteInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd clusters")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	spec := parallelMatrix(t)
	spec.Progress = func(done, _ int, _ string) {
		if done == 2 {
			cancel()
		}
	}
	res, err := Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	h := res.Header
	if !res.Written || !h.Interrupted || len(h.NotRun) == 0 {
		t.Fatalf("written %v, interrupted %v, not run %v: want suite.json marking the suite interrupted", res.Written, h.Interrupted, h.NotRun)
	}
	ran := map[string]bool{}
	for _, c := range res.Cells {
		ran[c.Summary.Key()] = true
	}
	for _, k := range h.Matrix.Keys {
		if ran[k] == slices.Contains(h.NotRun, k) {
			t.Errorf("%s: in the cells %v, not run %v: want exactly one", k, ran[k], slices.Contains(h.NotRun, k))
		}
	}
	left, err := os.ReadDir(spec.Cluster.DataParent)
	if err != nil || len(left) > 0 {
		t.Errorf("data parent holds %v (%v): want every cluster's data removed", left, err)
	}
}

// TestShardHeader: a shard's suite.json records the whole matrix (the
// same id for every shard, another for another matrix) and its own keys,
// and an interrupted shard lists only its own keys as not run.
func TestShardHeader(t *testing.T) {
	bins := []suiteBin{{}}
	var ids []string
	var all []string
	for i := 1; i <= 2; i++ {
		s := metaSpec(t)
		s.Shard = ShardSpec{i, 2}
		h := s.header(bins)
		if h.Shard == nil || h.Shard.Index != i || h.Shard.Count != 2 || len(h.Shard.Keys) != 2 {
			t.Fatalf("shard %d: %+v, want 2 of the 4 keys", i, h.Shard)
		}
		ids = append(ids, h.Matrix.ID)
		all = append(all, h.Shard.Keys...)
		r := &Result{Header: h}
		r.markInterrupted(s, bins, map[string]bool{h.Shard.Keys[0]: true, h.Shard.Keys[1]: true})
		if !slices.Equal(r.Header.NotRun, h.Shard.Keys) {
			t.Errorf("shard %d: not run %v, want its own keys %v", i, r.Header.NotRun, h.Shard.Keys)
		}
	}
	slices.Sort(all)
	if ids[0] != ids[1] || !slices.Equal(all, []string{"queue/contention", "queue/holder-crash", "txn/contention", "txn/holder-crash"}) {
		t.Errorf("matrix ids %v, keys %v: want one id and every key once", ids, all)
	}
	other := metaSpec(t)
	other.Seeds = 2
	if other.header(bins).Matrix.ID == ids[0] {
		t.Error("two seeds and one seed: the same matrix id")
	}
}

// TestEmptyShard: a shard of a matrix with fewer keys than shards runs
// nothing (no cluster) and still writes a suite.json that reads back.
func TestEmptyShard(t *testing.T) {
	spec := tinyMatrix(t)
	spec.Shard = ShardSpec{5, 5}
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	s, err := report.ReadSuiteFile(filepath.Join(res.Dir, rundir.SuiteFile))
	if err != nil || len(s.Cells) != 0 || s.Shard == nil || len(s.Shard.Keys) != 0 {
		t.Fatalf("suite.json of an empty shard: %v, %+v", err, s.Shard)
	}
}
