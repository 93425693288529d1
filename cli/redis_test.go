package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/redis/rediscluster/redistest"
	"github.com/lockbench/lockbench/redis/redisrun"
)

// TestRedisHelpNamesEveryFault: the help's fault list is written by hand,
// so a fault added to redisrun must be added to it.
func TestRedisHelpNamesEveryFault(t *testing.T) {
	for _, f := range redisrun.FaultNames() {
		if !strings.Contains(redisSynopsis, "\n  "+f+" ") {
			t.Errorf("lockbench redis --help does not describe fault %q", f)
		}
	}
}

// redisChildren lists the Redis processes whose parent is ppid (Redis
// rewrites its command line, so they are found by name and parent).
func redisChildren(ppid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		st := string(b)
		if strings.Contains(st, "\nPPid:\t"+strconv.Itoa(ppid)+"\n") && strings.HasPrefix(st, "Name:\tredis") {
			out = append(out, pid)
		}
	}
	return out
}

// alive keeps the pids that still run (a zombie has exited).
func alive(pids []int) []int {
	var out []int
	for _, pid := range pids {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
		if err == nil && !strings.Contains(string(b), "State:\tZ") {
			out = append(out, pid)
		}
	}
	return out
}

// TestRedisStudyRuns runs `lockbench redis` on one short cell per lock and
// checks its table, its folder and that no Redis process or folder is
// left.
func TestRedisStudyRuns(t *testing.T) {
	redistest.Need(t)
	tmp, out := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp)
	code, stdout, stderr := runCLI(t, "redis", "--faults", "none", "--seeds", "1", "--etcd-lock", "none",
		"--duration", "2s", "--hold", "50ms", "--out", out)
	if code != ExitPass {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"redis    redis-setnx  none", "redis    redlock      none", "0 of 1", "as expected"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	studies, _ := filepath.Glob(filepath.Join(out, "redis-*"))
	if len(studies) != 1 {
		t.Fatalf("study folders %v", studies)
	}
	for _, f := range []string{harness.StudyFile, "redis-setnx-none-s0/history.jsonl", "redlock-none-s0/check.json"} {
		if _, err := os.Stat(filepath.Join(studies[0], f)); err != nil {
			t.Error(err)
		}
	}
	// lockbench check re-checks a history of the study.
	if code, _, stderr := runCLI(t, "check", filepath.Join(studies[0], "redis-setnx-none-s0/history.jsonl")); code != ExitPass {
		t.Errorf("check of the study's history: exit %d\n%s", code, stderr)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left in TMPDIR: %v", ents)
	}
}

// TestRedisStudySignals: SIGINT stops `lockbench redis` with exit 130 and
// nothing left; after SIGKILL its Redis processes die with it (their
// death signal) and the next lockbench removes the data folder it left.
func TestRedisStudySignals(t *testing.T) {
	redistest.Need(t)
	bin := buildLockbench(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp, out := t.TempDir(), t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "redis", "--locks", "redis-setnx", "--faults", "none", "--seeds", "3", "--etcd-lock", "none", "--duration", "30s", "--out", out)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			var stderr syncBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(time.Minute)
			var pids []int
			for ; len(pids) < 6; pids = redisChildren(cmd.Process.Pid) { // a primary, two replicas, three Sentinels
				if time.Now().After(deadline) {
					t.Fatalf("Redis never started (%v):\n%s", pids, stderr.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(time.Second)
			cmd.Process.Signal(sig)
			cmd.Wait()
			if sig == syscall.SIGINT {
				if code := cmd.ProcessState.ExitCode(); code != ExitInterrupted {
					t.Errorf("exit %d, want %d\n%s", code, ExitInterrupted, stderr.String())
				}
				var st harness.Study
				tables, _ := filepath.Glob(filepath.Join(out, "redis-*", harness.StudyFile))
				if len(tables) != 1 {
					t.Fatalf("study tables %v", tables)
				}
				readJSON(t, tables[0], &st)
				if !st.Interrupted || len(st.Cells) != 1 || st.Cells[0].Seeds != 0 {
					t.Errorf("the study is not marked interrupted with no seed counted: %+v", st)
				}
			}
			deadline = time.Now().Add(10 * time.Second)
			for left := alive(pids); len(left) > 0; left = alive(pids) {
				if time.Now().After(deadline) {
					t.Fatalf("Redis processes %v left after %s", left, sig)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if sig == syscall.SIGKILL {
				// A later lockbench removes what the killed one left.
				removeStale(tmp, func(cluster.Stale) {})
			}
			left, _ := filepath.Glob(filepath.Join(tmp, "*", "lockbench-redis-*"))
			if len(left) != 0 {
				t.Errorf("Redis data folders left after %s: %v", sig, left)
			}
		})
	}
}
