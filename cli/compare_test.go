package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/verdict"
)

func compareSummary(v verdict.Verdict, acqP99 float64) report.Summary {
	return report.Summary{Run: rundir.Run{Lock: "queue"}, Scenario: "contention", Verdict: v, ThroughputPerS: 2000,
		LatencyMS: map[string]report.Latency{
			report.LatAcquire: {Count: 100, P50: 1, P99: acqP99},
			report.LatHandoff: {Count: 99, P50: 0.5, P99: 5},
		},
		Checks: map[string]check.Result{verdict.Exclusion: {Verdict: v}}}
}

func writeSummaryFile(t *testing.T, name string, v any) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := rundir.WriteJSON(p, v); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCompareCommand(t *testing.T) {
	base := writeSummaryFile(t, "base.json", compareSummary(verdict.Pass, 10))
	same := writeSummaryFile(t, "same.json", compareSummary(verdict.Pass, 10))
	worse := writeSummaryFile(t, "worse.json", compareSummary(verdict.Fail, 10))
	slower := writeSummaryFile(t, "slower.json", compareSummary(verdict.Pass, 20))
	suite := writeSummaryFile(t, "suite.json", report.Suite{Cells: []report.Summary{compareSummary(verdict.Pass, 20)}})
	other := compareSummary(verdict.Pass, 10)
	other.Lock = "mutex"
	otherFile := writeSummaryFile(t, "other.json", other)
	junk := writeSummaryFile(t, "junk.json", map[string]int{"x": 1})
	expect := map[string]map[string]verdict.Verdict{"queue/contention": {verdict.Exclusion: verdict.Pass}}
	assertedBase := writeSummaryFile(t, "abase.json", report.Suite{Cells: []report.Summary{compareSummary(verdict.Pass, 10), other}, Expected: expect})
	assertedFail := writeSummaryFile(t, "afail.json", report.Suite{Cells: []report.Summary{compareSummary(verdict.Fail, 10), other}, Expected: expect})
	partial := writeSummaryFile(t, "partial.json", report.Suite{Cells: []report.Summary{compareSummary(verdict.Pass, 10)}})
	empty := writeSummaryFile(t, "empty.json", report.Suite{Cells: []report.Summary{}})
	unfair := compareSummary(verdict.Pass, 10)
	unfair.Checks[verdict.Fairness] = check.Result{Verdict: verdict.Fail}
	unfairFile := writeSummaryFile(t, "unfair.json", unfair)
	fair := compareSummary(verdict.Pass, 10)
	fair.Checks[verdict.Fairness] = check.Result{Verdict: verdict.Pass}
	fairFile := writeSummaryFile(t, "fair.json", fair)
	bothFail := writeSummaryFile(t, "bothfail.json", compareSummary(verdict.Fail, 10))
	// Hand-edited summaries: what compare reads is missing.
	raw := func(name string, edit func(m map[string]any)) string {
		var m map[string]any
		readJSON(t, base, &m)
		edit(m)
		return writeSummaryFile(t, name, m)
	}
	noChecks := raw("nochecks.json", func(m map[string]any) { delete(m, "checks") })
	emptyChecks := raw("emptychecks.json", func(m map[string]any) { m["checks"] = map[string]any{} })
	nullChecks := raw("nullchecks.json", func(m map[string]any) { m["checks"] = nil })
	nullLatency := raw("nulllatency.json", func(m map[string]any) { m["latency_ms"] = nil })
	var sm map[string]any
	readJSON(t, nullChecks, &sm)
	suiteNullChecks := writeSummaryFile(t, "suitenullchecks.json", map[string]any{"cells": []any{sm}})
	tests := []struct {
		name string
		args []string
		code int
		// out must appear in stdout (or stderr for exit 2).
		out []string
	}{
		{"identical", []string{base, same}, ExitPass, []string{"no regression in 1 compared cell (α 0.05", "min effect 20%"}},
		{"one failure of a non-safety check is no evidence", []string{"--all", fairFile, unfairFile}, ExitPass, []string{"queue/contention", "fairness failures", "0 of 1", "1 of 1", "can race"}},
		{"a new safety failure with no expectations regresses", []string{base, worse}, ExitViolation, []string{"exclusion failures", "0 of 1", "1 of 1", "REGRESSION " + report.NoteUnassertedSafety}},
		{"a safety failure in both sides is a rate", []string{bothFail, worse}, ExitPass, []string{"no regression"}},
		{"checks missing", []string{base, noChecks}, ExitUsage, []string{"nochecks.json", `"checks" is missing`}},
		{"checks {}", []string{emptyChecks, base}, ExitUsage, []string{"emptychecks.json", `"checks" is missing, null or empty`}},
		{"checks null", []string{base, nullChecks}, ExitUsage, []string{"nullchecks.json", `"checks"`}},
		{"latency_ms null", []string{base, nullLatency}, ExitUsage, []string{"nulllatency.json", `"latency_ms" is missing or null`}},
		{"a suite cell with null checks", []string{base, suiteNullChecks}, ExitUsage, []string{"suitenullchecks.json", "suite cell 0", `"checks"`}},
		{"an asserted check fails", []string{assertedBase, assertedFail}, ExitViolation, []string{"exclusion verdict", "asserted", "REGRESSION"}},
		{"2x acquire p99: a tail never gates", []string{base, slower, "--all"}, ExitPass, []string{"acquire p99", "10.0 ms", "20.0 ms", "+100%", "tail, not gated"}},
		{"only what changed, without --all", []string{base, slower}, ExitPass, []string{"without a significant change not shown (--all shows every row)", "no regression"}},
		{"summary against a suite", []string{"--all", base, suite}, ExitPass, []string{"acquire p99"}},
		{"a suite with a cell missing", []string{assertedBase, partial}, ExitViolation, []string{"MISSING from new: mutex/contention", "INCOMPLETE"}},
		{"a higher threshold, flag last", []string{base, slower, "--threshold", "150%"}, ExitPass, []string{"min effect 150%"}},
		{"flag first", []string{"--threshold=150", base, slower}, ExitPass, nil},
		{"noise floor", []string{"--min-delta", "20ms", base, slower}, ExitPass, nil},
		{"bad alpha", []string{"--alpha", "2", base, slower}, ExitUsage, []string{"--alpha"}},
		{"json", []string{"--json", base, slower}, ExitPass, []string{`"alpha": 0.05`, `"tail, not gated"`}},
		{"one file", []string{base}, ExitUsage, []string{"want two files"}},
		{"three files", []string{base, same, worse}, ExitUsage, []string{"want two files"}},
		{"missing file", []string{base, filepath.Join(t.TempDir(), "nope.json")}, ExitUsage, []string{"nope.json"}},
		{"not a summary", []string{base, junk}, ExitUsage, []string{"neither a summary.json nor a suite.json"}},
		{"bad threshold", []string{base, same, "--threshold", "lots"}, ExitUsage, []string{"threshold"}},
		{"two empty suites", []string{empty, empty}, ExitUsage, []string{"empty.json has no cells", "nothing to compare"}},
		{"an empty new suite", []string{base, empty}, ExitUsage, []string{"empty.json has no cells"}},
		{"no common cell", []string{base, otherFile}, ExitUsage, []string{"no cell in common"}},
		{"csv: the rows alone", []string{"--format", "csv", "--all", base, slower}, ExitPass, []string{"cell,what,base,new,change,p,status\n", "queue/contention,acquire p99,10.0 ms (n=1),20.0 ms (n=1),+100%,,\"tail, not gated\"\n"}},
		{"csv without a change: the header", []string{"--format", "csv", base, same}, ExitPass, []string{"cell,what,base,new,change,p,status\n"}},
		{"markdown", []string{"--format", "markdown", "--all", base, slower}, ExitPass, []string{"| cell | what | base | new | change | p | status |\n| --- |", "| queue/contention | acquire p99 | 10.0 ms (n=1) | 20.0 ms (n=1) | +100% |  | tail, not gated |\n", "- no regression in 1 compared cell"}},
		{"markdown without a change: the lines", []string{"--format", "markdown", base, same}, ExitPass, []string{"- no regression in 1 compared cell"}},
		{"bad format", []string{"--format", "html", base, same}, ExitUsage, []string{`--format "html": want text, csv or markdown`}},
		{"json and a format", []string{"--json", "--format", "csv", base, same}, ExitUsage, []string{"--json and --format csv: give one"}},
		{"help", []string{"--help"}, ExitPass, []string{"Usage: lockbench compare"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(append([]string{"compare"}, tc.args...), &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout.String(), stderr.String())
			}
			out := stdout.String()
			if tc.code == ExitUsage {
				out = stderr.String()
				if strings.Count(out, "\n") != 1 {
					t.Errorf("bad input should give one line, got %q", out)
				}
			}
			for _, w := range tc.out {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
