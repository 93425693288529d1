package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/suite"
)

// mergeCommand is `lockbench merge DIR…`: the shards of one sharded suite
// (suite --shard I/N, on one machine or many) joined into one suite
// folder, as the unsharded suite would have written it.
func mergeCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "merge", "merge SHARD_DIR... | WORKER_RUN_DIR... [--out DIR] [--junit FILE]")
	out := fs.String("out", harness.DefaultOut, "parent folder: merged shards are written to OUT/suite-<time>-merged/ (its cells' run folders stay in the shards' folders), merged workers to OUT/<run-id>-merged/")
	junit := fs.String("junit", "", "also write the merged suite as JUnit XML to this file, - for stdout (as suite's --junit)")
	var output outputFlags
	output.register(fs, "the merged suite.json (shards) or summary.json (workers)", false)
	pos, err := fs.parseInterspersed(args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return badInputf("want the shards' suite folders (or their suite.json files), got none")
	}
	if *junit != "" && *junit != "-" {
		if err := checkFile("junit", *junit); err != nil {
			return err
		}
	}
	if err := checkOutputs(*out, ""); err != nil {
		return err
	}
	workers, err := workerFolders(pos[0])
	if err != nil {
		return err
	}
	if workers {
		if *junit != "" {
			return badInputf("--junit is for merged shards (a suite); a merged run's verdict is its run folder's")
		}
		return mergeWorkers(e, pos, *out, output.json)
	}
	shards, err := suite.LoadShards(pos)
	if err != nil {
		return badInput(err)
	}
	return runMerge(ctx, e, shards, *out, *junit, output.json)
}

// runMerge writes the merged suite and prints it. A shard missing or one
// that stopped early exits 1: the merged suite is incomplete, as compare
// would find it.
func runMerge(_ context.Context, e *env, shards []suite.ShardFolder, out, junit string, asJSON bool) error {
	dir, m, err := suite.WriteMerged(out, shards)
	if err != nil {
		return err
	}
	if asJSON {
		if err := printFile(e, filepath.Join(dir, rundir.SuiteFile)); err != nil {
			return err
		}
	} else if len(m.Cells) > 0 {
		if err := report.SuiteTable(e.stdout, m.Cells); err != nil {
			return fmt.Errorf("print the suite's table: %w", err)
		}
	}
	n := shards[0].Suite.Shard.Count
	fmt.Fprintf(textOut(e, asJSON), "suite folder: %s (%d cells, %d not as expected%s; %d of %d shards, wall time %s longest shard, %s summed)\n",
		dir, len(m.Cells), m.Mismatches, saturatedCount(m.Saturated), len(shards), n,
		m.LongestWall.Round(time.Second), m.SumWall.Round(time.Second))
	if junit != "" {
		err := writeOutput(e, "junit", junit, func(w io.Writer) error {
			return report.WriteJUnit(w, filepath.Base(dir), dir, m.Cells, m.Header.NotRun)
		})
		if err != nil {
			return err
		}
	}
	if h := m.Header; h.Error != "" || h.Interrupted {
		fmt.Fprintf(e.stderr, "lockbench merge: incomplete: %s; not run: %s\n", strings.TrimPrefix(h.Error+interruptedNote(h.Interrupted), "; "), strings.Join(h.NotRun, ", "))
		return errViolation
	}
	return suiteOutcome(m.Mismatches, m.Saturated)
}

// textOut is where a command's text lines go: stdout, or stderr when
// stdout carries --json's record.
func textOut(e *env, asJSON bool) io.Writer {
	if asJSON {
		return e.stderr
	}
	return e.stdout
}

// interruptedNote is what the incomplete line adds for a shard a signal
// cut short.
func interruptedNote(interrupted bool) string {
	if interrupted {
		return "; a shard was interrupted"
	}
	return ""
}

// workerFolders reports whether merge was given run folders (the workers
// of one run, run --worker I/N) rather than suite folders, by the first
// (first): a folder with a config.json and no suite.json. A folder with
// neither is refused, saying what merge takes; a suite.json file or a
// missing path is left to LoadShards, which says which.
func workerFolders(first string) (bool, error) {
	if st, err := os.Stat(first); err != nil || !st.IsDir() {
		return false, nil
	}
	has := func(name string) bool { _, err := os.Stat(filepath.Join(first, name)); return err == nil }
	switch {
	case has(rundir.SuiteFile):
		return false, nil
	case has(rundir.ConfigFile):
		return true, nil
	}
	return false, badInputf("%s: neither a suite folder (no %s: suite --shard I/N writes one) nor a worker's run folder (no %s: run --worker I/N writes one)", first, rundir.SuiteFile, rundir.ConfigFile)
}

// mergeWorkers is `lockbench merge` of the workers' run folders: one run
// folder on worker 1's clock, each worker's offset printed with its
// uncertainty, and the run's outcome as run's.
func mergeWorkers(e *env, dirs []string, out string, asJSON bool) error {
	ws, err := harness.LoadWorkers(dirs)
	if err != nil {
		return badInput(err)
	}
	m, err := harness.WriteMergedRun(out, ws)
	if err != nil {
		return harnessErr(context.Background(), err, nil)
	}
	if asJSON {
		if err := printFile(e, filepath.Join(m.Result.Dir, rundir.SummaryFile)); err != nil {
			return err
		}
		return runOutcome(m.Summary, nil)
	}
	for _, c := range m.Clocks {
		fmt.Fprintf(e.stdout, "worker %s: clock offset %+.3f ms ± %.3f ms against worker 1's, clients %s\n",
			c.Worker, float64(c.OffsetNS)/1e6, float64(c.UncertaintyNS)/1e6, clientList(c.Processes))
	}
	rate := "" // a rate of a few events is the fixed cost's
	if m.Events >= 100_000 {
		rate = fmt.Sprintf(" (%.2f s per million events)", m.Merge.Seconds()/float64(m.Events)*1e6)
	}
	fmt.Fprintf(e.stdout, "merged %d events of %d workers in %s%s\n", m.Events, len(ws), m.Merge.Round(time.Millisecond), rate)
	if err := printRun(e, m.Result, 0, ""); err != nil {
		return err
	}
	return runOutcome(m.Summary, nil)
}

// clientList is a worker's clients, shortened past a few.
func clientList(ids []int) string {
	var parts []string
	for i, id := range ids {
		if i == 4 && len(ids) > 5 {
			parts = append(parts, fmt.Sprintf("… (%d in all)", len(ids)))
			break
		}
		parts = append(parts, strconv.Itoa(id))
	}
	return strings.Join(parts, ", ")
}
