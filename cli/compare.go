package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/lockbench/lockbench/internal/wholefile"
	"github.com/lockbench/lockbench/report"
)

// DefaultMinDelta is compare's --min-delta: latency medians closer than
// this are the same on any machine lockbench runs on.
const DefaultMinDelta = time.Millisecond

// thresholdFlag is --threshold: a percentage, "20%" or "20".
type thresholdFlag struct{ v float64 }

// String prints the threshold as a percentage, for --help.
func (t *thresholdFlag) String() string {
	if t == nil {
		return ""
	}
	return fmt.Sprintf("%g%%", t.v*100)
}

// Set parses "20%" or "20".
func (t *thresholdFlag) Set(s string) error {
	v, err := report.ParseThreshold(s)
	if err != nil {
		return err
	}
	t.v = v
	return nil
}

// compareOptions are compare's arguments.
type compareOptions struct {
	base, next string
	threshold  thresholdFlag
	minDelta   float64 // milliseconds
	alpha      float64
	normalize  string
	asJSON     bool
	all        bool
	format     string
}

// compareCommand is `lockbench compare BASE.json NEW.json`: each cell's
// runs are samples; a significant worsening past the threshold, a failed
// asserted check, a significant rise in a racy check's failure rate, or
// an incomplete comparison exits 1 (report.Compare).
func compareCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "compare", "compare BASE.json NEW.json [--threshold 20%] [flags]")
	o := compareOptions{threshold: thresholdFlag{v: report.DefaultThreshold}}
	fs.Var(&o.threshold, "threshold", "minimum effect: a significant change of a median by more than this `percent` is a regression, e.g. 20%")
	minDelta := fs.Duration("min-delta", DefaultMinDelta, "absolute floor: a latency median that rises by less than this `duration` is never a regression")
	fs.Float64Var(&o.alpha, "alpha", report.DefaultAlpha, "significance level of the tests, after Holm's correction for their number")
	fs.StringVar(&o.normalize, "normalize", report.NormalizeAuto, "divide figures by the commit floor: auto (when the hosts differ), always (each run by its own suite's floor), never")
	fs.BoolVar(&o.asJSON, "json", false, "print the comparison as JSON")
	fs.BoolVar(&o.all, "all", false, "print every compared figure, not only those that changed significantly")
	fs.StringVar(&o.format, "format", report.FormatText, "how to print the comparison: text (a table and lines), csv (the rows alone, for a script) or markdown (a table and a list, for a pull request)")
	pos, err := fs.parseInterspersed(args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return badInputf("want two files, BASE.json and NEW.json (each a summary.json or a suite.json), got %d", len(pos))
	}
	if *minDelta < 0 {
		return badInputf("--min-delta %s: must be ≥0", *minDelta)
	}
	if !(o.alpha > 0 && o.alpha < 1) {
		return badInputf("--alpha %g: must be between 0 and 1", o.alpha)
	}
	if err := checkNormalize(o.normalize); err != nil {
		return err
	}
	switch o.format {
	case report.FormatText, report.FormatCSV, report.FormatMarkdown:
	default:
		return badInputf("--format %q: want text, csv or markdown", o.format)
	}
	if o.asJSON && o.format != report.FormatText {
		return badInputf("--json and --format %s: give one", o.format)
	}
	o.base, o.next, o.minDelta = pos[0], pos[1], float64(*minDelta)/1e6
	return runCompare(ctx, e, o)
}

// runCompare compares the two files and prints the comparison.
func runCompare(_ context.Context, e *env, o compareOptions) error {
	var suites [2]report.Suite
	for i, p := range []string{o.base, o.next} {
		s, err := readCompared(p)
		if err != nil {
			return err
		}
		if len(s.Cells) == 0 {
			// A gate that compared nothing must not pass.
			return badInputf("%s has no cells: nothing to compare (compare takes a summary.json or a suite.json with at least one run)", p)
		}
		suites[i] = s
	}
	c := report.Compare(suites[0], suites[1], report.CompareOptions{Threshold: o.threshold.v, MinDeltaMS: o.minDelta, Alpha: o.alpha, Normalize: o.normalize})
	if c.Cells == 0 {
		return badInput(errors.New("no cell in common: the files compare different cells (lock/scenario, keepalive policy, etcd release of member processes; an embedded suite and a process suite share none)"))
	}
	var err error
	if o.asJSON {
		err = writeJSON(e.stdout, c)
	} else {
		err = report.WriteComparisonAs(e.stdout, c, o.all, o.format)
	}
	if err != nil {
		return fmt.Errorf("print the comparison: %w", err)
	}
	if c.Regressed() {
		return errViolation
	}
	return nil
}

// checkNormalize checks --normalize.
func checkNormalize(mode string) error {
	switch mode {
	case report.NormalizeAuto, report.NormalizeAlways, report.NormalizeNever:
		return nil
	}
	return badInputf("--normalize %q: want auto, always or never", mode)
}

// readCompared reads one of compare's files. A file that is some other
// JSON (a config.json, a bench.json) gets a message that says what it is
// not and what compare takes, not a decoder's complaint about a field.
func readCompared(path string) (report.Suite, error) {
	s, err := report.ReadSuiteFile(path)
	if err == nil {
		return s, nil
	}
	if errors.As(err, new(*fs.PathError)) || wholefile.IsRefused(err) || errors.Is(err, report.ErrMalformed) {
		return s, badInput(err)
	}
	return s, badInputf("%s is neither a summary.json nor a suite.json%s: compare takes two of those (a run folder's summary.json, a suite folder's suite.json)",
		path, whatJSON(path))
}

// whatJSON guesses, for a message, what kind of file path is.
func whatJSON(path string) string {
	b, err := wholefile.Read(path, "suite.json or summary.json", wholefile.JSONLimit)
	if err != nil {
		return ""
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return " (it is not a JSON object)"
	}
	has := func(k string) bool { _, ok := keys[k]; return ok }
	switch {
	case has("run_id") && !has("verdict"):
		return " (it looks like a run's config.json)"
	case has("floor") || has("floor_put"):
		return " (it looks like a bench.json)"
	}
	return ""
}
