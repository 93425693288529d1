package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/rundir"
)

// TestFilesThatCannotBeReadWholeAreRefused: a scenario, history,
// summary/suite or bench file that is a FIFO with no writer, a device, or
// over its kind's limit is refused at once with exit 2 and one line
// naming the path, what it is and the limit — not read (a FIFO blocked
// the command until killed; /dev/zero was read until memory ran out).
func TestFilesThatCannotBeReadWholeAreRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 2<<20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	run := sampleRun(t) // summary.json becomes a FIFO
	sum := filepath.Join(run, rundir.SummaryFile)
	os.Remove(sum)
	if err := syscall.Mkfifo(sum, 0o600); err != nil {
		t.Fatal(err)
	}
	bench := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(bench, rundir.BenchFile), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "runs")
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"run --scenario FIFO", []string{"run", "--scenario", fifo, "--out", out}, []string{"scenario " + fifo, "named pipe (FIFO)", "regular file of at most 1 MiB"}},
		{"run --scenario /dev/zero", []string{"run", "--scenario", "/dev/zero", "--out", out}, []string{"scenario /dev/zero", "character device", "at most 1 MiB"}},
		{"run --scenario 2 MiB", []string{"run", "--scenario", big, "--out", out}, []string{"scenario " + big, "2097152 bytes, over the limit", "at most 1 MiB"}},
		{"suite --scenarios FIFO", []string{"suite", "--scenarios", fifo, "--out", out}, []string{"scenario " + fifo, "named pipe"}},
		{"check FIFO", []string{"check", fifo}, []string{"history " + fifo, "named pipe", "at most 4 GiB"}},
		{"compare FIFO", []string{"compare", fifo, fifo}, []string{fifo, "named pipe", "at most 256 MiB"}},
		{"report, summary.json a FIFO", []string{"report", "--no-html", run}, []string{"summary.json " + sum, "named pipe", "at most 256 MiB"}},
		{"report, bench.json a FIFO", []string{"report", bench}, []string{"bench.json", "named pipe", "at most 256 MiB"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			type res struct {
				code   int
				stderr string
			}
			ch := make(chan res, 1)
			go func() { code, _, stderr := runCLI(t, tc.args...); ch <- res{code, stderr} }()
			var r res
			select {
			case r = <-ch:
			case <-time.After(5 * time.Second):
				t.Fatal("still blocked after 5s")
			}
			if r.code != ExitUsage {
				t.Errorf("exit %d, want %d; stderr: %s", r.code, ExitUsage, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q does not say %q", r.stderr, w)
				}
			}
			if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n > 0 {
				t.Errorf("want one line of error, got %d:\n%s", n+1, r.stderr)
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("bad input wrote %s", out)
	}
}
