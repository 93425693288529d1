package suite

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/scenarios"
)

// Rechecked is a saved suite folder judged again: each cell's run
// re-checked with today's checker (harness.Recheck) against the expectations the
// suite recorded, as `lockbench report RUN_DIR` does for one run.
type Rechecked struct {
	Dir string
	// Header is suite.json as recorded, without its cells.
	Header report.Suite
	Cells  []report.Cell
	// Mismatches and Saturated count the cells as Result does.
	Mismatches, Saturated int
	// Notes say what differs from the recording: a verdict today's checker
	// changed, a cell whose run folder is gone (its recorded summary is
	// used).
	Notes []string
}

// Recheck loads the suite folder dir (its suite.json) and judges
// every cell again: its run folder (dir/RUN_ID) re-checked with today's
// checker, against the expectations suite.json recorded for its key, with
// the reasons its scenario (config.json) gives for the checks it does not
// harness.Judge. A cell whose run folder is missing keeps its recorded summary.
func Recheck(dir string) (*Rechecked, error) {
	s, err := report.ReadSuiteFile(filepath.Join(dir, rundir.SuiteFile))
	if err != nil {
		return nil, err
	}
	r := &Rechecked{Dir: dir, Header: s}
	r.Header.Cells = nil
	for _, saved := range s.Cells {
		sum, sc := saved, scenarios.Scenario{}
		folder, err := cellFolder(dir, s.Shards, saved)
		var rf *harness.Rechecked
		if err == nil {
			rf, err = recheckCell(folder, saved.RunID)
		}
		if err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: run folder not re-checked (%v): its recorded verdicts are shown", saved.RunID, err))
		} else {
			sum, sc = rf.Summary, harness.WithReasons(rf.Scenario)
			sum.SuiteFloor = saved.SuiteFloor
			if sum.Verdict != saved.Verdict {
				r.Notes = append(r.Notes, fmt.Sprintf("%s: verdict was %s when recorded, %s with today's checker", saved.RunID, saved.Verdict, sum.Verdict))
			}
		}
		cell := harness.Judge(sum, s.Expected[sum.Key()])
		cell.AnyReasons = harness.AnyReasons(sc, sum.Lock, sum.KeepAlive, cell.ExpectedChecks)
		if rf != nil {
			cell.Dir, _ = filepath.Rel(dir, filepath.Join(folder, saved.RunID))
		}
		switch {
		case cell.Saturated():
			r.Saturated++
		case !cell.Matches:
			r.Mismatches++
		}
		r.Cells = append(r.Cells, cell)
	}
	return r, nil
}

// cellFolder is the folder that holds a cell's run folder: the suite's
// own, or in a merged suite (lockbench merge) the folder of the shard that
// ran the cell's key, which suite.json gives relative to dir.
func cellFolder(dir string, shards []report.Shard, cell report.Summary) (string, error) {
	if len(shards) == 0 {
		return dir, nil
	}
	for _, sh := range shards {
		if slices.Contains(sh.Keys, cell.Key()) {
			if filepath.IsAbs(sh.Dir) {
				return "", fmt.Errorf("shard %d/%d's folder %q is not relative to the merged suite", sh.Index, sh.Count, sh.Dir)
			}
			return filepath.Join(dir, sh.Dir), nil
		}
	}
	return "", fmt.Errorf("no shard of the merged suite runs %s", cell.Key())
}

// recheckCell re-checks the run folder of a suite's cell, dir/runID: a
// run id is one folder's name, never a path.
func recheckCell(dir, runID string) (*harness.Rechecked, error) {
	if runID == "" || runID != filepath.Base(runID) || runID == ".." {
		return nil, fmt.Errorf("run id %q is not a folder name", runID)
	}
	return harness.Recheck(filepath.Join(dir, runID))
}

// Suite is the re-checked suite as a suite.json: the recorded header with
// today's cells.
func (r *Rechecked) Suite() report.Suite { return withCells(r.Header, r.Cells) }

// withCells is suite.json: header with the cells' summaries.
func withCells(header report.Suite, cells []report.Cell) report.Suite {
	header.Cells = make([]report.Summary, len(cells))
	for i, c := range cells {
		header.Cells[i] = c.Summary
	}
	return header
}

// WriteHTML writes the suite's matrix page to path.
func (r *Rechecked) WriteHTML(path string) error {
	return rundir.WriteFile(path, func(w io.Writer) error { return report.WriteSuiteHTML(w, r.Header, r.Cells) })
}
