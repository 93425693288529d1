package cli

import (
	"bytes"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
)

// sampleRun copies report/testdata/run-violation (8 clients, a fault, a
// known exclusion violation) to a temporary folder.
func sampleRun(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "report", "testdata", "run-violation")
	dst := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{rundir.ConfigFile, rundir.HistoryFile, rundir.SummaryFile} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestReportCommand(t *testing.T) {
	dir := sampleRun(t)
	// An old summary: no handoff figures, no violation_count.
	var old map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, rundir.SummaryFile))
	if err := json.Unmarshal(b, &old); err != nil {
		t.Fatal(err)
	}
	delete(old["latency_ms"].(map[string]any), "handoff")
	delete(old, "violation_count")
	old["verdict"] = "pass"
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.SummaryFile), old); err != nil {
		t.Fatal(err)
	}

	var stdout, stderr bytes.Buffer
	code := Run([]string{"report", dir}, &stdout, &stderr)
	if code != ExitViolation {
		t.Errorf("exit %d, want %d (the run has a violation)\n%s%s", code, ExitViolation, stdout.String(), stderr.String())
	}
	for _, w := range []string{"queue", "fixture", "handoff", "unavailability", "exclusion", "violation: ", "report: " + filepath.Join(dir, rundir.HTMLFile)} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "verdict was pass when recorded, fail with today's checker") {
		t.Errorf("no note of the changed verdict: %q", stderr.String())
	}
	page, err := os.ReadFile(filepath.Join(dir, rundir.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), `class="lane"`); n != 8 {
		t.Errorf("report.html has %d lanes, want 8", n)
	}
	// summary.json is left as recorded unless asked.
	if b2, _ := os.ReadFile(filepath.Join(dir, rundir.SummaryFile)); strings.Contains(string(b2), "violation_count") {
		t.Error("summary.json rewritten without --write-summary")
	}

	// Flags after the folder; a chosen HTML path; the summary rewritten.
	other := filepath.Join(t.TempDir(), "x.html")
	stdout.Reset()
	stderr.Reset()
	code = Run([]string{"report", dir, "--html", other, "--write-summary"}, &stdout, &stderr)
	if code != ExitViolation {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
	if _, err := os.Stat(other); err != nil {
		t.Error(err)
	}
	s, err := report.ReadSuiteFile(filepath.Join(dir, rundir.SummaryFile))
	if err != nil || s.Cells[0].ViolationCount == 0 || s.Cells[0].LatencyMS[report.LatHandoff].Count == 0 {
		t.Errorf("--write-summary: %v %+v", err, s)
	}

	os.Remove(filepath.Join(dir, rundir.HTMLFile))
	if code := Run([]string{"report", "--no-html", dir}, &stdout, &stderr); code != ExitViolation {
		t.Errorf("--no-html: exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.HTMLFile)); err == nil {
		t.Error("--no-html wrote report.html")
	}
}

func TestReportCommandBadInput(t *testing.T) {
	notRun := t.TempDir()
	os.WriteFile(filepath.Join(notRun, "notes.txt"), []byte("x"), 0o644)
	broken := sampleRun(t)
	os.WriteFile(filepath.Join(broken, rundir.HistoryFile), []byte("not json\n"), 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"not a run folder", []string{notRun}, "not a run folder: no config.json, history.jsonl or summary.json"},
		{"missing", []string{filepath.Join(notRun, "nope")}, "not a run folder: no such folder"},
		{"a file", []string{filepath.Join(notRun, "notes.txt")}, "not a run folder: it is a file"},
		{"broken history", []string{broken}, "history.jsonl: line 1"},
		{"no folder", nil, "no folder given: lockbench report RUN_DIR|SUITE_DIR|BENCH_DIR"},
		{"two folders", []string{notRun, notRun}, "takes one run, suite or bench folder"},
		{"bad flag", []string{notRun, "--bogus"}, "bogus"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(append([]string{"report"}, tc.args...), &stdout, &stderr)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d", code, ExitUsage)
			}
			msg := stderr.String()
			if !strings.Contains(msg, tc.want) || strings.Count(msg, "\n") != 1 {
				t.Errorf("stderr %q, want one line with %q", msg, tc.want)
			}
		})
	}
}

// TestReportBenchFolder: given a bench folder, report draws the
// benchmark's table again from bench.json, and exits as the benchmark did.
func TestReportBenchFolder(t *testing.T) {
	lat := func(p50, p99 float64) report.Latency { return report.Latency{Count: 10, P50: p50, P99: p99} }
	b := report.Bench{
		ID: "bench-x", Scenario: "contention", TargetLock: "queue", TargetClients: 8,
		Floor: &report.Floor{Writers: 1, Commits: 6000, DurationS: 3, CommitsPerS: 2000, PerWriterPerS: 2000, LatencyMS: lat(0.5, 1.5)},
		Cells: []report.BenchCell{
			{Lock: "queue", Clients: 8, ThroughputPerS: 1200, XFloor: 0.6, XMutex: 12, HandoffMS: lat(1.2, 3), AcquireMS: lat(6, 9)},
			{Lock: "mutex", Clients: 8, ThroughputPerS: 100, XFloor: 0.05, XMutex: 1, HandoffMS: lat(90, 110), AcquireMS: lat(95, 120)},
		},
		Targets: []report.Target{{Name: "queue at 8 clients: throughput ÷ mutex", Value: 12, Op: ">=", Target: 5, Met: true},
			{Name: "recording cost, % of throughput", Value: 3.2, Noise: 2.5, Op: "<=", Target: 3, Met: true, Unresolved: true}},
		Host: rundir.ThisHost(), Cluster: rundir.ClusterConfig{Members: 3}}
	dir := filepath.Join(t.TempDir(), "bench-x")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.BenchFile), b); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := report.BenchTable(&want, &b); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "report", dir)
	if code != ExitPass || stdout != want.String() {
		t.Errorf("exit %d, stderr %q, stdout\n%s\nwant\n%s", code, stderr, stdout, want.String())
	}
	for _, w := range []string{"│ queue │       8 │ 1200.0 │      - │   0.60 │   12.0 │", "floor: 2000 commits/s", "target queue at 8 clients: throughput ÷ mutex: 12.000 (>= 5.00) met",
		"target recording cost, % of throughput: 3.200 ± 2.500 (<= 3.00) not resolved"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.HTMLFile)); err == nil {
		t.Error("report of a bench folder wrote report.html")
	}

	// A cell with a violation: exit as the benchmark would.
	b.Cells[1].Violations, b.Cells[1].Verdict = 1, "fail"
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.BenchFile), b); err != nil {
		t.Fatal(err)
	}
	if code, stdout, _ := runCLI(t, "report", dir); code != ExitViolation || !strings.Contains(stdout, "mutex × 8 clients: 1 violations") {
		t.Errorf("violation: exit %d\n%s", code, stdout)
	}
	// Run-folder flags do not apply; a broken bench.json is named.
	if code, _, stderr := runCLI(t, "report", dir, "--write-summary"); code != ExitUsage || !strings.Contains(stderr, "bench folder") {
		t.Errorf("--write-summary on a bench folder: exit %d, %q", code, stderr)
	}
	os.WriteFile(filepath.Join(dir, rundir.BenchFile), []byte("{"), 0o644)
	if code, _, stderr := runCLI(t, "report", dir); code != ExitUsage || !strings.Contains(stderr, rundir.BenchFile) {
		t.Errorf("broken bench.json: exit %d, %q", code, stderr)
	}
}

// --html is checked before the run is re-checked: a folder that does not
// exist is bad input naming it (not a harness failure naming a temporary
// file), and --html with --no-html is a contradiction.
func TestReportRefusesBadHTML(t *testing.T) {
	dir := sampleRun(t)
	missing := filepath.Join(t.TempDir(), "nonexistent", "x.html")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"report", dir, "--html", missing}, []string{"--html " + missing, "folder " + filepath.Dir(missing) + " does not exist"}},
		{[]string{"report", dir, "--html", t.TempDir()}, []string{"is a folder"}},
		{[]string{"report", dir, "--html", filepath.Join(t.TempDir(), "x.html"), "--no-html"}, []string{"--no-html", "give one"}},
	} {
		t.Run(strings.Join(tc.args[2:], " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			wantUsage(t, code, stderr, tc.want)
			if strings.Contains(stderr, ".tmp") {
				t.Errorf("stderr names a temporary file: %s", stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.HTMLFile)); !os.IsNotExist(err) {
		t.Errorf("bad input wrote %s", rundir.HTMLFile)
	}
}

// sampleSuite is a suite folder of two cells: the sample run's folder
// (an exclusion violation) and a cell whose run folder is gone, with
// suite.json expecting exclusion to be exclusion.
func sampleSuite(t *testing.T, exclusion string) string {
	t.Helper()
	run := sampleRun(t)
	var sum map[string]any
	b, _ := os.ReadFile(filepath.Join(run, rundir.SummaryFile))
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "suite-x")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	runID := sum["run_id"].(string)
	if err := os.Rename(run, filepath.Join(dir, runID)); err != nil {
		t.Fatal(err)
	}
	gone := map[string]any{}
	for k, v := range sum {
		gone[k] = v
	}
	gone["run_id"], gone["lock"], gone["verdict"] = "20260101T000001.000Z-mutex-fixture-s1", "mutex", "pass"
	gone["checks"] = map[string]any{"exclusion": map[string]any{"verdict": "pass"}}
	suite := map[string]any{"schema_version": rundir.SchemaVersion, "cells": []any{sum, gone},
		"expected": map[string]any{"queue/fixture": map[string]string{"exclusion": exclusion}, "mutex/fixture": map[string]string{"exclusion": "pass"}}}
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.SuiteFile), suite); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReportSuiteFolder: `lockbench report SUITE_DIR` re-checks every cell
// whose run folder is there, judges it against the suite's recorded
// expectations, prints the suite table, writes the matrix page and exits
// as the suite did: 1 when a cell is not as expected, 0 when every cell is.
func TestReportSuiteFolder(t *testing.T) {
	for _, tc := range []struct {
		exclusion string
		code      int
		match     string
	}{
		{"pass", ExitViolation, "NO"},
		{"fail", ExitPass, "yes"},
	} {
		t.Run("expects exclusion "+tc.exclusion, func(t *testing.T) {
			dir := sampleSuite(t, tc.exclusion)
			var stdout, stderr bytes.Buffer
			code := Run([]string{"report", dir}, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, stdout.String(), stderr.String())
			}
			out := stdout.String()
			for _, w := range []string{"queue", "mutex", "fixture", "fail: exclusion", "suite folder: " + dir + " (2 cells, " + map[bool]string{true: "1", false: "0"}[tc.code != 0] + " not as expected)",
				"report: " + filepath.Join(dir, rundir.HTMLFile)} {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if !strings.Contains(stderr.String(), "20260101T000001.000Z-mutex-fixture-s1: run folder not re-checked") {
				t.Errorf("no note of the missing run folder:\n%s", stderr.String())
			}
			page, err := os.ReadFile(filepath.Join(dir, rundir.HTMLFile))
			if err != nil || !strings.Contains(string(page), "20260101T000000.000Z-l-fixture-s1") {
				t.Errorf("report.html: %v, links the cell's run folder: %v", err, strings.Contains(string(page), "20260101T000000.000Z-l-fixture-s1"))
			}
		})
	}
	dir := sampleSuite(t, "pass")
	if code, _, stderr := runCLI(t, "report", dir, "--write-summary"); code != ExitUsage || !strings.Contains(stderr, "is a suite folder: --write-summary applies to a run folder") {
		t.Errorf("--write-summary on a suite: exit %d, %s", code, stderr)
	}
	other := filepath.Join(t.TempDir(), "matrix.html")
	if code, _, _ := runCLI(t, "report", dir, "--html", other); code != ExitViolation {
		t.Errorf("--html: exit %d", code)
	}
	if _, err := os.Stat(other); err != nil {
		t.Error(err)
	}
}

// TestReportSuiteAnyReasons: a cell whose scenario does not judge a check
// that failed says why, in the text table and on the HTML page alike
// ("exclusion: any — The holder believes…"), the reason taken from the
// built-in scenario whose expectations the run recorded.
func TestReportSuiteAnyReasons(t *testing.T) {
	dir := sampleSuite(t, "pass")
	sc, err := scenarios.Lookup("contention")
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "20260101T000000.000Z-l-fixture-s1")
	var cfg map[string]any
	b, _ := os.ReadFile(filepath.Join(run, rundir.ConfigFile))
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["lock"] = "queue-naive"
	cfg["scenario"] = map[string]any{"name": "contention", "clients": 8, "expect": sc.Expect}
	if err := rundir.WriteJSON(filepath.Join(run, rundir.ConfigFile), cfg); err != nil {
		t.Fatal(err)
	}
	var suite map[string]any
	b, _ = os.ReadFile(filepath.Join(dir, rundir.SuiteFile))
	if err := json.Unmarshal(b, &suite); err != nil {
		t.Fatal(err)
	}
	suite["cells"] = suite["cells"].([]any)[:1]
	cell := suite["cells"].([]any)[0].(map[string]any)
	cell["scenario"], cell["lock"] = "contention", "queue-naive"
	suite["expected"] = map[string]any{"queue-naive/contention": suiteExpectations(sc, "queue-naive")}
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.SuiteFile), suite); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "report", dir)
	if code == ExitUsage || code == ExitHarness {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	reason := sc.AnyReason(verdict.Subject{Lock: "queue-naive"}, verdict.Exclusion)
	if len(reason) < 20 {
		t.Fatalf("contention gives queue-naive no reason for exclusion: any (%q)", reason)
	}
	if why := "exclusion: any in queue-naive × contention: " + reason[:20]; !strings.Contains(stdout, why) {
		t.Errorf("the table does not say why exclusion is any (%q):\n%s", why, stdout)
	}
	page, _ := os.ReadFile(filepath.Join(dir, rundir.HTMLFile))
	if !strings.Contains(string(page), "exclusion: any — "+html.EscapeString(reason[:20])) {
		t.Errorf("report.html does not say why exclusion is any")
	}
}

// suiteExpectations is what a suite records for lock in sc: the checks
// it judges (not the "any" ones).
func suiteExpectations(sc scenarios.Scenario, lock string) map[string]string {
	out := map[string]string{}
	for k, v := range sc.Expect.For(verdict.Subject{Lock: lock, KeepAlive: "auto"}) {
		if v != "any" {
			out[k] = string(v)
		}
	}
	return out
}
