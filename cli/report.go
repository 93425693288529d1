package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/suite"
	"github.com/lockbench/lockbench/verdict"
)

// reportOptions are report's arguments.
type reportOptions struct {
	dir          string
	htmlOut      string
	noHTML       bool
	writeSummary bool
	output       outputFlags
}

// reportCommand is `lockbench report RUN_DIR`: it re-checks a saved
// run's history with today's checker, re-summarizes it (so old runs get
// new figures), prints the run tables and writes RUN_DIR/report.html.
// Given a suite folder (one holding suite.json) it does that for every
// cell, judges them against the suite's recorded expectations, prints the
// suite table and writes the matrix page. Given a bench folder (one
// holding bench.json) it prints the benchmark's table again. No cluster
// is needed.
func reportCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "report", "report RUN_DIR|SUITE_DIR|BENCH_DIR [flags]")
	var o reportOptions
	fs.StringVar(&o.htmlOut, "html", "", "write the HTML report here instead of RUN_DIR/"+rundir.HTMLFile+" (or SUITE_DIR/"+rundir.HTMLFile+")")
	fs.BoolVar(&o.noHTML, "no-html", false, "print the tables only; write no HTML")
	fs.BoolVar(&o.writeSummary, "write-summary", false, "also rewrite RUN_DIR/"+rundir.SummaryFile+" with the new figures (run folders only)")
	o.output.register(fs, "the re-checked summary.json (a suite folder: its suite.json; a bench folder: bench.json)", true)
	pos, err := fs.parseInterspersed(args)
	if err != nil {
		return err
	}
	switch len(pos) {
	case 0:
		return badInput(errors.New("no folder given: lockbench report RUN_DIR|SUITE_DIR|BENCH_DIR"))
	case 1:
		o.dir = pos[0]
	default:
		return badInputf("unexpected argument %q: report takes one run, suite or bench folder", pos[1])
	}
	if o.htmlOut != "" && o.noHTML {
		return badInputf("--html %s and --no-html: give one (--html writes the report there, --no-html writes none)", o.htmlOut)
	}
	if o.htmlOut != "" && !rundir.IsBench(o.dir) {
		// Before the run is re-checked: a folder that is not there is the
		// user's, not a half-written temp file's.
		if err := checkFile("html", o.htmlOut); err != nil {
			return err
		}
	}
	switch {
	case rundir.IsBench(o.dir):
		if o.htmlOut != "" || o.writeSummary {
			return badInputf("%s is a bench folder: --html and --write-summary apply to run and suite folders", o.dir)
		}
		return reportBench(ctx, e, o.dir, o.output.json)
	case harness.IsSuite(o.dir):
		if o.writeSummary {
			return badInputf("%s is a suite folder: --write-summary applies to a run folder (give one of its cells' folders)", o.dir)
		}
		return reportSuite(ctx, e, o)
	}
	return runReport(ctx, e, o)
}

// reportSuite re-checks and re-renders a suite folder: the suite table,
// and its matrix page unless --no-html. The outcome is the suite's: 1
// when a cell is not as expected, 3 when the only cells not as expected
// ran on a saturated harness.
func reportSuite(_ context.Context, e *env, o reportOptions) error {
	rs, err := suite.Recheck(o.dir)
	if err != nil {
		return badInput(err)
	}
	for _, n := range rs.Notes {
		fmt.Fprintf(o.output.info(e), "lockbench report: %s\n", n)
	}
	switch {
	case o.output.json:
		if err := writeJSON(e.stdout, rs.Suite()); err != nil {
			return err
		}
	case len(rs.Cells) > 0:
		if err := report.SuiteTable(e.stdout, rs.Cells); err != nil {
			return fmt.Errorf("print the suite's table: %w", err)
		}
	}
	fmt.Fprintf(o.resultTo(e), "suite folder: %s (%d cells, %d not as expected%s)\n", o.dir, len(rs.Cells), rs.Mismatches, saturatedCount(rs.Saturated))
	if !o.noHTML {
		path := cmp.Or(o.htmlOut, filepath.Join(o.dir, rundir.HTMLFile))
		if err := rs.WriteHTML(path); err != nil {
			return fmt.Errorf("write the HTML report: %w", err)
		}
		fmt.Fprintf(o.resultTo(e), "report: %s\n", path)
	}
	return suiteOutcome(rs.Mismatches, rs.Saturated)
}

// runReport re-checks and re-renders one run folder.
func runReport(_ context.Context, e *env, o reportOptions) error {
	rf, err := harness.Recheck(o.dir)
	if err != nil {
		return badInput(err)
	}
	sum := rf.Summary
	if old := rf.Saved.Verdict; old != "" && old != sum.Verdict {
		fmt.Fprintf(o.output.info(e), "lockbench report: verdict was %s when recorded, %s with today's checker\n", old, sum.Verdict)
	}
	if err := printRunReport(e, sum, o.output.json); err != nil {
		return err
	}
	if !o.noHTML {
		path := o.htmlOut
		if path == "" {
			path = filepath.Join(o.dir, rundir.HTMLFile)
		}
		if err := rf.WriteHTML(path); err != nil {
			return fmt.Errorf("write the HTML report: %w", err)
		}
		fmt.Fprintf(o.resultTo(e), "report: %s\n", path)
	}
	if o.writeSummary {
		if err := rundir.WriteJSON(filepath.Join(o.dir, rundir.SummaryFile), sum); err != nil {
			return fmt.Errorf("rewrite the summary: %w", err)
		}
	}
	if sum.Saturated() && sum.Verdict != verdict.Pass {
		return saturated(fmt.Sprintf("%s; verdict %s", sum.Saturation.Reason, sum.Verdict))
	}
	return verdictOutcome(sum.Verdict)
}

// printRunReport prints a re-checked run: its tables and first
// violations, or with asJSON its summary.
func printRunReport(e *env, sum report.Summary, asJSON bool) error {
	if asJSON {
		return writeJSON(e.stdout, sum)
	}
	if err := report.RunTable(e.stdout, sum); err != nil {
		return fmt.Errorf("print the run's table: %w", err)
	}
	if err := report.ChecksTable(e.stdout, sum); err != nil {
		return fmt.Errorf("print the checks' table: %w", err)
	}
	for _, v := range firstN(sum.Violations, 5) {
		fmt.Fprintf(e.stdout, "violation: %s\n", v.Explained())
	}
	return nil
}

// resultTo is where report's lines about what it wrote go: stdout beside
// the tables, stderr beside --json.
func (o reportOptions) resultTo(e *env) io.Writer {
	if o.output.json {
		return e.stderr
	}
	return e.stdout
}

// reportBench prints a saved benchmark's table from its bench.json; the
// outcome says whether a cell found a violation, as the benchmark's did.
func reportBench(_ context.Context, e *env, dir string, asJSON bool) error {
	b, err := report.LoadBench(dir)
	if err != nil {
		return badInput(err)
	}
	if asJSON {
		err = printFile(e, filepath.Join(dir, rundir.BenchFile))
	} else {
		err = report.BenchTable(e.stdout, b)
	}
	if err != nil {
		return fmt.Errorf("print the bench: %w", err)
	}
	if b.HasViolations() {
		return errViolation
	}
	return nil
}
