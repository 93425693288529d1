package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/verdict"
)

func init() {
	commands["report"] = cmdReport
}

// cmdReport re-renders a saved run: it re-checks the history with today's
// checker, re-summarizes it (so old runs get new figures), prints the run
// tables and writes RUN_DIR/report.html. Given a bench folder (one holding
// bench.json) it prints the benchmark's table again. No cluster is needed.
func cmdReport(_ context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("report", "report RUN_DIR|BENCH_DIR [flags]", stdout)
	htmlOut := fs.String("html", "", "write the HTML report here instead of RUN_DIR/"+rundir.HTMLFile)
	noHTML := fs.Bool("no-html", false, "print the tables only; write no HTML")
	writeSummary := fs.Bool("write-summary", false, "also rewrite RUN_DIR/"+rundir.SummaryFile+" with the new figures")
	pos, help, err := parseInterspersed(fs, args)
	if help || err != nil {
		return exitPass, err
	}
	switch len(pos) {
	case 0:
		return 0, usageError{errors.New("no run folder given: lockbench report RUN_DIR")}
	case 1:
	default:
		return 0, usageError{fmt.Errorf("unexpected argument %q: report takes one run folder", pos[1])}
	}
	if rundir.IsBench(pos[0]) {
		if *htmlOut != "" || *writeSummary {
			return 0, usageError{fmt.Errorf("%s is a bench folder: --html and --write-summary apply to run folders", pos[0])}
		}
		return reportBench(pos[0], stdout)
	}
	rf, err := rundir.Load(pos[0])
	if err != nil {
		return 0, usageError{err}
	}
	sum := rf.Recheck()
	if old := rf.Saved.Verdict; old != "" && old != sum.Verdict {
		fmt.Fprintf(stderr, "lockbench report: verdict was %s when recorded, %s with today's checker\n", old, sum.Verdict)
	}
	if err := report.RunTable(stdout, sum); err != nil {
		return exitError, err
	}
	if err := report.ChecksTable(stdout, sum); err != nil {
		return exitError, err
	}
	for _, v := range firstN(sum.Violations, 5) {
		fmt.Fprintf(stdout, "violation: %s\n", v.Message)
	}
	if !*noHTML {
		path := *htmlOut
		if path == "" {
			path = filepath.Join(rf.Dir, rundir.HTMLFile)
		}
		if err := rundir.WriteFile(path, func(w io.Writer) error { return report.WriteRunHTML(w, rf.Config, rf.Events, sum) }); err != nil {
			return exitError, err
		}
		fmt.Fprintf(stdout, "report: %s\n", path)
	}
	if *writeSummary {
		if err := rundir.WriteJSON(filepath.Join(rf.Dir, rundir.SummaryFile), sum); err != nil {
			return exitError, err
		}
	}
	if sum.Verdict == verdict.Fail {
		return exitViolation, nil
	}
	return exitPass, nil
}

// reportBench prints a saved benchmark's table from its bench.json; the
// exit status says whether a cell found a violation, as the benchmark's
// did.
func reportBench(dir string, stdout io.Writer) (int, error) {
	b, err := rundir.LoadBench(dir)
	if err != nil {
		return 0, usageError{err}
	}
	if err := report.BenchTable(stdout, &b.Bench); err != nil {
		return exitError, err
	}
	if b.HasViolations() {
		return exitViolation, nil
	}
	return exitPass, nil
}

// parseInterspersed parses flags that may come before, between or after
// positional arguments, and returns the positional ones in order.
func parseInterspersed(fs *flag.FlagSet, args []string) (pos []string, help bool, err error) {
	for {
		if help, err := parse(fs, args); help || err != nil {
			return nil, help, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, false, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
