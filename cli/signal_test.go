package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
)

// TestSignalRepeatsWithinTheWindowAreOne drives watchSignals with a clock
// that gives each signal its own time: repeats within repeatWindow of the
// first (as GNU timeout delivers one SIGTERM to the process and to its
// group) do not force an exit; a signal after the window does, with
// ExitInterrupted.
func TestSignalRepeatsWithinTheWindowAreOne(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after []time.Duration // each signal's time after the first
		exit  bool            // the last one forces the exit
	}{
		{"one signal", nil, false},
		{"the same signal twice", []time.Duration{10 * time.Microsecond}, false},
		{"repeats up to the window's end", []time.Duration{time.Millisecond, repeatWindow - time.Millisecond}, false},
		{"a later signal", []time.Duration{repeatWindow}, true},
		{"a pair, then a later signal", []time.Duration{time.Microsecond, repeatWindow + time.Second}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Unix(1000, 0)
			var mu sync.Mutex
			times := []time.Time{t0}
			for _, d := range tc.after {
				times = append(times, t0.Add(d))
			}
			now := func() time.Time {
				mu.Lock()
				defer mu.Unlock()
				if len(times) == 0 {
					t.Error("the clock was read more often than signals came")
					return t0
				}
				n := times[0]
				times = times[1:]
				return n
			}
			var stderr bytes.Buffer
			e := &env{stdout: &bytes.Buffer{}, stderr: &stderr, scratch: &scratch{}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sigs, done := make(chan os.Signal), make(chan struct{})
			exited := make(chan int, 1)
			returned := make(chan struct{})
			go func() {
				defer close(returned)
				e.watchSignals(sigs, done, now, cancel, func(code int) { exited <- code })
			}()
			for i := range 1 + len(tc.after) {
				select {
				case sigs <- syscall.SIGTERM: // unbuffered: taken only once the previous one was judged
				case <-time.After(5 * time.Second):
					t.Fatalf("signal %d was not taken (exit %v)", i+1, len(exited) > 0)
				}
				if i == 0 {
					select {
					case <-ctx.Done():
					case <-time.After(5 * time.Second):
						t.Fatal("the first signal did not cancel the work")
					}
				}
			}
			if tc.exit {
				select {
				case code := <-exited:
					if code != ExitInterrupted {
						t.Errorf("exit %d, want %d", code, ExitInterrupted)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("the later signal did not force an exit")
				}
				<-returned
				return
			}
			// Every signal was taken and judged: the last is judged
			// before done is seen, since the watch reads one at a time.
			close(done)
			<-returned
			if len(exited) > 0 {
				t.Fatalf("a repeat within %s forced an exit:\n%s", repeatWindow, stderr.String())
			}
			if strings.Contains(stderr.String(), "exiting now") {
				t.Errorf("stderr: %s", stderr.String())
			}
		})
	}
}

// TestDoubleSIGTERMToTheGroupFinishesTheRun sends SIGTERM to a real run
// as GNU timeout does: to the process and to its process group, within a
// millisecond. The pair is one signal: the run stops cleanly and its
// folder, summary.json included, is written, marked interrupted.
func TestDoubleSIGTERMToTheGroupFinishesTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	out := t.TempDir()
	start := time.Now()
	cmd, tmp, stdout, stderr := startBinaryAs(t, &syscall.SysProcAttr{Setpgid: true}, "running", false,
		"run", "--lock", "queue", "--scenario", "contention", "--duration", "3s", "--out", out, "--unsafe-no-fsync")
	// About 1.5 s after the start, and well inside the 3 s run.
	time.Sleep(max(time.Until(start.Add(1500*time.Millisecond)), 500*time.Millisecond))
	pid := cmd.Process.Pid
	t0 := time.Now()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Sent back to back, the second often arrives while the first is still
	// pending and the kernel merges them; GNU timeout is slower between
	// its two kill calls. A pause well under a millisecond lets the first
	// be delivered, as there.
	for time.Since(t0) < 300*time.Microsecond {
	}
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil { // its group: Setpgid made pgid = pid
		t.Fatal(err)
	}
	if gap := time.Since(t0); gap > time.Millisecond {
		t.Logf("the two signals were %s apart (want < 1ms)", gap)
	}
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != ExitInterrupted {
		t.Errorf("exit %d, want %d\n%s", code, ExitInterrupted, stderr.String())
	}
	if strings.Contains(stderr.String(), "exiting now") {
		t.Errorf("the pair was read as two signals:\n%s", stderr.String())
	}
	runs, _ := os.ReadDir(out)
	if len(runs) != 1 {
		t.Fatalf("want one run folder in %s, got %v\nstdout:\n%s\nstderr:\n%s", out, runs, stdout.String(), stderr.String())
	}
	var sum report.Summary
	readJSON(t, filepath.Join(out, runs[0].Name(), rundir.SummaryFile), &sum)
	if !sum.Interrupted {
		t.Error("summary.json is not marked interrupted")
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left in TMPDIR: %v", ents)
	}
}
