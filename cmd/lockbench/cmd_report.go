package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/verdict"
)

func init() {
	commands["report"] = cmdReport
}

// cmdReport re-renders a saved run: it re-checks the history with today's
// checker, re-summarizes it (so old runs get new figures), prints the run
// tables and writes RUN_DIR/report.html. No cluster is needed.
func cmdReport(_ context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("report", "report RUN_DIR [flags]", stdout)
	htmlOut := fs.String("html", "", "write the HTML report here instead of RUN_DIR/"+report.HTMLFile)
	noHTML := fs.Bool("no-html", false, "print the tables only; write no HTML")
	writeSummary := fs.Bool("write-summary", false, "also rewrite RUN_DIR/"+report.SummaryFile+" with the new figures")
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
	rf, err := report.LoadRun(pos[0])
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
			path = filepath.Join(rf.Dir, report.HTMLFile)
		}
		if err := report.WriteRunHTMLFile(path, rf.Config, rf.Events, sum); err != nil {
			return exitError, err
		}
		fmt.Fprintf(stdout, "report: %s\n", path)
	}
	if *writeSummary {
		if err := report.WriteJSON(filepath.Join(rf.Dir, report.SummaryFile), sum); err != nil {
			return exitError, err
		}
	}
	if sum.Verdict == verdict.Fail {
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
