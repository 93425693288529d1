package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/verdict"
)

// hardCase is one row of TestHardeningBadInput: input → exit code →
// message fragments (and ones that must not appear) → time limit.
type hardCase struct {
	name   string
	args   []string
	code   int
	want   []string
	reject []string
	max    time.Duration // 0: 500ms, no network
}

// TestHardeningBadInput: each input the adversarial review found is
// refused before anything starts — exit code, a message naming the flag
// or file, and nothing written (no run folder, no bench file).
func TestHardeningBadInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "somefile")
	os.WriteFile(file, []byte("x"), 0o644)
	out := filepath.Join(dir, "runs")
	lines := filepath.Join(dir, "lines.txt")
	base := writeSummaryFile(t, "base.json", compareSummary("pass", 10))
	config := writeSummaryFile(t, "config.json", rundir.Config{Run: rundir.Run{RunID: "r1", Lock: "queue"}})
	notEtcd := httptest.NewServer(http.NotFoundHandler())
	defer notEtcd.Close()
	procOK := true
	if _, err := os.Stat("/proc/self"); err != nil {
		procOK = false
	}

	tests := []hardCase{
		{"run --out a file", []string{"run", "--out", file}, ExitUsage, []string{"--out " + file, "is a file, not a folder"}, nil, 0},
		{"run --out under a file", []string{"run", "--out", filepath.Join(file, "runs")}, ExitUsage, []string{"--out", file + " is a file"}, nil, 0},
		{"suite --out a file", []string{"suite", "--out", file}, ExitUsage, []string{"--out " + file}, nil, 0},
		{"bench --out a file", []string{"bench", "--out", file}, ExitUsage, []string{"--out " + file}, nil, 0},
		{"run --bench-out a folder", []string{"run", "--out", out, "--bench-out", dir}, ExitUsage, []string{"--bench-out", "is a folder"}, nil, 0},
		{"run --bench-out in a missing folder", []string{"run", "--out", out, "--bench-out", filepath.Join(dir, "nope", "x.txt")}, ExitUsage, []string{"--bench-out", "does not exist"}, nil, 0},
		{"run --lease-ttl names the flag", []string{"run", "--out", out, "--lease-ttl", "1500ms"}, ExitUsage, []string{"--lease-ttl 1.5s", "whole number of seconds"}, []string{"builtin:"}, 0},
		{"suite --lease-ttl names the flag", []string{"suite", "--out", out, "--lease-ttl", "0s"}, ExitUsage, []string{"--lease-ttl 0s"}, []string{"builtin:"}, 0},
		{"compare a config.json", []string{"compare", base, config}, ExitUsage, []string{config, "neither a summary.json nor a suite.json", "config.json", "compare takes"}, []string{"json: cannot unmarshal", "Go struct"}, 0},
		{"endpoint is not etcd", []string{"run", "--out", out, "--endpoints", notEtcd.URL}, ExitUsage, []string{notEtcd.URL, "not an etcd server", "404"}, nil, 2 * time.Second},
		{"--data-dir missing", []string{"run", "--out", out, "--data-dir", filepath.Join(dir, "nope")}, ExitUsage, []string{"--data-dir", "no such folder"}, nil, 0},
		{"--election under 5 ticks", []string{"run", "--out", out, "--tick", "100ms", "--election", "200ms"}, ExitUsage, []string{"--election 200ms", "--tick"}, nil, 0},
		{"--tick with --endpoints", []string{"run", "--out", out, "--endpoints", notEtcd.URL, "--tick", "10ms"}, ExitUsage, []string{"--tick", "embedded"}, nil, 0},
	}
	if procOK {
		tests = append(tests,
			hardCase{"run --bench-out /proc", []string{"run", "--out", out, "--bench-out", "/proc/x.txt"}, ExitUsage, []string{"--bench-out /proc/x.txt", "cannot write in /proc"}, nil, 0},
			hardCase{"bench --bench-out /proc", []string{"bench", "--out", out, "--bench-out", "/proc/x.txt"}, ExitUsage, []string{"--bench-out /proc/x.txt"}, nil, 0},
		)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Now()
			code, _, stderr := runCLI(t, tc.args...)
			if el, limit := time.Since(t0), max(tc.max, 500*time.Millisecond); el > limit {
				t.Errorf("took %s, want < %s", el, limit)
			}
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tc.code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not mention %q", stderr, w)
				}
			}
			for _, r := range tc.reject {
				if strings.Contains(stderr, r) {
					t.Errorf("stderr %q mentions %q", stderr, r)
				}
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n > 0 {
				t.Errorf("want one line of error, got %d:\n%s", n+1, stderr)
			}
		})
	}
	for _, p := range []string{out, lines, filepath.Join(dir, "nope")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("bad input wrote %s", p)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("bad input left files in %s: %v", dir, ents)
	}
}

// TestPanicExitsWithItsOwnCode: a panic in a command exits 4, not Go's 2
// (which reads as bad input), prints the panic and its stack, and removes
// the CLI's scratch folders.
func TestPanicExitsWithItsOwnCode(t *testing.T) {
	tmp := t.TempDir()
	commands["test-panic"] = func(_ context.Context, e *env, _ []string) error {
		if _, err := e.scratch.make(tmp); err != nil {
			return err
		}
		var xs []int
		return fmt.Errorf("unreachable: %d", xs[len(os.Args)]) // a real runtime panic: index out of range
	}
	defer delete(commands, "test-panic")
	code, _, stderr := runCLI(t, "test-panic")
	if code != ExitPanic {
		t.Errorf("exit %d, want %d", code, ExitPanic)
	}
	for _, w := range []string{"lockbench test-panic: panic: runtime error: index out of range", "goroutine", "hardening_test.go", "please report"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("scratch folder left: %v", ents)
	}
}

// TestGuardedGoroutinePanic: a panic in a goroutine the CLI owns exits
// with ExitPanic after removing the scratch folders.
func TestGuardedGoroutinePanic(t *testing.T) {
	tmp := t.TempDir()
	var stderr syncBuffer
	e := &env{stdout: &stderr, stderr: &stderr, scratch: &scratch{}}
	if _, err := e.scratch.make(tmp); err != nil {
		t.Fatal(err)
	}
	exited := make(chan int, 1)
	go e.guard(func(code int) { exited <- code }, func() { panic("in a goroutine") })
	if code := <-exited; code != ExitPanic {
		t.Errorf("exit %d, want %d", code, ExitPanic)
	}
	if !strings.Contains(stderr.String(), "panic: in a goroutine") {
		t.Errorf("stderr: %s", stderr.String())
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("scratch folder left: %v", ents)
	}
}

// TestExitCode: the one mapping from outcome to exit status.
func TestExitCode(t *testing.T) {
	harnessFailed := errors.New("etcd did not start")
	for _, tc := range []struct {
		err  error
		code int
	}{
		{nil, ExitPass},
		{errHelpShown, ExitPass},
		{errViolation, ExitViolation},
		{fmt.Errorf("suite: %w", errViolation), ExitViolation},
		{badInputf("--x: bad"), ExitUsage},
		{fmt.Errorf("wrapped: %w", badInputf("--x: bad")), ExitUsage},
		{harnessFailed, ExitHarness},
		{errInterrupted, ExitInterrupted},
		{interrupted(harnessFailed), ExitInterrupted},
		{interrupted(badInputf("x")), ExitInterrupted},
		{recovered("boom"), ExitPanic},
		{errUnknown, ExitUnknown},
		{fmt.Errorf("check: %w", errUnknown), ExitUnknown},
		{verdictOutcome(verdict.Unknown), ExitUnknown},
		{verdictOutcome(verdict.Fail), ExitViolation},
		{verdictOutcome(verdict.Pass), ExitPass},
		{runOutcome(report.Summary{Verdict: verdict.Unknown}, nil), ExitUnknown},
		{runOutcome(report.Summary{Verdict: verdict.Unknown, Interrupted: true}, nil), ExitInterrupted},
	} {
		if got := exitCode(tc.err); got != tc.code {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.code)
		}
	}
}

// startBinary starts the built lockbench with a TMPDIR of its own and
// waits until stream (stdout or stderr) says ready.
func startBinary(t *testing.T, ready string, onStdout bool, args ...string) (cmd *exec.Cmd, tmp string, stdout, stderr *syncBuffer) {
	t.Helper()
	return startBinaryAs(t, nil, ready, onStdout, args...)
}

// startBinaryAs is startBinary with the process's attributes (e.g. a
// process group of its own); nil for the defaults.
func startBinaryAs(t *testing.T, attr *syscall.SysProcAttr, ready string, onStdout bool, args ...string) (cmd *exec.Cmd, tmp string, stdout, stderr *syncBuffer) {
	t.Helper()
	bin := buildLockbench(t)
	tmp = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd = exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.SysProcAttr = attr
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	watched := stderr
	if onStdout {
		watched = stdout
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(watched.String(), ready) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("never said %q:\n%s%s", ready, stdout.String(), stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cmd, tmp, stdout, stderr
}

// TestClusterCommandSIGINTExits130: Ctrl-C ends `lockbench cluster` with
// 130, as it ends every command, and leaves nothing in TMPDIR.
func TestClusterCommandSIGINTExits130(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	cmd, tmp, _, stderr := startBinary(t, "Ctrl-C", true, "cluster", "--members", "1", "--unsafe-no-fsync")
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != ExitInterrupted {
		t.Errorf("exit %d, want %d\n%s", code, ExitInterrupted, stderr.String())
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left in TMPDIR: %v", ents)
	}
}

// TestSecondSignalForcesExit: a second signal, repeatWindow or more after
// the first, exits at once, with 130, and still removes etcd's data
// folder.
func TestSecondSignalForcesExit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	out := t.TempDir()
	// A holder finishes its 30 s hold after the first signal, so the
	// clean finish outlasts repeatWindow and the second signal cuts it.
	cmd, tmp, _, stderr := startBinary(t, "running", false, "run", "--duration", "60s", "--clients", "4", "--hold", "30s", "--out", out, "--unsafe-no-fsync")
	time.Sleep(500 * time.Millisecond) // for the first grant
	cmd.Process.Signal(syscall.SIGINT)
	for !strings.Contains(stderr.String(), "finishing cleanly") {
		time.Sleep(10 * time.Millisecond)
	}
	// Within repeatWindow it would be the first signal delivered again.
	time.Sleep(repeatWindow + 100*time.Millisecond)
	t0 := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if el := time.Since(t0); el > 3*time.Second {
		t.Errorf("took %s to exit after the second signal", el)
	}
	if code := cmd.ProcessState.ExitCode(); code != ExitInterrupted {
		t.Errorf("exit %d, want %d\n%s", code, ExitInterrupted, stderr.String())
	}
	if !strings.Contains(stderr.String(), "exiting now") {
		t.Errorf("stderr: %s", stderr.String())
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left in TMPDIR: %v", ents)
	}
}
