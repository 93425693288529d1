package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/lockbench/lockbench/report"
)

func init() {
	commands["compare"] = cmdCompare
}

// thresholdFlag is --threshold: a percentage, "20%" or "20".
type thresholdFlag struct{ v float64 }

func (t *thresholdFlag) String() string {
	if t == nil {
		return ""
	}
	return fmt.Sprintf("%g%%", t.v*100)
}

func (t *thresholdFlag) Set(s string) error {
	v, err := report.ParseThreshold(s)
	if err != nil {
		return err
	}
	t.v = v
	return nil
}

// cmdCompare compares two summary.json or suite.json files: exit 1 when a
// verdict worsens or throughput or acquire/handoff latency regresses past
// the threshold, 0 otherwise, 2 for bad input.
func cmdCompare(_ context.Context, args []string, stdout, _ io.Writer) (int, error) {
	fs := newFlags("compare", "compare BASE.json NEW.json [--threshold 20%] [flags]", stdout)
	th := &thresholdFlag{v: report.DefaultThreshold}
	fs.Var(th, "threshold", "a throughput drop or an acquire/handoff p50/p99 rise of more than this `percent` is a regression, e.g. 20%")
	minDelta := fs.Duration("min-delta", 0, "noise floor: a latency rise smaller than this `duration` is never a regression, e.g. 1ms")
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	pos, help, err := parseInterspersed(fs, args)
	if help || err != nil {
		return exitPass, err
	}
	if len(pos) != 2 {
		return 0, usageError{fmt.Errorf("want two files, BASE.json and NEW.json (each a summary.json or a suite.json), got %d", len(pos))}
	}
	if *minDelta < 0 {
		return 0, usageError{fmt.Errorf("--min-delta %s: must be ≥0", *minDelta)}
	}
	var suites [2]report.Suite
	for i, p := range pos {
		s, err := report.ReadSuiteFile(p)
		if err != nil {
			return 0, usageError{err}
		}
		suites[i] = s
	}
	c := report.Compare(suites[0], suites[1], report.CompareOptions{
		Threshold: th.v, MinDeltaMS: float64(*minDelta) / 1e6,
	})
	if c.Cells == 0 && len(suites[0].Cells) > 0 && len(suites[1].Cells) > 0 {
		return 0, usageError{errors.New("no cell in common: the files compare different lock/scenario pairs")}
	}
	if *asJSON {
		if err := writeJSON(stdout, c); err != nil {
			return exitError, err
		}
	} else if err := report.WriteComparison(stdout, c); err != nil {
		return exitError, err
	}
	if c.Regressed() {
		return exitViolation, nil
	}
	return exitPass, nil
}
