package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/suite"
	"github.com/lockbench/lockbench/verdict"
)

// TestSuiteJUnitBadPath: --junit in a missing folder, or naming a folder,
// is refused before the suite starts (exit 2, nothing written).
func TestSuiteJUnitBadPath(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	for _, tc := range []struct {
		path, want string
	}{
		{filepath.Join(dir, "nope", "junit.xml"), "does not exist"},
		{dir, "is a folder"},
	} {
		t0 := time.Now()
		code, _, stderr := runCLI(t, "suite", "--out", out, "--locks", "queue", "--scenarios", "contention", "--junit", tc.path)
		if code != ExitUsage || !strings.Contains(stderr, "--junit") || !strings.Contains(stderr, tc.want) {
			t.Errorf("--junit %s: exit %d, stderr %q; want %d naming --junit and %q", tc.path, code, stderr, ExitUsage, tc.want)
		}
		if el := time.Since(t0); el > 2*time.Second {
			t.Errorf("--junit %s: refused after %s, not before the suite", tc.path, el)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused suite wrote %s", out)
	}
}

// TestWriteJUnitFile: --junit writes the file atomically (no temporary
// file left beside it), and --junit - writes the XML to standard output.
func TestWriteJUnitFile(t *testing.T) {
	var stdout bytes.Buffer
	e := &env{stdout: &stdout, stderr: &stdout, scratch: &scratch{}}
	if err := writeJUnitFile(e, "", nil); err != nil {
		t.Errorf("no --junit: %v", err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "junit.xml")
	res := &suite.Result{Dir: "/r/suite-1", Cells: []report.Cell{{
		Summary:  report.Summary{Run: rundir.Run{Lock: "queue", Seed: 1}, Scenario: "contention", Verdict: verdict.Fail},
		Expected: verdict.Pass, Dir: "queue-contention-s1"}}}
	if err := writeJUnitFile(e, path, res); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<testsuite name="suite-1"`, `<testcase name="queue/contention/1"`, `<failure message="expected pass, got fail`, `value="/r/suite-1/queue-contention-s1"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("junit.xml lacks %q:\n%s", want, b)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the folder holds %d files, want junit.xml alone", len(entries))
	}
	if err := writeJUnitFile(e, "-", res); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != string(b) {
		t.Errorf("--junit - printed %q, want the file's XML", stdout.String())
	}
	if _, err := os.Stat("-"); err == nil {
		t.Error(`--junit - wrote a file named "-"`)
	}
}
