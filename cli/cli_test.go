package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = Run(args, &o, &e)
	return code, o.String(), e.String()
}

// TestBadInput: each bad input gives one clear message naming what was
// wrong and what is valid, exit 2, and writes nothing.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	badHistory := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(badHistory, []byte(`{"time":1,"process":0,"type":"invoke","f":"acquire"}`+"\n"+`{"time":2,"process":0,"type":"ok",`+"\n"), 0o644)
	badType := filepath.Join(dir, "badtype.jsonl")
	os.WriteFile(badType, []byte(`{"time":1,"process":0,"type":"done","f":"acquire"}`+"\n"), 0o644)
	badF := filepath.Join(dir, "badf.jsonl")
	os.WriteFile(badF, []byte(`{"time":1,"process":0,"type":"invoke","f":"acquire","lock":"l"}`+"\n"+`{"time":2,"process":0,"type":"ok","f":"aquire","lock":"l","token":3}`+"\n"), 0o644)
	badTime := filepath.Join(dir, "badtime.jsonl")
	os.WriteFile(badTime, []byte(`{"time":"1","process":0,"type":"invoke","f":"acquire"}`+"\n"), 0o644)
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	// redis-clock-jump's steps without its backends line: etcd and
	// ZooKeeper refuse the fault itself, saying what clock their leases
	// and sessions expire on.
	clockJump := "name: jump\nclients: 2\nduration: 2s\nworkload: {kind: hold}\nsteps:\n  - {at: 1s, fault: clock-jump, target: member:0, by: 60s}\n"
	out := filepath.Join(dir, "runs")

	tests := []struct {
		args []string
		want []string // substrings of stderr
	}{
		{[]string{"list", "foo"}, []string{"list takes no arguments", `"foo"`}},
		{[]string{"redis", "--out", out, "--locks", "zookeeper"}, []string{`unknown lock "zookeeper"`}},
		{[]string{"redis", "--out", out, "--seeds", "0"}, []string{"--seeds 0"}},
		{[]string{"redis", "--out", out, "--faults", "meteor"}, []string{"flag provided but not defined", "--faults", "lockbench redis --help"}},
		{[]string{"run", "--out", out, "--lock", "redis-setnx", "--scenario", "redis-bare-majority-restart"}, []string{"step 1 (crash-member member:3)", "redis-setnx's deployment has nodes member:0..2"}},
		{[]string{"run", "--out", out, "--lock", "redlock", "--scenario", "redis-primary-crash-unreplicated"}, []string{"step 1 (cut-replication)", "independent primaries"}},
		{[]string{"run", "--out", out, "--scenario", writeScenario(t, "name: empty\nclients: 2\nduration: 2s\nworkload: {kind: hold}\nsteps:\n  - {at: 1s, fault: restart-empty, target: leader}\n")}, []string{"restart-empty", "own data"}},
		{[]string{"run", "--out", out, "--lock", "zk-queue", "--scenario", writeScenario(t, "name: empty\nclients: 2\nduration: 2s\nworkload: {kind: hold}\nsteps:\n  - {at: 1s, fault: restart-empty, target: leader}\n")}, []string{"restart-empty", "own data"}},
		{[]string{"run", "--out", out, "--lock", "queue", "--scenario", "redis-clock-jump"}, []string{"scenario redis-clock-jump is for redis only, and queue runs on etcd"}},
		{[]string{"run", "--out", out, "--lock", "queue", "--scenario", writeScenario(t, clockJump)}, []string{"clock-jump", "Go's monotonic clock", "Lease.Remaining"}},
		{[]string{"run", "--out", out, "--lock", "zk-queue", "--scenario", writeScenario(t, clockJump)}, []string{"clock-jump", "System.nanoTime"}},
		{[]string{"run", "--out", out, "--lock", "redlock", "--endpoints", "127.0.0.1:2379"}, []string{"--endpoints: redlock runs on a redis deployment that lockbench starts for it"}},
		{[]string{"run", "--out", out, "--lock", "redis-setnx", "--keepalive", "auto"}, []string{"--keepalive: redis-setnx runs on a redis deployment", "does not apply"}},
		{[]string{"run", "--out", out, "--lock", "redis-setnx", "--scenario", writeScenario(t, "name: etcd-only\nclients: 2\nduration: 2s\nworkload: {kind: hold}\nbackends: [etcd]\n")}, []string{"scenario etcd-only is for etcd only, and redis-setnx runs on redis"}},
		{[]string{"run", "--out", out, "--scenario", writeScenario(t, "name: mongo\nclients: 2\nduration: 2s\nworkload: {kind: hold}\nbackends: [mongo]\n")}, []string{`backends: unknown backend "mongo"`, "valid backends are etcd, redis, zookeeper"}},
		{[]string{"run", "--out", out, "--scenario", writeScenario(t, "name: t9\nclients: 4\nduration: 2s\nworkload: {kind: hold}\nsteps:\n  - {at: 1s, fault: crash-client, target: \"client:9\"}\n")}, []string{".yaml:6", "client:9", "clients 0..3"}},
		{[]string{"run", "--out", out, "--lock", "nope"}, []string{`unknown lock "nope"`, "mutex"}},
		{[]string{"run", "--out", out, "--scenario", "nope"}, []string{`unknown scenario "nope"`, "contention"}},
		{[]string{"run", "--out", out, "--clients", "0"}, []string{"--clients 0", "≥1"}},
		{[]string{"run", "--out", out, "--clients", "-3"}, []string{"--clients -3"}},
		{[]string{"run", "--out", out, "--duration", "0s"}, []string{"--duration 0s", "> 0"}},
		{[]string{"run", "--out", out, "--duration", "-1s"}, []string{"--duration -1s"}},
		{[]string{"run", "--out", out, "--duration", "ten"}, []string{`invalid value "ten"`, "duration"}},
		{[]string{"run", "--out", out, "--hold", "-1ms"}, []string{"--hold -1ms"}},
		{[]string{"run", "--out", out, "--lease-ttl", "1500ms"}, []string{"lease", "whole number of seconds"}},
		{[]string{"run", "--out", out, "--keepalive", "sometimes"}, []string{"--keepalive sometimes", "auto", "seed"}},
		{[]string{"run", "--out", out, "--rpc-timeout", "-1s"}, []string{"--rpc-timeout -1s", "≥0"}},
		{[]string{"suite", "--out", out, "--rpc-timeout", "-5ms"}, []string{"--rpc-timeout -5ms", "≥0"}},
		{[]string{"suite", "--out", out, "--first-seed", "0"}, []string{"--first-seed 0", "≥1"}},
		{[]string{"suite", "--out", out, "--seeds", "3", "--first-seed", "9223372036854775807"}, []string{"--first-seed 9223372036854775807", "room"}},
		{[]string{"bench", "--out", out, "--rpc-timeout", "-5ms"}, []string{"--rpc-timeout -5ms", "≥0"}},
		{[]string{"run", "--out", out, "--shared-conns", "-1"}, []string{"--shared-conns -1", "≥0"}},
		{[]string{"run", "--out", out, "--shared-conns", "2", "--scenario", "waiter-crash"}, []string{"waiter-crash", "client faults", "without --shared-conns"}},
		{[]string{"bench", "--out", out, "--shared-conns", "-3"}, []string{"--shared-conns -3"}},
		{[]string{"bench", "--out", out, "--ramp", "5s", "--duration", "5s"}, []string{"--ramp 5s", "shorter than the duration"}},
		{[]string{"bench", "--out", out, "--lease-ttl", "90ms"}, []string{"--lease-ttl 90ms", "whole number of seconds"}},
		{[]string{"run", "--out", out, "--clients", "100000000"}, []string{"--clients 100000000", "must be ≤", "on this machine"}},
		{[]string{"run", "--out", out, "--clients", "100000000", "--shared-conns", "4"}, []string{"--clients 100000000", "must be ≤"}},
		{[]string{"run", "--out", out, "--worker", "5/4"}, []string{"--worker", `"5/4"`, "1..4"}},
		{[]string{"run", "--out", out, "--worker", "two"}, []string{"--worker", "I/N"}},
		{[]string{"run", "--out", out, "--worker", "2/4"}, []string{"--worker 2/4", "--endpoints"}},
		{[]string{"run", "--out", out, "--worker", "2/4", "--endpoints", "http://127.0.0.1:1"}, []string{"--worker 2/4", "--prefix"}},
		{[]string{"run", "--out", out, "--worker", "2/4", "--endpoints", "http://127.0.0.1:1", "--prefix", "/w/", "--scenario", writeScenario(t, "name: r\nclients: 4\nduration: 2s\nworkload: {kind: hold, rate: 50/s}\n")}, []string{"worker 2/4", "open-loop"}},
		{[]string{"run", "--out", out, "--worker", "2/4", "--endpoints", "http://127.0.0.1:1", "--prefix", "/w/", "--scenario", "many-locks"}, []string{"worker 2/4", "16 lock names"}},
		{[]string{"run", "--out", out, "--worker", "2/9", "--endpoints", "http://127.0.0.1:1", "--prefix", "/w/", "--scenario", "waiter-crash"}, []string{"worker 2/9", "5 clients", "9 workers"}},
		{[]string{"run", "--out", out, "--clock-skew", "5ms"}, []string{"--clock-skew", "--worker I/N"}},
		{[]string{"run", "--out", out, "--worker", "1/2", "--endpoints", "http://127.0.0.1:1", "--prefix", "/w/", "--clock-skew", "-5ms"}, []string{"--clock-skew -5ms", "≥0"}},
		{[]string{"merge", "--out", out, dir}, []string{"neither a suite folder", "nor a worker's run folder"}},
		{[]string{"clean"}, []string{"--endpoints is required"}},
		{[]string{"clean", "--endpoints", ""}, []string{`--endpoints ""`}},
		{[]string{"clean", "--endpoints", "http://127.0.0.1:1", "--prefix", "/"}, []string{`--prefix "/"`, "must start with / and not be /"}},
		{[]string{"clean", "--endpoints", "http://127.0.0.1:1", "--prefix", ""}, []string{`--prefix ""`}},
		{[]string{"clean", "--endpoints", "http://127.0.0.1:1", "--prefix", "lockbench/"}, []string{`--prefix "lockbench/"`}},
		{[]string{"clean", "--endpoints", "127.0.0.1:2379"}, []string{`endpoint "127.0.0.1:2379"`, "http://HOST:PORT"}},
		{[]string{"clean", "--endpoints", "http://127.0.0.1:1", "extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"run", "--out", out, "--no-such-flag"}, []string{"no-such-flag"}},
		{[]string{"run", "--out", out, "extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"check"}, []string{"no history file"}},
		{[]string{"check", filepath.Join(dir, "missing.jsonl")}, []string{"missing.jsonl", "no such file"}},
		{[]string{"check", badHistory}, []string{"line 2"}},
		{[]string{"check", badType}, []string{"line 1", `"done"`, "invoke, ok, fail, info"}},
		{[]string{"check", badF}, []string{"badf.jsonl", "line 2", `"aquire"`, "acquire, release", "key-deleted"}},
		{[]string{"check", badTime}, []string{"line 1", `"time" must be an integer`, "got string"}},
		{[]string{"check", empty}, []string{"empty"}},
		{[]string{"frobnicate"}, []string{`unknown command "frobnicate"`, "run"}},
		{[]string{"help", "frobnicate"}, []string{`help "frobnicate"`, "unknown command", "regress"}},
		{nil, []string{"Usage"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d; stderr: %s", code, ExitUsage, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not mention %q", stderr, w)
				}
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n > 0 && len(tc.args) > 0 {
				t.Errorf("want one line of error, got %d:\n%s", n+1, stderr)
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("bad input wrote %s", out)
	}
}

// TestHelpExitsZero: every command's help, asked as CMD --help, CMD -h or
// help CMD, prints that command's usage to stdout with its flags spelled
// --flag (as the README spells them) and exits 0, whatever else is on the
// command line: regress's help wins over its required --base and never
// builds anything.
func TestHelpExitsZero(t *testing.T) {
	for cmd := range commands {
		for _, args := range [][]string{{cmd, "--help"}, {cmd, "-h"}, {"help", cmd}} {
			code, stdout, stderr := runCLI(t, args...)
			if code != ExitPass || !strings.Contains(stdout, "Usage: lockbench "+cmd) || stderr != "" {
				t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
			}
			for line := range strings.Lines(stdout) {
				if strings.HasPrefix(line, "  -") && !strings.HasPrefix(line, "  --") {
					t.Errorf("%q prints a flag as %q; want --flag", args, strings.TrimSpace(line))
				}
			}
		}
	}
	for _, args := range [][]string{{"regress", "--base", "HEAD", "--help"}, {"regress", "--locks", "queue", "-h"}, {"regress", "--base", "no-such-rev", "--help"}} {
		t0 := time.Now()
		code, stdout, stderr := runCLI(t, args...)
		if code != ExitPass || !strings.Contains(stdout, "--base string") || stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want regress's help, exit 0", args, code, stdout, stderr)
		}
		if el := time.Since(t0); el > 2*time.Second {
			t.Errorf("%q took %s: help must not build or run anything", args, el)
		}
	}
	code, stdout, _ := runCLI(t, "help")
	if code != ExitPass || !strings.Contains(stdout, "Usage:\n  lockbench run") {
		t.Errorf("help: exit %d, stdout %q; want the global usage", code, stdout)
	}
}

func TestCheckCleanAndViolatingHistories(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, lines ...string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
		return p
	}
	clean := write("clean.jsonl",
		`{"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}`,
		`{"time":1,"process":0,"type":"ok","f":"acquire","lock":"l","token":5}`,
		`{"time":2,"process":0,"type":"invoke","f":"release","lock":"l"}`,
		`{"time":3,"process":1,"type":"invoke","f":"acquire","lock":"l"}`,
		`{"time":4,"process":1,"type":"ok","f":"acquire","lock":"l","token":6}`)
	bad := write("bad.jsonl",
		`{"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}`,
		`{"time":1,"process":0,"type":"ok","f":"acquire","lock":"l","token":5}`,
		`{"time":3,"process":1,"type":"invoke","f":"acquire","lock":"l"}`,
		`{"time":4,"process":1,"type":"ok","f":"acquire","lock":"l","token":6}`)
	if code, out, errs := runCLI(t, "check", clean); code != ExitPass || !strings.Contains(out, "verdict pass") {
		t.Errorf("clean: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ := runCLI(t, "check", bad)
	if code != ExitViolation || !strings.Contains(out, "process 0") || !strings.Contains(out, "process 1") {
		t.Errorf("bad: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "check", bad, "--json")
	var rep struct{ Verdict string }
	if code != ExitViolation || json.Unmarshal([]byte(out), &rep) != nil || rep.Verdict != "fail" {
		t.Errorf("bad --json: exit %d\n%s", code, out)
	}
}

// TestRunWritesRunFolder is the foundation end to end: a real 3-member
// cluster, the mutex strategy, a history that checks clean.
func TestRunWritesRunFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, "run", "--lock", "mutex", "--scenario", "contention",
		"--clients", "4", "--duration", "2s", "--out", out, "--unsafe-no-fsync")
	if code != ExitPass {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, col := range []string{"acquisitions", "acq/s", "p50 ms", "p99 ms", "violations"} {
		if !strings.Contains(stdout, col) {
			t.Errorf("table lacks %q:\n%s", col, stdout)
		}
	}
	runs, _ := os.ReadDir(out)
	if len(runs) != 1 {
		t.Fatalf("want one run folder, got %v", runs)
	}
	dir := filepath.Join(out, runs[0].Name())
	var sum report.Summary
	readJSON(t, filepath.Join(dir, rundir.SummaryFile), &sum)
	if sum.Lock != "mutex" || sum.Scenario != "contention" || sum.Clients != 4 || sum.Verdict != "pass" {
		t.Errorf("summary: %+v", sum)
	}
	if sum.Acquisitions < 10 || sum.ThroughputPerS <= 0 || sum.LatencyMS["acquire"].P50 <= 0 {
		t.Errorf("implausible figures: %d acquisitions, %.1f/s, %+v", sum.Acquisitions, sum.ThroughputPerS, sum.LatencyMS)
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.HistoryFile)); err != nil {
		t.Error(err)
	}
	// The saved history re-checks the same.
	if code, out, _ := runCLI(t, "check", filepath.Join(dir, rundir.HistoryFile)); code != ExitPass {
		t.Errorf("re-check: exit %d\n%s", code, out)
	}
}

// TestUserScenarioRunsUnchanged runs the README's example scenario file
// as a user would.
func TestUserScenarioRunsUnchanged(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, "run", "--lock", "queue", "--scenario", "../examples/leader-crash-fenced.yaml",
		"--out", out, "--unsafe-no-fsync")
	if code != ExitPass {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	runs, _ := os.ReadDir(out)
	if len(runs) != 1 {
		t.Fatalf("want one run folder, got %v", runs)
	}
	var sum report.Summary
	readJSON(t, filepath.Join(out, runs[0].Name(), rundir.SummaryFile), &sum)
	if sum.Scenario != "leader-crash-fenced" || sum.Acquisitions == 0 || sum.Faults != 2 {
		t.Errorf("summary: scenario %q, %d acquisitions, %d faults (want 2)", sum.Scenario, sum.Acquisitions, sum.Faults)
	}
	for _, name := range []string{rundir.HistoryFile, rundir.ConfigFile, rundir.HTMLFile} {
		if _, err := os.Stat(filepath.Join(out, runs[0].Name(), name)); err != nil {
			t.Error(err)
		}
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

// TestInterruptLeavesNothingBehind sends SIGINT to a real lockbench run
// and checks that the run is written and marked interrupted, and that no
// listener or data folder of the cluster is left.
func TestInterruptLeavesNothingBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	bin := buildLockbench(t)
	tmp, out := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--duration", "60s", "--clients", "4", "--out", out, "--unsafe-no-fsync")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the cluster is up and the clients are running.
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(stderr.String(), "running") {
		if time.Now().After(deadline) {
			t.Fatalf("cluster never started:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	if err == nil || code != ExitInterrupted {
		t.Fatalf("exit %d (%v), want %d\n%s", code, err, ExitInterrupted, stderr.String())
	}
	// The console table says so too.
	if !strings.Contains(stdout.String(), "(interrupted)") || !strings.Contains(stdout.String(), "interrupted after") {
		t.Errorf("the table does not say interrupted:\n%s", stdout.String())
	}
	runs, _ := os.ReadDir(out)
	if len(runs) != 1 {
		t.Fatalf("want one run folder, got %v", runs)
	}
	dir := filepath.Join(out, runs[0].Name())
	var sum report.Summary
	readJSON(t, filepath.Join(dir, rundir.SummaryFile), &sum)
	if !sum.Interrupted {
		t.Error("summary not marked interrupted")
	}
	if sum.DurationS >= 30 {
		t.Errorf("run went on for %.1fs after the signal", sum.DurationS)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left in TMPDIR: %v", ents)
	}
	var cfg rundir.Config
	readJSON(t, filepath.Join(dir, rundir.ConfigFile), &cfg)
	for _, ep := range cfg.Cluster.Endpoints {
		u, _ := url.Parse(ep)
		if c, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
			c.Close()
			t.Errorf("something still listens on %s", u.Host)
		}
	}
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// buildLockbench builds cmd/lockbench once per test binary, for the tests
// that send it signals.
func buildLockbench(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lockbench-test-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "lockbench")
		if out, err := exec.Command("go", "build", "-o", builtBin, "../cmd/lockbench").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// writeScenario writes a scenario file into a temporary folder.
func writeScenario(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

// TestDesignListsEveryCommand: docs/design.md §9, the CLI's contract,
// names every command there is.
func TestDesignListsEveryCommand(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "## 9. CLI (contract)")
	sec, _, _ = strings.Cut(sec, "\n## ")
	if !ok {
		t.Fatal("docs/design.md has no §9")
	}
	for name := range commands {
		if !strings.Contains(sec, "`"+name+"`") {
			t.Errorf("docs/design.md §9 does not name the command %q", name)
		}
	}
}

// TestBadFlagValuesSayWhy: a value a flag cannot take says what is wrong
// with it for the flag's type, not the flag package's "parse error".
func TestBadFlagValuesSayWhy(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--duration", "3"}, `invalid value "3" for flag --duration: missing unit in duration "3" (a duration with its unit, e.g. 3s, 500ms, 1m30s)`},
		{[]string{"run", "--duration", "soon"}, `invalid value "soon" for flag --duration: invalid duration "soon"`},
		{[]string{"suite", "--seeds", "1.5"}, `invalid value "1.5" for flag --seeds: not a whole number`},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "parse error") {
			t.Errorf("%v: exit %d, stderr %q: want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestSuiteETA(t *testing.T) {
	for _, tc := range []struct {
		elapsed     time.Duration
		done, total int
		want        string
	}{
		{10 * time.Second, 2, 10, ""},
		{30 * time.Second, 3, 10, ", ~1m10s left"},
		{30 * time.Second, 10, 10, ""},
	} {
		if got := eta(tc.elapsed, tc.done, tc.total); got != tc.want {
			t.Errorf("eta(%s, %d, %d) = %q, want %q", tc.elapsed, tc.done, tc.total, got, tc.want)
		}
	}
}

// A bare run starts nothing: it says what run takes, exit 2.
func TestBareRunShowsUsage(t *testing.T) {
	code, stdout, stderr := runCLI(t, "run")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "lockbench run --lock NAME --scenario NAME") {
		t.Errorf("exit %d, stdout %q, stderr %q: want 2 and the usage", code, stdout, stderr)
	}
}

// An undefined flag a letter or two from one the command has is named.
func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--locks", "queue"}, "flag provided but not defined: --locks; did you mean --lock?"},
		{[]string{"suite", "--lock", "queue"}, "flag provided but not defined: --lock; did you mean --locks?"},
		{[]string{"suite", "--frobnicate", "1"}, "flag provided but not defined: --frobnicate (see"},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q: want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// Every --help fits a terminal: no line over 100 columns.
func TestHelpLinesFit(t *testing.T) {
	for _, cmd := range []string{"run", "suite", "bench", "check", "report", "compare", "merge", "regress", "cluster", "clean", "redis", "list"} {
		_, stdout, _ := runCLI(t, cmd, "--help")
		for line := range strings.Lines(stdout) {
			if n := utf8.RuneCountInString(strings.TrimRight(line, "\n")); n > 100 {
				t.Errorf("%s --help: a line of %d characters: %q", cmd, n, line)
			}
		}
	}
}
