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
	"github.com/lockbench/lockbench/redis/rediscluster/redistest"
	"github.com/lockbench/lockbench/scenarios"
)

// TestRedisIsTheSuite: `lockbench redis --help` says it is the suite over
// the Redis scenarios, with its own defaults, and offers suite's flags;
// its scenarios are every built-in one for Redis, which are for Redis
// only, and etcd's counterpart.
func TestRedisIsTheSuite(t *testing.T) {
	code, stdout, _ := runCLI(t, "redis", "--help")
	if code != ExitPass {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"`lockbench suite` over the Redis scenarios", "--locks redis-setnx,redlock,queue", "--seeds 10", "--shard", "redis-bare-majority-restart", "leader-kill-long-hold"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("redis --help lacks %q:\n%s", want, stdout)
		}
	}
	names := redisStudyScenarios()
	if len(names) < 8 || names[len(names)-1] != redisEtcdScenario {
		t.Fatalf("study scenarios %v", names)
	}
	for _, n := range names[:len(names)-1] {
		sc, err := scenarios.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		if !sc.For("redis") || sc.For("etcd") || sc.For("zookeeper") {
			t.Errorf("%s is for %v, want redis only", n, sc.Backends)
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

// TestRedisStudyRuns runs `lockbench redis` on one short cell per Redis
// lock and checks that it writes a normal suite folder, and that no Redis
// process or folder is left.
func TestRedisStudyRuns(t *testing.T) {
	redistest.Need(t)
	tmp, out := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp)
	code, stdout, stderr := runCLI(t, "redis", "--locks", "redis-setnx,redlock", "--scenarios", "redis-steady", "--seeds", "1", "--out", out)
	if code != ExitPass {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"redis-setnx", "redlock", "redis-steady", "2 cells, 0 not as expected"} {
		if !strings.Contains(stdout+stderr, want) {
			t.Errorf("output lacks %q:\n%s\n%s", want, stdout, stderr)
		}
	}
	suites, _ := filepath.Glob(filepath.Join(out, "suite-*", "suite.json"))
	if len(suites) != 1 {
		t.Fatalf("suite folders %v", suites)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left in TMPDIR: %v", ents)
	}
}

// TestRedisStudySignals: SIGINT stops `lockbench redis` with exit 130, its
// suite marked interrupted, and nothing left; after SIGKILL its Redis processes die with it (their
// death signal) and the next lockbench removes the data folder it left.
func TestRedisStudySignals(t *testing.T) {
	redistest.Need(t)
	bin := buildLockbench(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp, out := t.TempDir(), t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "redis", "--locks", "redis-setnx", "--scenarios", "redis-primary-crash", "--seeds", "3", "--out", out)
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
				var st struct{ Interrupted bool }
				tables, _ := filepath.Glob(filepath.Join(out, "suite-*", "suite.json"))
				if len(tables) != 1 {
					t.Fatalf("suite tables %v", tables)
				}
				readJSON(t, tables[0], &st)
				if !st.Interrupted {
					t.Errorf("the suite is not marked interrupted")
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
