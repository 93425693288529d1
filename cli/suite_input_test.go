package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/suite"
	"github.com/lockbench/lockbench/verdict"
)

// TestSuiteRefusesBadMatrix: a suite's matrix flags that would silently run
// something other than what was typed (a negative cap meaning "no cap", an
// empty list entry, a lock or scenario twice) exit 2 naming the entry, and
// write nothing.
func TestSuiteRefusesBadMatrix(t *testing.T) {
	out := filepath.Join(t.TempDir(), "runs")
	contention := writeScenario(t, "name: contention\nclients: 2\nduration: 1s\nworkload: {kind: hold}\n")
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--quick-duration", "-1s"}, []string{"--quick-duration -1s", "≥0", "0: no cap"}},
		{[]string{"--locks", "queue,,mutex"}, []string{`--locks "queue,,mutex"`, "entry 2 is empty"}},
		{[]string{"--locks", "queue,"}, []string{`--locks "queue,"`, "entry 2 is empty"}},
		{[]string{"--locks", "queue,mutex,queue"}, []string{`"queue" is listed twice`}},
		{[]string{"--scenarios", "contention, contention"}, []string{`--scenarios`, `"contention" is listed twice`}},
		{[]string{"--scenarios", ",herd"}, []string{"entry 1 is empty"}},
		{[]string{"--scenarios", "contention," + contention}, []string{`"contention" and "` + contention + `" are both scenario "contention"`}},
		{[]string{"--keepalive", "auto,auto"}, []string{`--keepalive "auto,auto"`, "listed twice"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"suite", "--out", out}, tc.args...)...)
			wantUsage(t, code, stderr, tc.want)
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("bad input wrote %s", out)
	}
}

// wantUsage fails t unless a command exited 2 with one line on stderr
// that mentions every one of want.
func wantUsage(t *testing.T, code int, stderr string, want []string) {
	t.Helper()
	if code != ExitUsage {
		t.Errorf("exit %d, want %d; stderr: %s", code, ExitUsage, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr %q does not mention %q", stderr, w)
		}
	}
	if n := strings.Count(strings.TrimSpace(stderr), "\n"); n > 0 {
		t.Errorf("want one line of error, got %d:\n%s", n+1, stderr)
	}
}

// A suite that stopped early never prints its folder line as a finished
// suite's: it says whether suite.json records what ran, and the table
// marks the cell a signal cut short.
func TestPrintSuiteStoppedEarly(t *testing.T) {
	cut := report.Cell{Summary: report.Summary{Run: rundir.Run{Lock: "queue"}, Scenario: "contention", Verdict: verdict.Pass, Interrupted: true},
		Expected: verdict.Pass, Note: "interrupted"}
	for _, tc := range []struct {
		name string
		res  suite.Result
		want []string
		not  []string
	}{
		{"finished", suite.Result{Dir: "D", Cells: []report.Cell{{Summary: cut.Summary, Matches: true}}, Written: true},
			[]string{"suite folder: D (1 cells, 0 not as expected, 0s)\n"}, []string{"stopped early"}},
		{"a failed cell, suite.json written", suite.Result{Dir: "D", Cells: []report.Cell{cut}, Mismatches: 1, Written: true,
			Header: report.Suite{Error: "disk full", NotRun: []string{"txn/contention"}}},
			[]string{"stopped early: suite.json lists the cells that ran and the 1 not run", "NO (interrupted)"}, nil},
		{"suite.json not written", suite.Result{Dir: "D", Cells: []report.Cell{cut}, Header: report.Suite{Error: "disk full"}},
			[]string{"suite.json NOT written"}, nil},
		{"nothing ran, suite.json written", suite.Result{Dir: "D", Written: true, Header: report.Suite{Error: "x", NotRun: []string{"a/b"}}},
			[]string{"suite folder: D (0 cells", "the 1 not run"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if err := printSuite(&env{stdout: &stdout, stderr: &stderr}, &tc.res, 0, "", false, false); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			for _, w := range tc.not {
				if strings.Contains(stdout.String(), w) {
					t.Errorf("stdout has %q:\n%s", w, stdout.String())
				}
			}
		})
	}
}

// TestBenchRefusesBadLocks: bench reads --locks as suite does: each name
// once, none empty, refused before anything starts.
func TestBenchRefusesBadLocks(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bench")
	for _, tc := range []struct {
		locks string
		want  []string
	}{
		{"queue,,mutex", []string{`--locks "queue,,mutex"`, "entry 2 is empty"}},
		{"queue,mutex,queue", []string{`"queue" is listed twice`}},
	} {
		t.Run(tc.locks, func(t *testing.T) {
			code, _, stderr := runCLI(t, "bench", "--out", out, "--locks", tc.locks)
			wantUsage(t, code, stderr, tc.want)
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("bad input wrote %s", out)
	}
}
