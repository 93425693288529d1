package redisbackend_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/cli"
	"github.com/lockbench/lockbench/redis/redisbackend"
	"github.com/lockbench/lockbench/redis/rediscluster/redistest"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/verdict"
)

// TestRedisThroughTheRunner runs the Redis locks through `lockbench run`
// as a user would: redis-setnx on the two Redis scenarios of examples/
// (the failover of a replicated grant keeps the lock, the failover of an
// unreplicated one grants it twice with one token), and redlock under the
// built-in bare-majority restart (two holders at once). Each leaves a
// normal run folder (config.json naming the backend and its deployment,
// history, summary, report.html) that `report` reads again.
func TestRedisThroughTheRunner(t *testing.T) {
	redistest.Need(t)
	for _, tc := range []struct {
		lock, scenario string
		kind           string
		members        int
		code           int
		want           map[string]verdict.Verdict
	}{
		{"redis-setnx", "../../examples/redis-failover.yaml", "redis-sentinel", 3, cli.ExitPass, map[string]verdict.Verdict{verdict.Exclusion: verdict.Pass, verdict.Fencing: verdict.Pass}},
		{"redis-setnx", "redis-primary-crash-unreplicated", "redis-sentinel", 3, cli.ExitViolation, map[string]verdict.Verdict{verdict.Exclusion: verdict.Fail, verdict.Fencing: verdict.Fail}},
		{"redlock", "redis-bare-majority-restart", "redis-instances", 5, cli.ExitViolation, map[string]verdict.Verdict{verdict.Exclusion: verdict.Fail, verdict.Fencing: verdict.Pass}},
	} {
		t.Run(tc.lock+"/"+filepath.Base(tc.scenario), func(t *testing.T) {
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := cli.Run([]string{"run", "--lock", tc.lock, "--scenario", tc.scenario, "--out", out}, &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, stdout.String(), stderr.String())
			}
			runs, _ := os.ReadDir(out)
			if len(runs) != 1 {
				t.Fatalf("want one run folder, got %v", runs)
			}
			dir := filepath.Join(out, runs[0].Name())
			var cfg rundir.Config
			readJSON(t, filepath.Join(dir, rundir.ConfigFile), &cfg)
			if cfg.Backend != "redis" || cfg.Cluster.Kind != tc.kind || cfg.Cluster.Members != tc.members {
				t.Errorf("config.json: backend %q, cluster %+v", cfg.Backend, cfg.Cluster)
			}
			var sum report.Summary
			readJSON(t, filepath.Join(dir, rundir.SummaryFile), &sum)
			for check, want := range tc.want {
				if got := sum.Checks[check].Verdict; got != want {
					t.Errorf("%s: %s, want %s", check, got, want)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, rundir.HTMLFile)); err != nil {
				t.Error(err)
			}
			stdout.Reset()
			stderr.Reset()
			if code := cli.Run([]string{"report", dir, "--no-html"}, &stdout, &stderr); code != tc.code {
				t.Errorf("report: exit %d, want %d\n%s", code, tc.code, stderr.String())
			}
		})
	}
}

// TestSuiteRunsBothBackends: one suite runs a Redis and an etcd lock,
// each Redis cell on a deployment of its own; a scenario for Redis only
// (backends) has no etcd cell, and the cell whose fault Redis cannot take
// (a partition of a member from its peers) is skipped with a note.
func TestSuiteRunsBothBackends(t *testing.T) {
	redistest.Need(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := cli.Run([]string{"suite", "--locks", "redis-setnx,queue", "--scenarios", "../../examples/redis-failover.yaml,partition-leader",
		"--quiet", "--out", out}, &stdout, &stderr)
	if code != cli.ExitPass {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	runs, _ := filepath.Glob(filepath.Join(out, "suite-*", "suite.json"))
	if len(runs) != 1 {
		t.Fatalf("want one suite.json, got %v", runs)
	}
	var s report.Suite
	readJSON(t, runs[0], &s)
	got := map[string]string{}
	for _, c := range s.Cells {
		got[c.Lock+" × "+c.Scenario] = string(c.Checks[verdict.Exclusion].Verdict)
	}
	want := map[string]string{"redis-setnx × redis-failover": "pass", "queue × partition-leader": "pass"}
	if len(got) != len(want) {
		t.Errorf("cells %v, want %v", got, want)
	}
	for cell, v := range want {
		if got[cell] != v {
			t.Errorf("%s: exclusion %q, want %s", cell, got[cell], v)
		}
	}
	if !bytes.Contains(stderr.Bytes(), []byte("skipped redis-setnx × partition-leader")) || !bytes.Contains(stderr.Bytes(), []byte("not one peer network")) {
		t.Errorf("no note of the skipped Redis cell:\n%s", stderr.String())
	}
	if bytes.Contains(stderr.Bytes(), []byte("queue × redis-failover")) {
		t.Errorf("a note of an etcd cell of a scenario for Redis only:\n%s", stderr.String())
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

// TestRefusesStep: a Redis deployment refuses, before the run, a step its
// lock's deployment cannot take — Redlock's primaries have no replication
// link and no leader, and each deployment has its own nodes — and takes
// the others, restart-empty among them (Redis persists nothing).
func TestRefusesStep(t *testing.T) {
	step := func(fault, target string) chaos.Step {
		f, err := chaos.Lookup(fault)
		if err != nil {
			t.Fatal(err)
		}
		tg, err := chaos.ParseTarget(target, f)
		if err != nil {
			t.Fatal(err)
		}
		return chaos.Step{Fault: f, Target: tg}
	}
	for _, tc := range []struct {
		lock, fault, target string
		want                string // "" when taken
	}{
		{"redlock", "cut-replication", "", "independent primaries"},
		{"redlock", "crash-member", "leader", "no Sentinel names a leader"},
		{"redlock", "crash-member", "member:5", "member:0..4"},
		{"redis-setnx", "crash-member", "member:3", "member:0..2"},
		{"redis-setnx", "cut-replication", "", ""},
		{"redis-setnx", "crash-member", "leader", ""},
		{"redis-setnx", "restart-empty", "follower", ""},
		{"redlock", "restart-empty", "member:4", ""},
		{"redlock", "pause-client", "holder", ""},
		{"redlock", "clock-jump", "member:2", ""},
		{"redis-setnx", "clock-jump", "leader", ""},
	} {
		st := step(tc.fault, tc.target)
		err := redisbackend.Deployer{}.RefusesStep(tc.lock, st)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %s %s refused: %v", tc.lock, tc.fault, tc.target, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %s %s: %v, want a refusal naming %q", tc.lock, tc.fault, tc.target, err, tc.want)
		}
		if err := (redisbackend.Deployer{}).Refuses(st.Fault); err != nil {
			t.Errorf("%s refused by every Redis deployment: %v", tc.fault, err)
		}
	}
}
