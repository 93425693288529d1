package adapters_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/adapters"
	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/etcd/cluster/clustertest"
	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/suite"
	"github.com/lockbench/lockbench/verdict"
)

// RequireEnv, set to 1 (as .ci/run does after make adapter-deps), turns
// a missing adapter runtime from a skip into a failure.
const requireEnv = "LOCKBENCH_REQUIRE_ADAPTERS"

// needs is the Program find returns, or skips t naming what to install
// (fails it under LOCKBENCH_REQUIRE_ADAPTERS=1).
func needs(t *testing.T, find func() (*adapters.Program, error)) *adapters.Program {
	t.Helper()
	p, err := find()
	if err != nil {
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("%v (%s=1: the runtimes must be installed)", err, requireEnv)
		}
		t.Skipf("%v", err)
	}
	return p
}

// python is PythonEtcd3 behind its check, as needs wants it.
func python() (*adapters.Program, error) {
	if err := adapters.PythonEtcd3.Check(context.Background()); err != nil {
		return nil, err
	}
	return adapters.PythonEtcd3, nil
}

// shipped are the registered adapters with a runtime to find.
var shipped = []struct {
	lock string
	find func() (*adapters.Program, error)
}{
	{"python-etcd3", python},
	{"node-etcd3", adapters.NodeEtcd3},
	{"etcdctl", adapters.Etcdctl},
	{"etcdctl-3.4", adapters.Etcdctl34},
}

// TestShippedAdaptersMeetExpectations runs each shipped adapter under
// contention and holder-crash on the package's cluster, as a suite cell
// does (a fault-free scenario capped at suite.DefaultQuickDuration): every check the cell judges (the scenario's expectations
// with the strategy's own, harness.ExpectationsFor) has its expected
// verdict, and exclusion and liveness are among them.
func TestShippedAdaptersMeetExpectations(t *testing.T) {
	for _, a := range shipped {
		t.Run(a.lock, func(t *testing.T) {
			endpoints(t)
			needs(t, a.find)
			noneLeft(t)
			for _, name := range []string{"contention", "holder-crash"} {
				sc, err := scenarios.Lookup(name)
				if err != nil {
					t.Fatal(err)
				}
				if len(sc.Steps) == 0 {
					sc.Duration = scenarios.Duration(suite.DefaultQuickDuration)
				}
				res, err := harness.RunOn(context.Background(), clustertest.Shared(t), harness.RunSpec{Lock: a.lock, Scenario: sc, Seed: 1, Out: t.TempDir()})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				want := harness.ExpectationsFor(sc, a.lock, string(etcdlocks.KeepAliveOwn))
				for _, c := range []string{verdict.Exclusion, verdict.Liveness} {
					if _, ok := want[c]; !ok {
						t.Errorf("%s: %s is not judged: %v", name, c, want)
					}
				}
				for c, v := range want {
					if got := res.Summary.Checks[c].Verdict; got != v {
						t.Errorf("%s: %s %s, want %s: %+v", name, c, got, v, res.Summary.Checks[c])
					}
				}
				t.Logf("%s: %d acquisitions, %s", name, res.Summary.Acquisitions, res.Dir)
			}
		})
	}
}

// TestSuiteLeavesNoAdapterProcess runs `lockbench suite` (a binary built
// from this tree) over the adapters whose runtimes are here, with a marker
// in its environment that every adapter and etcdctl inherits: marked
// processes are seen while it runs, and none is left once it exits.
func TestSuiteLeavesNoAdapterProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd clusters")
	}
	var locksRun []string
	for _, a := range shipped[:3] {
		if _, err := a.find(); err == nil {
			locksRun = append(locksRun, a.lock)
		} else if os.Getenv(requireEnv) == "1" {
			t.Fatalf("%v (%s=1)", err, requireEnv)
		} else {
			t.Logf("without %s: %v", a.lock, err)
		}
	}
	if len(locksRun) == 0 {
		t.Skip("no adapter runtime installed (make adapter-deps)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "lockbench")
	if out, err := exec.Command(goTool(), "build", "-o", bin, "../cmd/lockbench").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	repo, _ := filepath.Abs("..")
	marker := "LOCKBENCH_TEST_SUITE_MARKER=" + strconv.Itoa(os.Getpid())
	cmd := exec.Command(bin, "suite", "--quiet", "--locks", strings.Join(locksRun, ","), "--scenarios", "contention,holder-crash",
		"--seeds", "1", "--out", dir)
	cmd.Env = append(os.Environ(), marker, adapters.RepoEnv+"="+repo)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	seen := map[string]bool{}
	var err error
	for waiting := true; waiting; {
		select {
		case err = <-done:
			waiting = false
		case <-time.After(200 * time.Millisecond):
			for _, p := range withEnv(marker) {
				seen[p] = true
			}
		}
	}
	t.Logf("lockbench suite --locks %s: %v\n%s", strings.Join(locksRun, ","), err, out)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	if err != nil {
		t.Errorf("the suite did not pass as expected: %v", err)
		logViolations(t, dir)
	}
	if len(seen) < len(locksRun) {
		t.Errorf("saw %d marked processes during the suite, want at least one per adapter: the marker does not reach them", len(seen))
	}
	if left := withEnv(marker); len(left) > 0 {
		t.Errorf("adapter processes left after the suite exited: %v", left)
	}
}

// logViolations logs the first violations of every cell that did not
// pass in the suite folder under dir: the folder goes with the test's
// temporary one, and a race that failed once must be readable.
func logViolations(t *testing.T, dir string) {
	paths, _ := filepath.Glob(filepath.Join(dir, "suite-*", "suite.json"))
	for _, path := range paths {
		s, err := report.ReadSuiteFile(path)
		if err != nil {
			t.Logf("%s: %v", path, err)
			continue
		}
		for _, c := range s.Cells {
			if c.Verdict == verdict.Pass {
				continue
			}
			t.Logf("%s × %s seed %d: %s", c.Lock, c.Scenario, c.Seed, c.Verdict)
			for _, v := range c.Violations[:min(len(c.Violations), 3)] {
				t.Logf("  %s", v.Message)
			}
		}
	}
}

// withEnv lists the live processes (pid and command line, other than
// this test's own) whose environment holds kv.
func withEnv(kv string) []string {
	me := strconv.Itoa(os.Getpid())
	return procs(func(pid, _, _ string) bool {
		if pid == me {
			return false
		}
		env, err := os.ReadFile(filepath.Join("/proc", pid, "environ"))
		return err == nil && strings.Contains("\x00"+string(env)+"\x00", "\x00"+kv+"\x00")
	})
}

func TestReadyIsWaitedFor(t *testing.T) {
	noneLeft(t)
	// It says ready after 300 ms: the Factory returns after that, and
	// the process answers.
	p := sh("slow-start", `sleep 0.3; echo '{"event":"ready"}'; read -r line; echo '{"reply":"closed"}'`)
	p.Ready = true
	start := time.Now()
	l := newLocker(t, p)
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("the Factory returned after %s, before the adapter said ready", took)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
	// It never says ready: the Factory fails at StartWait, naming it.
	p = sh("never-ready", `sleep 987655`)
	p.Ready, p.StartWait = true, 300*time.Millisecond
	_, err := p.Factory()(context.Background(), offline(t), etcdlocks.Options{Options: locks.Options{TTL: 2 * time.Second}})
	if !errors.Is(err, adapters.ErrProcess) || !strings.Contains(err.Error(), "adapter never-ready") || !strings.Contains(err.Error(), "not ready after 300ms") {
		t.Errorf("Factory of an adapter that never says ready: %v, want a process error naming it and the wait", err)
	}
	if left := withMarker("987655"); len(left) > 0 {
		t.Errorf("the adapter that never said ready was left running: %v", left)
	}
}

// canceller waits in lock for the next line: cancel answers error (or,
// with GRANT set, a grant that raced it); unlock answers released.
const canceller = `echo '{"event":"ready"}'
while read -r line; do
  case "$line" in
  *'"lock"'*) read -r next; case "$next" in
    *'"cancel"'*) if [ -n "$GRANT" ]; then echo "{\"reply\":\"granted\",\"token\":3,\"key\":\"$LOCKBENCH_LOCK\",\"lease\":\"1\"}"; else echo '{"reply":"error","outcome":"certain","error":"gave up"}'; fi ;;
    esac ;;
  *'"unlock"'*) echo '{"reply":"released"}'; echo unlocked >&2 ;;
  *'"close"'*) echo '{"reply":"closed"}'; exit 0 ;;
  esac
done`

func TestCancelInsteadOfKill(t *testing.T) {
	noneLeft(t)
	for _, tc := range []struct {
		name, env, want string
	}{
		{"refuses", "GRANT=", "cancelled (context deadline exceeded): gave up"},
		{"raced", "GRANT=1", "cancelled (context deadline exceeded) as it was granted; released"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := sh("canceller", tc.env+"\n"+canceller)
			p.Ready, p.Cancel = true, true
			l := newLocker(t, p)
			pid := pidOf(t, "lockbench-test-canceller")
			for i := 0; i < 2; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				_, err := l.Lock(ctx)
				cancel()
				if !errors.Is(err, locks.ErrNotAcquired) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Lock %d: %v, want a certain error saying %q", i, err, tc.want)
				}
			}
			// The same process answered both: it was not killed.
			if got := pidOf(t, "lockbench-test-canceller"); got != pid {
				t.Errorf("the adapter was replaced (pid %d, then %d): cancel killed it", pid, got)
			}
		})
	}
	// An adapter that does not answer the cancel is killed after
	// CloseWait, as one without Cancel is at once.
	p := sh("deaf", `echo '{"event":"ready"}'; read -r line; sleep 987656`)
	p.Ready, p.Cancel = true, true
	l := newLocker(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := l.Lock(ctx)
	if err == nil || errors.Is(err, locks.ErrNotAcquired) || !strings.Contains(err.Error(), "no answer to cancel within 300ms; process killed") {
		t.Errorf("Lock of an adapter deaf to cancel: %v, want an unknown outcome saying it was killed", err)
	}
	if left := withMarker("987656"); len(left) > 0 {
		t.Errorf("the adapter deaf to cancel was left running: %v", left)
	}
}

// TestExpectNamesRealScenariosAndChecks: the shipped strategies' Expect
// names built-in scenarios and checks (a typo would expect nothing), and
// etcdctl's covers the scenario that cancels every waiter.
func TestExpectNamesRealScenariosAndChecks(t *testing.T) {
	for _, a := range shipped {
		st, err := locks.Lookup(a.lock)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Expect) == 0 {
			t.Errorf("%s: no Expect", a.lock)
		}
		for sc, checks := range st.Expect {
			if _, err := scenarios.Lookup(sc); err != nil {
				t.Errorf("%s: Expect names %v", a.lock, err)
			}
			for c := range checks {
				if !slices.Contains(verdict.CheckNames, c) {
					t.Errorf("%s: Expect[%s] names check %q, not one of %v", a.lock, sc, c, verdict.CheckNames)
				}
			}
		}
	}
	st, _ := locks.Lookup("etcdctl")
	found := false
	for sc := range st.Expect {
		s, _ := scenarios.Lookup(sc)
		for _, step := range s.Steps {
			if f, err := chaos.Lookup(step.Fault); err == nil && f.Cost() == chaos.CostCancelledWaits {
				found = found || st.Expect[sc][verdict.Liveness] == verdict.Any
			}
		}
	}
	if !found {
		t.Error("etcdctl's Expect does not un-assert liveness where every waiter is cancelled")
	}
}
