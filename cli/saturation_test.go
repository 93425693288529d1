package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
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
	// 64 goroutines that only spin take the one CPU from the run.
	var stop atomic.Bool
	for range 64 {
		go func() {
			for !stop.Load() {
			}
		}()
	}
	spin := time.AfterFunc(3*time.Second, func() { stop.Store(true) })
	code := <-done
	spin.Stop()
	stop.Store(true)
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

// TestReportKeepsSaturation: report RUN_DIR re-checks a run recorded on a
// saturated harness with its saturation (it is not in the history): the
// violation is the harness's outcome, exit 3, as the run's was.
func TestReportKeepsSaturation(t *testing.T) {
	dir := sampleRun(t)
	var sum map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, rundir.SummaryFile))
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	sum["saturation"] = report.Saturation{IntervalMS: 10, Samples: 100, LagP99MS: 700, LagMaxMS: 900, LagThresholdMS: 100,
		StallThresholdMS: 1000, Saturated: true, Reason: "the harness's scheduler probe ran ≥100ms late on 5.0% of its 100 wake-ups"}
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.SummaryFile), sum); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "report", dir, "--no-html", "--json")
	var got report.Summary
	if code != ExitHarness || !strings.Contains(stderr, "the harness was saturated: the harness's scheduler probe ran ≥100ms late") ||
		json.Unmarshal([]byte(stdout), &got) != nil || !got.Saturated() {
		t.Errorf("exit %d, stderr %q, saturation %+v", code, stderr, got.Saturation)
	}
}
