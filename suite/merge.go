package suite

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/scenarios"
)

// ShardFolder is one shard's suite folder as lockbench merge read it.
type ShardFolder struct {
	Dir   string
	Suite report.Suite
}

// LoadShards reads the suite folders (or their suite.json files) of one
// sharded suite and checks they can be merged: each a shard (suite
// --shard), all of one lockbench build, one matrix and one shard count,
// no shard twice. Every refusal names the folders; nothing is written.
// The shards come back in shard order.
func LoadShards(paths []string) ([]ShardFolder, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("no suite folders: give the shards' folders (suite --shard I/N wrote them)")
	}
	var out []ShardFolder
	for _, p := range paths {
		dir := p
		if filepath.Base(p) == rundir.SuiteFile {
			dir = filepath.Dir(p)
		}
		s, err := report.ReadSuiteFile(filepath.Join(dir, rundir.SuiteFile))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if s.Shard == nil || s.Matrix == nil {
			return nil, fmt.Errorf("%s is not a shard's suite folder (its suite.json names no shard: suite --shard I/N writes shards)", dir)
		}
		if err := harness.CheckIndexOf(s.Shard.Index, s.Shard.Count); err != nil {
			return nil, fmt.Errorf("%s: shard %d/%d: %w", filepath.Join(dir, rundir.SuiteFile), s.Shard.Index, s.Shard.Count, err)
		}
		out = append(out, ShardFolder{Dir: dir, Suite: s})
	}
	first := out[0]
	for _, f := range out[1:] {
		a, b := first.Suite, f.Suite
		switch {
		case a.Lockbench != b.Lockbench:
			return nil, fmt.Errorf("%s and %s were run by different lockbench builds (%s, %s): merge shards of one build", first.Dir, f.Dir, a.Lockbench, b.Lockbench)
		case a.Matrix.ID != b.Matrix.ID:
			return nil, fmt.Errorf("%s and %s are shards of different matrices (%s, %s): merge shards of one suite command", first.Dir, f.Dir, a.Matrix.ID, b.Matrix.ID)
		case a.Shard.Count != b.Shard.Count:
			return nil, fmt.Errorf("%s and %s split the matrix into different shard counts (%d, %d)", first.Dir, f.Dir, a.Shard.Count, b.Shard.Count)
		}
	}
	slices.SortStableFunc(out, func(a, b ShardFolder) int { return a.Suite.Shard.Index - b.Suite.Shard.Index })
	for i := 1; i < len(out); i++ {
		if out[i].Suite.Shard.Index == out[i-1].Suite.Shard.Index {
			return nil, fmt.Errorf("%s and %s are both shard %d/%d: give each shard once", out[i-1].Dir, out[i].Dir, out[i].Suite.Shard.Index, out[i].Suite.Shard.Count)
		}
	}
	if err := checkShardKeys(out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkShardKeys refuses shards whose cells are not their own keys, or
// that claim a key another shard claims: a merge would count it twice.
func checkShardKeys(shards []ShardFolder) error {
	owner := map[string]string{}
	for _, f := range shards {
		for _, k := range f.Suite.Shard.Keys {
			if prev, ok := owner[k]; ok {
				return fmt.Errorf("%s and %s both ran %s: merge shards of one assignment", prev, f.Dir, k)
			}
			owner[k] = f.Dir
		}
		for _, c := range f.Suite.Cells {
			if owner[c.Key()] != f.Dir {
				return fmt.Errorf("%s holds a cell of %s, which is not among its shard's keys", f.Dir, c.Key())
			}
		}
	}
	return nil
}

// Merged is shards joined into one suite: suite.json's header and
// the cells judged against the expectations the shards recorded.
type Merged struct {
	Header report.Suite
	Cells  []report.Cell
	// Mismatches and Saturated count the cells as Result does.
	Mismatches, Saturated int
	// Missing are the shards not given (e.g. "3/4").
	Missing []string
	// LongestWall and SumWall are the shards' wall times: the merged
	// suite's on as many machines as shards, and on one.
	LongestWall, SumWall time.Duration
}

// MergeShards joins loaded shards (LoadShards) as the suite folder dir
// would hold them: the union of their cells in the unsharded suite's
// order, each judged as the suite judged it, linked to its run folder in
// its shard's folder (relative to dir). A shard not given makes the
// merge incomplete, as an interrupted suite is: its cells not run, Error
// naming it.
func MergeShards(dir string, shards []ShardFolder) (*Merged, error) {
	first := shards[0].Suite
	h := first
	h.Cells, h.Shard, h.NotRun, h.Interrupted, h.Error = nil, nil, nil, false, ""
	m := &Merged{}
	given := map[int]bool{}
	var errs []string
	for _, sf := range shards {
		s := sf.Suite
		rel, err := shardRel(dir, sf.Dir)
		if err != nil {
			return nil, err
		}
		given[s.Shard.Index] = true
		sh := *s.Shard
		sh.Dir = rel
		h.Shards = append(h.Shards, sh)
		h.Schema = min(h.Schema, s.Schema)
		h.Interrupted = h.Interrupted || s.Interrupted
		h.NotRun = append(h.NotRun, s.NotRun...)
		if s.Error != "" {
			errs = append(errs, fmt.Sprintf("shard %d/%d: %s", s.Shard.Index, s.Shard.Count, s.Error))
		}
		wall := time.Duration(s.Shard.WallS * float64(time.Second))
		m.LongestWall, m.SumWall = max(m.LongestWall, wall), m.SumWall+wall
		for _, sum := range s.Cells {
			m.add(h, sum, rel)
		}
	}
	var missingKeys []string
	for i := 1; i <= first.Shard.Count; i++ {
		if !given[i] {
			m.Missing = append(m.Missing, fmt.Sprintf("%d/%d", i, first.Shard.Count))
		}
	}
	if len(m.Missing) > 0 {
		missingKeys = notInShards(first.Matrix.Keys, h.Shards)
		h.NotRun = append(h.NotRun, missingKeys...)
		errs = append(errs, fmt.Sprintf("merged without shard %s (not given to lockbench merge)", strings.Join(m.Missing, ", ")))
	}
	h.Error = strings.Join(errs, "; ")
	slices.SortStableFunc(m.Cells, cellOrder(first.Matrix))
	h.NotRun = inOrder(first.Matrix.Keys, h.NotRun)
	m.Header = h
	return m, nil
}

// add judges one shard cell against the recorded expectations and adds it.
func (m *Merged) add(h report.Suite, sum report.Summary, rel string) {
	cell := harness.Judge(sum, h.Expected[sum.Key()])
	if sc, err := scenarios.Lookup(sum.Scenario); err == nil {
		cell.AnyReasons = harness.AnyReasons(sc, sum.Lock, sum.KeepAlive, cell.ExpectedChecks)
	}
	cell.Dir = filepath.Join(rel, sum.RunID)
	switch {
	case cell.Saturated():
		m.Saturated++
	case !cell.Matches:
		m.Mismatches++
	}
	m.Cells = append(m.Cells, cell)
}

// shardRel is a shard's folder relative to the merged folder dir.
func shardRel(dir, shard string) (string, error) {
	ad, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("merged folder %s: %w", dir, err)
	}
	as, err := filepath.Abs(shard)
	if err != nil {
		return "", fmt.Errorf("shard folder %s: %w", shard, err)
	}
	return filepath.Rel(ad, as)
}

// notInShards are the matrix keys no given shard runs.
func notInShards(keys []string, shards []report.Shard) []string {
	ran := map[string]bool{}
	for _, s := range shards {
		for _, k := range s.Keys {
			ran[k] = true
		}
	}
	var out []string
	for _, k := range keys {
		if !ran[k] {
			out = append(out, k)
		}
	}
	return out
}

// inOrder is keys sorted by their place in order (unknown keys last).
func inOrder(order, keys []string) []string {
	pos := func(k string) int {
		if i := slices.Index(order, k); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(keys, func(a, b string) int { return pos(a) - pos(b) })
	return keys
}

// Suite is the merged suite.json: the header with the cells.
func (m *Merged) Suite() report.Suite { return withCells(m.Header, m.Cells) }

// WriteMerged creates the merged suite's folder, OUT/suite-<time>-merged,
// and writes suite.json and report.html into it; a failed write leaves
// no folder.
func WriteMerged(out string, shards []ShardFolder) (dir string, m *Merged, err error) {
	dir = filepath.Join(out, "suite-"+time.Now().UTC().Format("20060102T150405.000Z")+"-merged")
	if m, err = MergeShards(dir, shards); err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("create merged suite folder: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.SuiteFile), m.Suite()); err != nil {
		return "", nil, err
	}
	if err := rundir.WriteFile(filepath.Join(dir, rundir.HTMLFile), func(w io.Writer) error { return report.WriteSuiteHTML(w, m.Header, m.Cells) }); err != nil {
		return "", nil, err
	}
	return dir, m, nil
}
