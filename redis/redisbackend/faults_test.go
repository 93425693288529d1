package redisbackend_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockbench/lockbench/cli"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/redis/rediscluster/redistest"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/verdict"
)

// TestClockJumpAndAcquirePause runs issue #50's two Redlock faults
// through `lockbench run` on real instances. redis-clock-jump: the
// history records the jump (by 60 s, on member 0, struck and undone),
// and Redlock grants the lock twice at once. redis-acquire-pause: the
// fault held replies (its end is ok, not info), client 1 is granted
// nothing while its acquires' answers come late, and exclusion holds —
// Redlock's validity check refused every stale grant.
func TestClockJumpAndAcquirePause(t *testing.T) {
	redistest.Need(t)
	if testing.Short() {
		t.Skip("starts Redis deployments")
	}
	for _, tc := range []struct {
		scenario, fault string
		code            int
		exclusion       verdict.Verdict
		arg             time.Duration
	}{
		{"redis-clock-jump", "clock-jump", cli.ExitViolation, verdict.Fail, 60 * time.Second},
		{"redis-acquire-pause", "delay-acquire-replies", cli.ExitPass, verdict.Pass, 400 * time.Millisecond},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			if code := cli.Run([]string{"run", "--lock", "redlock", "--scenario", tc.scenario, "--out", out}, &stdout, &stderr); code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, stdout.String(), stderr.String())
			}
			runs, _ := os.ReadDir(out)
			if len(runs) != 1 {
				t.Fatalf("want one run folder, got %v", runs)
			}
			dir := filepath.Join(out, runs[0].Name())
			var sum report.Summary
			readJSON(t, filepath.Join(dir, rundir.SummaryFile), &sum)
			if got := sum.Checks[verdict.Exclusion].Verdict; got != tc.exclusion {
				t.Errorf("exclusion %s, want %s", got, tc.exclusion)
			}
			events, err := history.ReadFile(filepath.Join(dir, rundir.HistoryFile))
			if err != nil {
				t.Fatal(err)
			}
			from, to := faultWindow(t, events, tc.fault, tc.arg)
			if tc.fault != "delay-acquire-replies" {
				return
			}
			for _, e := range events {
				if e.F == history.FAcquire && e.Type == history.OK && e.Process == 1 && e.Time > from && e.Time < to {
					t.Errorf("client 1 granted at %s, while its acquires' replies came late", time.Duration(e.Time))
				}
			}
		})
	}
}

// faultWindow finds fault's start and its ok end in the history, and
// checks the step's parameter was recorded.
func faultWindow(t *testing.T, events []history.Event, fault string, arg time.Duration) (from, to int64) {
	t.Helper()
	for _, e := range events {
		if e.F != history.FFault {
			continue
		}
		var v history.Fault
		if err := json.Unmarshal(e.Value, &v); err != nil || v.Fault != fault {
			continue
		}
		if time.Duration(v.ArgNS) != arg {
			t.Errorf("%s recorded with arg_ns %d, want %s", fault, v.ArgNS, arg)
		}
		switch e.Type {
		case history.Invoke:
			from = e.Time
		case history.OK:
			to = e.Time
		default:
			t.Errorf("%s ended %s: %s", fault, e.Type, e.Error)
		}
	}
	if from == 0 || to == 0 {
		t.Fatalf("%s: start %d, ok end %d in the history", fault, from, to)
	}
	return from, to
}
