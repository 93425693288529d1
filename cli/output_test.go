package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
)

// TestJSONAndQuietEverywhere: every command that prints a result has
// --json, and every one that prints informational lines has --quiet, with
// the same meaning (docs/design.md §9).
func TestJSONAndQuietEverywhere(t *testing.T) {
	for cmd, quiet := range map[string]bool{"run": true, "suite": true, "bench": true, "report": true, "clean": true,
		"check": false, "compare": false, "list": false, "version": false} {
		code, stdout, _ := runCLI(t, cmd, "--help")
		if code != ExitPass || !strings.Contains(stdout, "\n  --json") {
			t.Errorf("%s --help: exit %d, no --json:\n%s", cmd, code, stdout)
		}
		if quiet && !strings.Contains(stdout, "\n  --quiet\n    \tno informational lines on stderr") {
			t.Errorf("%s --help: no --quiet of the shared meaning:\n%s", cmd, stdout)
		}
	}
	code, stdout, _ := runCLI(t, "version", "--json")
	var v map[string]any
	if code != ExitPass || json.Unmarshal([]byte(stdout), &v) != nil || v["lockbench_version"] == "" || v["schema_version"] != float64(rundir.SchemaVersion) {
		t.Errorf("version --json: exit %d, %q", code, stdout)
	}
	out := filepath.Join(t.TempDir(), "runs")
	for _, args := range [][]string{{"run", "--json", "--bench-out", "-", "--out", out}, {"suite", "--json", "--junit", "-", "--out", out},
		{"bench", "--json", "--bench-out", "-", "--out", out}} {
		code, _, stderr := runCLI(t, args...)
		if code != ExitUsage || !strings.Contains(stderr, "--json and --") || !strings.Contains(stderr, "both write standard output") {
			t.Errorf("%v: exit %d, %q", args, code, stderr)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("bad input wrote %s", out)
	}
}

// TestReportJSON: report --json prints the re-checked record on stdout
// (a run's summary, a suite's suite.json) and nothing else there; the
// lines about what it wrote go to stderr, and --quiet drops the notes.
func TestReportJSON(t *testing.T) {
	run := sampleRun(t)
	code, stdout, stderr := runCLI(t, "report", run, "--json")
	var sum report.Summary
	if code != ExitViolation || json.Unmarshal([]byte(stdout), &sum) != nil || sum.Verdict != "fail" || !strings.Contains(stderr, "report: ") {
		t.Errorf("run: exit %d, stdout %.200q, stderr %q", code, stdout, stderr)
	}
	suite := sampleSuite(t, "fail")
	code, stdout, stderr = runCLI(t, "report", suite, "--json", "--quiet", "--no-html")
	s, err := report.ParseSuite([]byte(stdout))
	if code != ExitPass || err != nil || len(s.Cells) != 2 || s.Schema != rundir.SchemaVersion {
		t.Errorf("suite: exit %d, %v, %d cells", code, err, len(s.Cells))
	}
	if strings.Contains(stderr, "not re-checked") || !strings.Contains(stderr, "suite folder: ") {
		t.Errorf("suite --quiet: stderr %q", stderr)
	}
}

// TestRunJSON: run --json --quiet prints the run's summary.json, byte for
// byte, on stdout, and only the run folder's path on stderr.
func TestRunJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, "run", "--json", "--quiet", "--clients", "2", "--duration", "1s", "--members", "1",
		"--unsafe-no-fsync", "--out", out)
	if !ranToTheEnd(code, stderr) {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	runs, _ := os.ReadDir(out)
	if len(runs) != 1 {
		t.Fatalf("run folders %v", runs)
	}
	dir := filepath.Join(out, runs[0].Name())
	file, _ := os.ReadFile(filepath.Join(dir, rundir.SummaryFile))
	if stdout != string(file) {
		t.Errorf("stdout is not summary.json:\n%.300s", stdout)
	}
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); lines[len(lines)-1] != "run folder: "+dir || strings.Contains(stderr, "etcd up at") {
		t.Errorf("stderr %q", stderr)
	}
}

// TestOutMeaningIsSaid: --out is a parent folder for run and suite and the
// folder itself for bench (kept so: scripts read OUT/bench.json), and each
// command's --help says which, naming the other.
func TestOutMeaningIsSaid(t *testing.T) {
	for cmd, want := range map[string]string{
		"run":   "parent folder: the run is written to OUT/<run-id>/ (as suite's --out; bench's --out is the bench folder itself)",
		"suite": "parent folder: the suite is written to OUT/suite-<time>/ (as run's --out; bench's --out is the bench folder itself)",
		"bench": "the bench folder itself, unlike run's and suite's --out (a parent folder)",
	} {
		// Help lines are wrapped: read the words.
		if _, stdout, _ := runCLI(t, cmd, "--help"); !strings.Contains(strings.Join(strings.Fields(stdout), " "), want) {
			t.Errorf("%s --help does not say %q", cmd, want)
		}
	}
}
