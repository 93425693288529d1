package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/report"
)

// sampleRun copies report/testdata/run-violation (8 clients, a fault, a
// known exclusion violation) to a temporary folder.
func sampleRun(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "report", "testdata", "run-violation")
	dst := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{report.ConfigFile, report.HistoryFile, report.SummaryFile} {
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
	b, _ := os.ReadFile(filepath.Join(dir, report.SummaryFile))
	if err := json.Unmarshal(b, &old); err != nil {
		t.Fatal(err)
	}
	delete(old["latency_ms"].(map[string]any), "handoff")
	delete(old, "violation_count")
	old["verdict"] = "pass"
	if err := report.WriteJSON(filepath.Join(dir, report.SummaryFile), old); err != nil {
		t.Fatal(err)
	}

	var stdout, stderr bytes.Buffer
	code := realMain([]string{"report", dir}, &stdout, &stderr)
	if code != exitViolation {
		t.Errorf("exit %d, want %d (the run has a violation)\n%s%s", code, exitViolation, stdout.String(), stderr.String())
	}
	for _, w := range []string{"queue", "fixture", "handoff", "unavailability", "exclusion", "violation: ", "report: " + filepath.Join(dir, report.HTMLFile)} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "verdict was pass when recorded, fail with today's checker") {
		t.Errorf("no note of the changed verdict: %q", stderr.String())
	}
	page, err := os.ReadFile(filepath.Join(dir, report.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), `class="lane"`); n != 8 {
		t.Errorf("report.html has %d lanes, want 8", n)
	}
	// summary.json is left as recorded unless asked.
	if b2, _ := os.ReadFile(filepath.Join(dir, report.SummaryFile)); strings.Contains(string(b2), "violation_count") {
		t.Error("summary.json rewritten without --write-summary")
	}

	// Flags after the folder; a chosen HTML path; the summary rewritten.
	other := filepath.Join(t.TempDir(), "x.html")
	stdout.Reset()
	stderr.Reset()
	code = realMain([]string{"report", dir, "--html", other, "--write-summary"}, &stdout, &stderr)
	if code != exitViolation {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
	if _, err := os.Stat(other); err != nil {
		t.Error(err)
	}
	s, err := report.ReadSuiteFile(filepath.Join(dir, report.SummaryFile))
	if err != nil || s.Cells[0].ViolationCount == 0 || s.Cells[0].LatencyMS[report.LatHandoff].Count == 0 {
		t.Errorf("--write-summary: %v %+v", err, s)
	}

	os.Remove(filepath.Join(dir, report.HTMLFile))
	if code := realMain([]string{"report", "--no-html", dir}, &stdout, &stderr); code != exitViolation {
		t.Errorf("--no-html: exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, report.HTMLFile)); err == nil {
		t.Error("--no-html wrote report.html")
	}
}

func TestReportCommandBadInput(t *testing.T) {
	notRun := t.TempDir()
	os.WriteFile(filepath.Join(notRun, "notes.txt"), []byte("x"), 0o644)
	broken := sampleRun(t)
	os.WriteFile(filepath.Join(broken, report.HistoryFile), []byte("not json\n"), 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"not a run folder", []string{notRun}, "not a run folder: no config.json, history.jsonl or summary.json"},
		{"missing", []string{filepath.Join(notRun, "nope")}, "not a run folder: no such folder"},
		{"a file", []string{filepath.Join(notRun, "notes.txt")}, "not a run folder: it is a file"},
		{"broken history", []string{broken}, "history.jsonl: line 1"},
		{"no folder", nil, "no run folder given"},
		{"two folders", []string{notRun, notRun}, "takes one run folder"},
		{"bad flag", []string{notRun, "--bogus"}, "bogus"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := realMain(append([]string{"report"}, tc.args...), &stdout, &stderr)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			msg := stderr.String()
			if !strings.Contains(msg, tc.want) || strings.Count(msg, "\n") != 1 {
				t.Errorf("stderr %q, want one line with %q", msg, tc.want)
			}
		})
	}
}
