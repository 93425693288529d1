package zkbackend_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/cli"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/verdict"
	"github.com/lockbench/lockbench/zookeeper/zkbackend"
	"github.com/lockbench/lockbench/zookeeper/zkcluster/zktest"
)

// TestZooKeeperThroughTheRunner runs zk-queue through `lockbench run` as
// a user would, under a fault of each kind the runner drives — a crashed
// holder (client relay) and a crashed leader (member) — each on an
// ensemble of its own: every check passes, and the run folder is a
// normal one (config.json naming the backend and the ensemble, history,
// summary, report.html) that `report` reads again.
func TestZooKeeperThroughTheRunner(t *testing.T) {
	zktest.Need(t)
	for _, scenario := range []string{"holder-crash", "leader-kill"} {
		t.Run(scenario, func(t *testing.T) {
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := cli.Run([]string{"run", "--lock", "zk-queue", "--scenario", scenario, "--out", out}, &stdout, &stderr)
			if code != cli.ExitPass {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, cli.ExitPass, stdout.String(), stderr.String())
			}
			runs, _ := os.ReadDir(out)
			if len(runs) != 1 {
				t.Fatalf("want one run folder, got %v", runs)
			}
			dir := filepath.Join(out, runs[0].Name())
			var cfg rundir.Config
			readJSON(t, filepath.Join(dir, rundir.ConfigFile), &cfg)
			if cfg.Backend != "zookeeper" || cfg.Cluster.Kind != "zookeeper" || cfg.Cluster.Members != 3 || cfg.Cluster.Version == "" {
				t.Errorf("config.json: backend %q, cluster %+v", cfg.Backend, cfg.Cluster)
			}
			var sum report.Summary
			readJSON(t, filepath.Join(dir, rundir.SummaryFile), &sum)
			for _, check := range []string{verdict.Exclusion, verdict.Liveness, verdict.Fairness} {
				if got := sum.Checks[check].Verdict; got != verdict.Pass {
					t.Errorf("%s: %s, want pass", check, got)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, rundir.HTMLFile)); err != nil {
				t.Error(err)
			}
			if code := cli.Run([]string{"report", dir, "--no-html"}, &stdout, &stderr); code != cli.ExitPass {
				t.Errorf("report: exit %d\n%s", code, stderr.String())
			}
		})
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestRefuses: an ensemble refuses, before the run, the faults it has no
// means for — etcd's operator API and peer relays, Redis's asynchronous
// replication — and takes the member, peer-network and client faults,
// and the faults that read its client protocol.
func TestRefuses(t *testing.T) {
	for fault, want := range map[string]string{
		"revoke-lease":     "operator's call",
		"compact-loop":     "operator's call",
		"move-leader":      "operator's call",
		"replace-member":   "operator's call",
		"delay-peers":      "peer relays",
		"snapshot-catchup": "snapshots",
		"cut-replication":  "asynchronous replication",
		"restart-empty":    "own data",
		"clock-jump":       "monotonic clock",
		"crash-member":     "",
		"partition-member": "",
		"pause-member":     "",
		"isolate-client":   "",
		"pause-client":     "",
		// ZooKeeper's own: its clients' relays read its protocol.
		"lose-create-reply":   "",
		"lose-create-replies": "",
	} {
		f, err := chaos.Lookup(fault)
		if err != nil {
			t.Fatal(err)
		}
		err = zkbackend.Deployer{}.Refuses(f)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s refused: %v", fault, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want a refusal naming %q", fault, err, want)
		}
	}
}

// TestNoZooKeeperLeftAfterSignals: a `lockbench run` of a ZooKeeper lock,
// interrupted (SIGINT) or killed (SIGKILL) while its ensemble runs,
// leaves no member process; interrupted, no data folder either (a killed
// one's folder is the next lockbench's to remove, zkcluster.RemoveStale).
func TestNoZooKeeperLeftAfterSignals(t *testing.T) {
	if out := os.Getenv("LOCKBENCH_ZK_SIGNAL_CHILD"); out != "" {
		os.Exit(cli.Run([]string{"run", "--lock", "zk-queue", "--scenario", "contention", "--duration", "60s", "--out", out}, os.Stdout, os.Stderr))
	}
	zktest.Need(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestNoZooKeeperLeftAfterSignals$")
			cmd.Env = append(os.Environ(), "LOCKBENCH_ZK_SIGNAL_CHILD="+filepath.Join(tmp, "out"), "TMPDIR="+tmp)
			var out syncBuffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Once the clients run: the ensemble serves.
			if !waitFor(60*time.Second, func() bool { return strings.Contains(out.String(), "; running") && len(membersUnder(tmp)) == 3 }) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("no run on 3 members under %s within 60 s:\n%s", tmp, out.String())
			}
			cmd.Process.Signal(sig)
			cmd.Wait()
			if !waitFor(20*time.Second, func() bool { return len(membersUnder(tmp)) == 0 }) {
				t.Fatalf("members left 20 s after %s: pids %v\n%s", sig, membersUnder(tmp), out.String())
			}
			folders, _ := filepath.Glob(filepath.Join(tmp, "*", "lockbench-zk-*"))
			more, _ := filepath.Glob(filepath.Join(tmp, "lockbench-zk-*"))
			if folders = append(folders, more...); sig == syscall.SIGINT && len(folders) > 0 {
				t.Errorf("data folders left after SIGINT: %v\n%s", folders, out.String())
			}
		})
	}
}

// membersUnder are the pids of the processes whose command line names
// dir (the ensemble's members run from folders under it).
func membersUnder(dir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte("QuorumPeerMain")) && bytes.Contains(cmdline, []byte(dir)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// syncBuffer is a bytes.Buffer a child process writes while the test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitFor(d time.Duration, ok func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if ok() {
			return true
		}
	}
	return ok()
}
