package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/verdict"
)

// TestSaturatedHarness: a run whose harness is overloaded is the harness's
// outcome, never a violation. The overload is provoked cheaply: once the
// cluster is up, lockbench's process gets one CPU (GOMAXPROCS 1) shared
// with 64 busy goroutines for the run's length, so every goroutine of the
// run (clients, etcd's members, the probe) waits ~64 scheduler slices for
// its turn. summary.json must say saturated; a failed verdict must exit 3
// saying the harness was saturated (without the probe it exited 1, a
// violation), and a pass exits 0 with the saturation printed.
func TestSaturatedHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	out := t.TempDir()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run([]string{"run", "--lock", "mutex", "--scenario", "contention", "--clients", "4", "--duration", "3s",
			"--members", "1", "--unsafe-no-fsync", "--out", out}, &stdout, &stderr)
	}()
	for !strings.Contains(stderr.String(), "etcd up at") {
		select {
		case code := <-done:
			t.Fatalf("exit %d before the run started:\n%s", code, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	stop := make(chan struct{})
	for range 64 {
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	spin := time.AfterFunc(3*time.Second, func() { close(stop) })
	code := <-done
	if spin.Stop() {
		close(stop)
	}
	runs, _ := os.ReadDir(out)
	if len(runs) != 1 {
		t.Fatalf("exit %d, run folders %v\n%s%s", code, runs, stdout.String(), stderr.String())
	}
	var sum report.Summary
	readJSON(t, filepath.Join(out, runs[0].Name(), rundir.SummaryFile), &sum)
	if !sum.Saturated() {
		t.Fatalf("summary.json: saturation %+v, want saturated\n%s", sum.Saturation, stdout.String())
	}
	t.Logf("exit %d, verdict %s, %s", code, sum.Verdict, sum.Saturation.Reason)
	if !strings.Contains(stdout.String(), "harness saturated: the harness's scheduler probe ran") &&
		!strings.Contains(stdout.String(), "harness saturated: the harness's scheduler probe stalled") {
		t.Errorf("stdout does not say the harness was saturated:\n%s", stdout.String())
	}
	switch {
	case sum.Verdict == verdict.Pass && code != ExitPass:
		t.Errorf("passed on a saturated harness: exit %d, want %d\n%s", code, ExitPass, stderr.String())
	case sum.Verdict != verdict.Pass && (code != ExitHarness || !strings.Contains(stderr.String(), "the harness was saturated")):
		t.Errorf("verdict %s on a saturated harness: exit %d, want %d saying so\n%s", sum.Verdict, code, ExitHarness, stderr.String())
	}
}
