package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/report"
)

// mergeCommand is `lockbench merge DIR…`: the shards of one sharded suite
// (suite --shard I/N, on one machine or many) joined into one suite
// folder, as the unsharded suite would have written it.
func mergeCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "merge", "merge SHARD_DIR... [--out DIR] [--junit FILE]")
	out := fs.String("out", harness.DefaultOut, "parent folder: the merged suite is written to OUT/suite-<time>-merged/ (its cells' run folders stay in the shards' folders)")
	junit := fs.String("junit", "", "also write the merged suite as JUnit XML to this file, - for stdout (as suite's --junit)")
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
	shards, err := harness.LoadShards(pos)
	if err != nil {
		return badInput(err)
	}
	return runMerge(ctx, e, shards, *out, *junit)
}

// runMerge writes the merged suite and prints it. A shard missing or one
// that stopped early exits 1: the merged suite is incomplete, as compare
// would find it.
func runMerge(_ context.Context, e *env, shards []harness.ShardFolder, out, junit string) error {
	dir, m, err := harness.WriteMerged(out, shards)
	if err != nil {
		return err
	}
	if len(m.Cells) > 0 {
		if err := report.SuiteTable(e.stdout, m.Cells); err != nil {
			return fmt.Errorf("print the suite's table: %w", err)
		}
	}
	n := shards[0].Suite.Shard.Count
	fmt.Fprintf(e.stdout, "suite folder: %s (%d cells, %d not as expected%s; %d of %d shards, wall time %s longest shard, %s summed)\n",
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

// interruptedNote is what the incomplete line adds for a shard a signal
// cut short.
func interruptedNote(interrupted bool) string {
	if interrupted {
		return "; a shard was interrupted"
	}
	return ""
}
