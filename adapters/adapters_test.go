package adapters_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockbench/lockbench/adapters"
	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/etcd"
	"github.com/lockbench/lockbench/etcd/cluster/clustertest"
	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/etcd/locktest"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if goAdapterDir != "" {
		os.RemoveAll(goAdapterDir)
	}
	clustertest.Close()
	if zkEns != nil {
		zkEns.Close()
	}
	if kids := children(); len(kids) > 0 {
		os.Stderr.WriteString("adapter processes left behind: " + strings.Join(kids, "; ") + "\n")
		code = 1
	}
	os.Exit(code)
}

func endpoints(t *testing.T) []string { return clustertest.Shared(t).Endpoints() }

// procs lists the live processes (pid and command line) that keep
// accepts, given the pid, the ppid and the command line.
func procs(keep func(pid, ppid, cmd string) bool) []string {
	dirs, _ := os.ReadDir("/proc")
	var out []string
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		stat, err1 := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		raw, err2 := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err1 != nil || err2 != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		cmd := strings.ReplaceAll(string(raw), "\x00", " ")
		if len(f) > 1 && keep(d.Name(), f[1], cmd) {
			out = append(out, d.Name()+" "+cmd)
		}
	}
	return out
}

// children lists this test process's live child processes: after each
// test, an adapter left behind is one of them. The ZooKeeper ensemble's
// members, children until TestMain closes it, are not.
func children() []string {
	me := strconv.Itoa(os.Getpid())
	return procs(func(_, ppid, cmd string) bool { return ppid == me && !strings.Contains(cmd, zkMember) })
}

// zkMember is in the command line of every ensemble member's JVM.
const zkMember = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

// withMarker lists the live processes whose command line holds marker:
// a grandchild of the test, whose parent is not the test.
func withMarker(marker string) []string {
	return procs(func(_, _, cmd string) bool { return strings.Contains(cmd, marker) })
}

// noneLeft fails t, at its end, if an adapter process remains.
func noneLeft(t *testing.T) { noneLeftOf(t, "") }

// noneLeftOf is noneLeft for the children whose command line holds
// name: a test running in parallel with others checks only its own.
func noneLeftOf(t *testing.T, name string) {
	t.Cleanup(func() {
		var left []string
		for _, kid := range children() {
			if strings.Contains(kid, name) {
				left = append(left, kid)
			}
		}
		if len(left) > 0 {
			t.Errorf("adapter processes left behind: %v", left)
		}
	})
}

// goTool is the go command: on PATH under go test, else the toolchain's
// usual place.
func goTool() string {
	if gobin, err := exec.LookPath("go"); err == nil {
		return gobin
	}
	return "/usr/local/go/bin/go"
}

var (
	goAdapterOnce sync.Once
	goAdapterBin  string
	goAdapterErr  error
	goAdapterDir  string
)

// goAdapter builds adapters/go-mutex once for the package.
func goAdapter(t *testing.T) *adapters.Program {
	t.Helper()
	goAdapterOnce.Do(func() {
		goAdapterDir, goAdapterErr = os.MkdirTemp("", "lockbench-go-mutex-")
		if goAdapterErr != nil {
			return
		}
		goAdapterBin = filepath.Join(goAdapterDir, "go-mutex")
		out, err := exec.Command(goTool(), "build", "-o", goAdapterBin, "./go-mutex").CombinedOutput()
		if err != nil {
			goAdapterErr = errors.New("go build ./go-mutex: " + err.Error() + ": " + string(out))
		}
	})
	if goAdapterErr != nil {
		t.Fatal(goAdapterErr)
	}
	return &adapters.Program{Name: "go-mutex", Command: []string{goAdapterBin}}
}

func TestGoAdapterConformance(t *testing.T) {
	eps := endpoints(t)
	noneLeft(t)
	p := goAdapter(t)
	locktest.Run(t, p.Factory().Locks(), locktest.Env{Endpoints: eps})
}

func TestPythonEtcd3Conformance(t *testing.T) {
	eps := endpoints(t)
	noneLeft(t)
	needs(t, python)
	failures := locktest.Check(adapters.PythonEtcd3.Factory().Locks(), locktest.Env{Endpoints: eps, Timeout: 40 * time.Second})
	// Debian's python3-etcd3 0.12.0 passes tenacity (8.2 in bookworm) a
	// wait callback of the old two-argument form, so Lock.acquire raises
	// TypeError whenever it has to wait: the subtests with a waiter fail
	// on that, and only on that; the others must pass.
	known := map[string]bool{}
	for _, f := range failures {
		if strings.Contains(f.Message, pythonWaitBug) {
			known[f.Subtest] = true
		}
	}
	for _, f := range failures {
		if known[f.Subtest] && (f.Subtest == "Exclusion" || f.Subtest == "Cancel") {
			t.Logf("known python-etcd3 failure: %s", f)
			continue
		}
		t.Errorf("%s", f)
	}
}

// pythonWaitBug is what python-etcd3 0.12.0's Lock.acquire raises under
// tenacity ≥ 7 once it must wait.
const pythonWaitBug = "missing 1 required positional argument: 'delay_since_first_attempt'"

// sh is a Program running script with /bin/sh; $0 is marker.
func sh(name, script string) *adapters.Program {
	return &adapters.Program{Name: name, Command: []string{"/bin/sh", "-c", script, "lockbench-test-" + name}, CloseWait: 300 * time.Millisecond}
}

// liar answers granted to every lock without asking etcd.
const liar = `n=0
while read -r line; do
  case "$line" in
  *'"lock"'*) n=$((n+1)); echo "{\"reply\":\"granted\",\"token\":$n,\"key\":\"$LOCKBENCH_LOCK\",\"lease\":\"1\"}" ;;
  *'"unlock"'*) echo '{"reply":"released"}' ;;
  *'"close"'*) echo '{"reply":"closed"}'; exit 0 ;;
  esac
done`

func TestLyingAdapterIsCaught(t *testing.T) {
	eps := endpoints(t)
	noneLeft(t)
	failures := locktest.Check(sh("liar", liar).Factory().Locks(), locktest.Env{Endpoints: eps, Timeout: 20 * time.Second})
	bySubtest := map[string]bool{}
	for _, f := range failures {
		t.Logf("caught: %s", f)
		bySubtest[f.Subtest] = true
	}
	// Its grants have no key in etcd (deterministic), and its holders
	// overlap or lose updates (as the goroutines fall).
	if !bySubtest["Tokens"] || !bySubtest["Exclusion"] {
		t.Errorf("locktest did not catch an adapter that grants without etcd in Tokens and Exclusion: %v", failures)
	}
}

// offline is an etcd client with endpoints and no server: the Factory
// reads only its endpoints.
func offline(t *testing.T) *clientv3.Client {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://127.0.0.1:9"}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func newLocker(t *testing.T, p *adapters.Program) locks.Locker {
	t.Helper()
	l, err := p.Factory()(context.Background(), offline(t), etcdlocks.Options{Options: locks.Options{TTL: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	return l
}

func TestSilentAdapterIsKilledAtTheDeadline(t *testing.T) {
	noneLeft(t)
	const marker = "987651"
	l := newLocker(t, sh("silent", "sleep "+marker+" & wait"))
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := l.Lock(ctx)
	took := time.Since(start)
	if err == nil {
		t.Fatal("Lock of a silent adapter returned a grant")
	}
	t.Logf("%v after %s", err, took)
	if took > time.Second {
		t.Errorf("Lock took %s, its context ended after 400ms", took)
	}
	if errors.Is(err, locks.ErrNotAcquired) {
		t.Errorf("Lock killed mid-request: %v wraps ErrNotAcquired, but the outcome is unknown", err)
	}
	for _, want := range []string{"adapter silent", "client ", `"op":"lock"`, "context"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if !errors.Is(err, adapters.ErrProcess) {
		t.Errorf("error %v does not wrap ErrProcess", err)
	}
	// The whole group went: the adapter's own child too.
	if left := withMarker(marker); len(left) > 0 {
		t.Errorf("the adapter's child survived the kill: %v", left)
	}
}

func TestMalformedLineNamesTheAdapter(t *testing.T) {
	noneLeft(t)
	l := newLocker(t, sh("garbled", `read -r line; echo "oops: not the protocol" >&2; echo "granted!"; sleep 987652`))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := l.Lock(ctx)
	if err == nil {
		t.Fatal("Lock returned a grant from a malformed line")
	}
	for _, want := range []string{"adapter garbled", `malformed line "granted!"`, `"op":"lock"`, "stderr: oops: not the protocol"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if errors.Is(err, locks.ErrNotAcquired) {
		t.Errorf("%v wraps ErrNotAcquired after a request that may have been acted on", err)
	}
	if ctx.Err() != nil {
		t.Errorf("the malformed line was reported only at the deadline")
	}
}

func TestExitedAdapterIsReplacedByTheNextLock(t *testing.T) {
	noneLeft(t)
	starts := filepath.Join(t.TempDir(), "starts")
	l := newLocker(t, sh("dying", `echo started >>`+starts+`; read -r line; echo "cannot go on" >&2; exit 3`))
	for i := 1; i <= 2; i++ {
		_, err := l.Lock(context.Background())
		if err == nil {
			t.Fatal("Lock returned a grant from an adapter that exited")
		}
		for _, want := range []string{"adapter dying", "exit status 3", "stderr: cannot go on"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Lock %d: error %q does not say %q", i, err, want)
			}
		}
	}
	b, _ := os.ReadFile(starts)
	if n := strings.Count(string(b), "started"); n != 2 {
		t.Errorf("%d processes started for 2 Locks, want one each", n)
	}
}

func TestAdapterErrorOutcomes(t *testing.T) {
	noneLeft(t)
	l := newLocker(t, sh("refuser", `read -r line; echo '{"reply":"error","outcome":"certain","error":"busy"}'
read -r line; echo '{"reply":"error","outcome":"unknown","error":"lost track"}'
read -r line; echo '{"reply":"closed"}'`))
	_, err := l.Lock(context.Background())
	if !errors.Is(err, locks.ErrNotAcquired) || !strings.Contains(err.Error(), "busy") {
		t.Errorf("certain error: %v, want one wrapping ErrNotAcquired saying busy", err)
	}
	_, err = l.Lock(context.Background())
	if err == nil || errors.Is(err, locks.ErrNotAcquired) || !strings.Contains(err.Error(), "lost track") {
		t.Errorf("unknown error: %v, want one not wrapping ErrNotAcquired saying lost track", err)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// state is a process's state letter in /proc (S sleeping, T stopped, …).
func state(t *testing.T, pid int) string {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "gone"
	}
	return strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))[0]
}

// pidOf is the only child of the test whose command line holds marker.
func pidOf(t *testing.T, marker string) int {
	t.Helper()
	for _, k := range children() {
		if strings.Contains(k, marker) {
			pid, _ := strconv.Atoi(strings.Fields(k)[0])
			return pid
		}
	}
	t.Fatalf("no adapter process with %q among %v", marker, children())
	return 0
}

func TestKillStopContActOnTheProcess(t *testing.T) {
	noneLeft(t)
	l := newLocker(t, sh("liar", liar))
	g, err := l.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p := l.(locks.Process)
	pid := pidOf(t, "lockbench-test-liar")
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, "T")
	if err := p.Cont(); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, "S")
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if s := state(t, pid); s != "gone" {
		t.Errorf("after Kill the process is %s, want reaped", s)
	}
	select {
	case <-g.Lost:
	case <-time.After(time.Second):
		t.Error("the grant's Lost did not close when its process was killed")
	}
	if err := l.Unlock(context.Background(), g); err == nil {
		t.Error("Unlock of a grant whose process was killed succeeded")
	}
	// The next Lock starts a fresh process.
	if _, err := l.Lock(context.Background()); err != nil {
		t.Fatalf("Lock after Kill: %v", err)
	}
	if pid2 := pidOf(t, "lockbench-test-liar"); pid2 == pid {
		t.Errorf("Lock after Kill reused pid %d", pid)
	}
	// Close of a stopped process that ignores close: thawed, killed.
	p.Stop()
	start := time.Now()
	if err := l.Close(context.Background()); err != nil {
		t.Logf("Close: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Close took %s", took)
	}
}

func waitState(t *testing.T, pid int, want string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for state(t, pid) != want {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is %s, want %s", pid, state(t, pid), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLostEventClosesLost(t *testing.T) {
	noneLeft(t)
	l := newLocker(t, sh("loser", `read -r line; echo "{\"reply\":\"granted\",\"token\":7,\"key\":\"$LOCKBENCH_LOCK/k\",\"lease\":\"ab\"}"; sleep 0.2; echo '{"event":"lost"}'; sleep 987653`))
	g, err := l.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if g.Token != 7 || g.Lease != 0xab || g.Key != "locks/lock/k" {
		t.Errorf("grant %+v, want token 7, lease ab, the adapter's key", g)
	}
	select {
	case <-g.Lost:
	case <-time.After(2 * time.Second):
		t.Error("Lost did not close on the lost event")
	}
}

func TestMissingRuntimeIsNamed(t *testing.T) {
	p := &adapters.Program{Name: "nowhere", Command: []string{"/nonexistent/python"},
		Check: func(context.Context) error { return errors.New("needs /nonexistent/python: apt-get install nothing") }}
	_, err := p.Factory()(context.Background(), offline(t), etcdlocks.Options{})
	if err == nil || !strings.Contains(err.Error(), "apt-get install nothing") || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("Factory with a missing runtime: %v, want the check's error naming the adapter", err)
	}
	// Without a check, a command that cannot start fails the Factory.
	p = &adapters.Program{Name: "nowhere", Command: []string{"/nonexistent/python"}}
	_, err = p.Factory()(context.Background(), offline(t), etcdlocks.Options{})
	if !errors.Is(err, adapters.ErrProcess) || !strings.Contains(err.Error(), "/nonexistent/python") {
		t.Errorf("Factory of a command that cannot start: %v, want a process error naming it", err)
	}
}

// TestAdapterDiesWithLockbench: a lockbench killed by SIGKILL (here a
// copy of this test binary, running helperStartsAdapter) leaves no adapter
// behind: the kernel kills it (Pdeathsig).
func TestAdapterDiesWithLockbench(t *testing.T) {
	if os.Getenv("LOCKBENCH_TEST_HELPER") == "1" {
		helperStartsAdapter()
		return
	}
	noneLeft(t)
	const marker = "987654"
	cmd := exec.Command(os.Args[0], "-test.run=^TestAdapterDiesWithLockbench$")
	cmd.Env = append(os.Environ(), "LOCKBENCH_TEST_HELPER=1", "LOCKBENCH_TEST_MARKER="+marker)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The helper says "started" once its adapter runs.
	buf := make([]byte, 7)
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "started" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper: %q, %v", buf, err)
	}
	if left := withMarker("sleep " + marker); len(left) != 1 {
		t.Errorf("adapter processes before the kill: %v, want one", left)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	deadline := time.Now().Add(3 * time.Second)
	for len(withMarker("sleep "+marker)) > 0 {
		if time.Now().After(deadline) {
			left := withMarker("sleep " + marker)
			for _, p := range left {
				pid, _ := strconv.Atoi(strings.Fields(p)[0])
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("adapter outlived the SIGKILLed lockbench: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// helperStartsAdapter starts an adapter that never answers, says so, and
// waits in its Lock to be killed.
func helperStartsAdapter() {
	p := &adapters.Program{Name: "orphan", Command: []string{"sleep", os.Getenv("LOCKBENCH_TEST_MARKER")}}
	cli, _ := clientv3.New(clientv3.Config{Endpoints: []string{"http://127.0.0.1:9"}, Logger: zap.NewNop()})
	l, err := p.Factory()(context.Background(), cli, etcdlocks.Options{})
	if err != nil {
		os.Exit(2)
	}
	go func() {
		// Wait for the adapter to be a child of this process, then say so.
		for len(children()) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		os.Stdout.WriteString("started")
	}()
	l.Lock(context.Background())
	os.Exit(3)
}

// TestCrashClientKillsTheAdapter runs holder-crash with the go-mutex
// adapter (each start logged by a shell that execs it): the restarted
// client runs a fresh process, the run passes exclusion and liveness, and
// no process is left after it.
func TestCrashClientKillsTheAdapter(t *testing.T) {
	eps := endpoints(t)
	noneLeft(t)
	bin := goAdapter(t).Command[0]
	starts := filepath.Join(t.TempDir(), "starts")
	prog := &adapters.Program{Name: "go-mutex", Command: []string{"/bin/sh", "-c", "echo $$ >>" + starts + "; exec " + bin}}
	name := "test-go-mutex-logged"
	// Registered once per test binary (-count=N runs the test N times):
	// the strategy starts the current run's program.
	loggedProg.Store(prog)
	registerOnce.Do(func() {
		etcdlocks.Register(locks.Strategy{Name: name, Description: "test only", Origin: "test", OwnLease: true, Hidden: true},
			func(ctx context.Context, cli *clientv3.Client, opts etcdlocks.Options) (locks.Locker, error) {
				return loggedProg.Load().Factory()(ctx, cli, opts)
			})
	})
	sc, err := scenarios.Lookup("holder-crash")
	if err != nil {
		t.Fatal(err)
	}
	out, err := runner.Run(context.Background(), runner.Config{Backend: etcd.Backend{}, Scenario: sc, Lock: name, Seed: 1, Prefix: "/lockbench/test-crash-adapter/",
		Endpoints: eps, Cluster: clustertest.Shared(t)})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(starts)
	pids := strings.Fields(string(b))
	if len(pids) != sc.Clients+1 {
		t.Errorf("%d adapter processes started, want one per client and one for the restart: %v", len(pids), pids)
	}
	res := check.Check(out.Events, check.Options{LivenessBound: sc.TTL() + clustertest.Shared(t).Election()})
	for _, c := range []string{verdict.Exclusion, verdict.Liveness} {
		if r := res.Checks[c]; r.Verdict != verdict.Pass {
			t.Errorf("%s %s: %+v", c, r.Verdict, r)
		}
	}
}

var (
	registerOnce sync.Once
	loggedProg   atomic.Pointer[adapters.Program]
)
