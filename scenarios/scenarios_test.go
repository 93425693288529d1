package scenarios

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/verdict"
)

func TestBuiltinsParse(t *testing.T) {
	want := []string{"cancel-waiters", "client-isolation", "compaction-leader-move", "contention", "herd", "herd-hold", "holder-crash", "join-late", "late-answers", "late-unlock", "leader-kill",
		"leader-kill-holder-crash", "lease-expiry", "lease-expiry-fenced", "many-locks", "partition-leader", "release-lost", "release-race", "slow-clients", "waiter-crash", "waiter-isolation", "waiter-revoke"}

	if got := Names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("built-ins = %v, want %v", got, want)
	}
	for _, n := range want {
		s, err := Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		if s.Description == "" || len(s.Expect) == 0 {
			t.Errorf("%s: needs a description and expectations", n)
		}
	}
	ext := ExtendedNames()
	if want := []string{"delay-peers", "drop-peers", "leader-kill-long-hold", "redis-acquire-pause", "redis-bare-majority-restart", "redis-clock-jump", "redis-holder-pause", "redis-instance-restart-empty",
		"redis-primary-crash", "redis-primary-crash-unreplicated", "redis-primary-pause", "redis-steady", "replace-member", "snapshot-catchup"}; !reflect.DeepEqual(ext, want) {
		t.Errorf("extended set = %v, want %v", ext, want)
	}
	for _, n := range ext {
		s, err := Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		if s.Description == "" || len(s.Expect) == 0 || s.Source != "builtin:extended/"+n+".yaml" {
			t.Errorf("%s: needs a description and expectations; source %q", n, s.Source)
		}
		// The Redis study's cells (lockbench redis) are for Redis only, so
		// that no etcd suite makes a cell of them; the others are etcd's
		// member faults.
		redis := strings.HasPrefix(n, "redis-")
		if redis != (reflect.DeepEqual(s.Backends, []string{"redis"})) || !redis && !s.Needs().Members {
			t.Errorf("%s: backends %v, needs %+v: want redis-* for Redis only, the others with member faults", n, s.Backends, s.Needs())
		}
	}
	// Needs carries what the harness reads to start each cell's cluster.
	for name, want := range map[string]chaos.Needs{
		"drop-peers":                       {Members: true, PeerRelays: true},
		"delay-peers":                      {Members: true, PeerRelays: true},
		"snapshot-catchup":                 {Members: true, SnapshotCount: true},
		"replace-member":                   {Members: true, OperatorAPI: true},
		"leader-kill":                      {Members: true},
		"waiter-revoke":                    {ClientProxy: true, OperatorAPI: true},
		"compaction-leader-move":           {Members: true, OperatorAPI: true},
		"redis-primary-crash-unreplicated": {Members: true, AsyncReplication: true},
		"redis-bare-majority-restart":      {Members: true, EmptyRestart: true},
		"redis-holder-pause":               {ClientProxy: true},
		"redis-clock-jump":                 {Members: true, Clock: true},
		"redis-acquire-pause":              {ClientProxy: true, Protocol: chaos.ProtocolRedis},
	} {
		if s, _ := Lookup(name); s.Needs() != want {
			t.Errorf("%s needs %+v, want %+v", name, s.Needs(), want)
		}
	}
	if _, err := Lookup("no-such"); err == nil || !strings.Contains(err.Error(), "extended set: "+strings.Join(ext, ", ")) {
		t.Errorf("unknown scenario: %v, want the extended set named", err)
	}
	herd, _ := Lookup("herd")
	if herd.Clients != 32 || herd.Workload.Hold != 0 {
		t.Errorf("herd: %+v", herd)
	}
	wc, _ := Lookup("waiter-crash")
	if got := wc.Expect.For(verdict.Subject{Lock: "queue-naive", KeepAlive: "auto"})[verdict.Exclusion]; got != verdict.Fail {
		t.Errorf("waiter-crash expects queue-naive exclusion %s, want fail", got)
	}
	if got := wc.Expect.For(verdict.Subject{Lock: "queue", KeepAlive: "auto"})[verdict.Exclusion]; got != verdict.Pass {
		t.Errorf("waiter-crash expects queue exclusion %s, want pass", got)
	}
}

const userScenario = `name: my-scenario
description: leader crash under contention, restarted 2s later
clients: 4
lease_ttl: 3s
duration: 8s
workload:
  kind: counter-fenced
  hold: 20ms
  think: 5ms
steps:
  - at: 2s
    fault: crash-member
    target: leader
    for: 2s
  - {at: 5s, fault: delay-client, target: "client:1", for: 1s, delay: 50ms}
  - {at: 6s, fault: compact-loop, for: 1s, every: 30ms}
expect:
  default: {exclusion: pass, resource: pass}
  queue-naive: {exclusion: fail}
`

func TestParseUserScenario(t *testing.T) {
	s, err := Parse("my.yaml", strings.NewReader(userScenario))
	if err != nil {
		t.Fatal(err)
	}
	if s.Clients != 4 || s.TTL() != 3*time.Second || s.Duration.D() != 8*time.Second ||
		s.Workload != (Workload{Kind: WorkloadCounterFenced, Hold: Duration(20 * time.Millisecond), Think: Duration(5 * time.Millisecond)}) {
		t.Errorf("parsed %+v", s)
	}
	steps := s.Faults()
	if len(steps) != 3 || steps[0].Fault.Name() != "crash-member" || steps[0].Target != (chaos.Target{Kind: "leader"}) ||
		steps[0].For != 2*time.Second || steps[1].Target != (chaos.Target{Kind: "client", N: 1}) || steps[1].Arg != 50*time.Millisecond ||
		steps[2].Fault.Name() != "compact-loop" || steps[2].Arg != 30*time.Millisecond {
		t.Errorf("steps %+v", steps)
	}
	if !s.Needs().Members || !s.Needs().ClientProxy {
		t.Error("needs members and proxies")
	}
}

// TestNemesisScenario: a scenario's nemesis is parsed into faults and
// targets (random where none is given), its faults count in Needs and
// FaultKinds, and its schedule is the seed's: the same for the same seed.
func TestNemesisScenario(t *testing.T) {
	s, err := Parse("n.yaml", strings.NewReader("name: n\nclients: 3\nduration: 5s\nworkload: {kind: hold}\n"+
		"steps:\n  - {at: 500ms, fault: compact}\n"+
		"nemesis: {faults: [move-leader follower, crash-client], every: 1s, for: 300ms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, f := range s.FaultKinds() {
		kinds = append(kinds, f.Name())
	}
	if !reflect.DeepEqual(kinds, []string{"compact", "move-leader", "crash-client"}) || !s.Needs().ClientProxy || !s.Needs().Members {
		t.Errorf("fault kinds %v, needs %+v", kinds, s.Needs())
	}
	text := func(steps []chaos.Step) string {
		var b strings.Builder
		for _, st := range steps {
			fmt.Fprintf(&b, "%s %s %s %s;", st.At, st.Fault.Name(), st.Target, st.For)
		}
		return b.String()
	}
	a := s.Schedule(3)
	if text(a) != text(s.Schedule(3)) || len(a) != 5 || a[0].Fault.Name() != "compact" {
		t.Fatalf("schedule of seed 3: %s then %s", text(a), text(s.Schedule(3)))
	}
	for _, st := range a[1:] {
		want := chaos.Target{Kind: chaos.TFollower}
		if st.Fault.Name() == "crash-client" {
			want = chaos.Target{Kind: chaos.TRandom}
		}
		if st.Target != want || st.For != 300*time.Millisecond {
			t.Errorf("nemesis step %+v: want target %v for 300ms", st, want)
		}
	}
}

func TestParseErrorsNameFileLineAndChoices(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown key", "name: x\nclients: 2\nduration: 1s\nworkload: {kind: hold}\nretries: 3\n",
			[]string{"bad.yaml", "line 5", "retries", "valid keys"}},
		{"unknown workload key", "name: x\nclients: 2\nduration: 1s\nworkload:\n  kind: hold\n  holdd: 1s\n",
			[]string{"line 6", "holdd", "kind, hold, think"}},
		{"bad duration", "name: x\nclients: 2\nduration: 10 seconds\nworkload: {kind: hold}\n",
			[]string{"bad.yaml", "line 3", `"10 seconds"`, "500ms"}},
		{"unknown fault", "name: x\nclients: 2\nduration: 5s\nworkload: {kind: hold}\nsteps:\n  - at: 1s\n    fault: explode\n    target: leader\n",
			[]string{"bad.yaml:6", `unknown fault "explode"`, "crash-member", "pause-client"}},
		{"unknown target", "name: x\nclients: 2\nduration: 5s\nworkload: {kind: hold}\nsteps:\n  - {at: 1s, fault: crash-client, target: boss}\n",
			[]string{"bad.yaml:6", `"boss"`, "holder", "waiter:K"}},
		{"member target for a client fault", "name: x\nclients: 2\nduration: 5s\nworkload: {kind: hold}\nsteps:\n  - {at: 1s, fault: pause-client, target: leader}\n",
			[]string{"pause-client", "a client"}},
		{"unknown step key", "name: x\nclients: 2\nduration: 5s\nworkload: {kind: hold}\nsteps:\n  - {at: 1s, fault: heal, tagret: x}\n",
			[]string{"line 6", "tagret", "at, fault, target, for"}},
		{"every for a fault that does not repeat", "name: x\nclients: 2\nduration: 5s\nworkload: {kind: hold}\nsteps:\n  - {at: 1s, fault: compact, every: 50ms}\n",
			[]string{"bad.yaml:6", "every applies only to compact-loop"}},
		{"delay for compact-loop", "name: x\nclients: 2\nduration: 5s\nworkload: {kind: hold}\nsteps:\n  - {at: 1s, fault: compact-loop, for: 1s, delay: 50ms}\n",
			[]string{"bad.yaml:6", "delay applies only to delay-acquire-replies, delay-answers, delay-client"}},
		{"sub-second lease_ttl for every backend", "name: x\nclients: 2\nduration: 5s\nlease_ttl: 300ms\nworkload: {kind: hold}\n",
			[]string{"lease_ttl 300ms", "whole number of seconds ≥1s", "for redis only, ≥100ms"}},
		{"lease_ttl too short for Redis", "name: x\nclients: 2\nduration: 5s\nlease_ttl: 50ms\nbackends: [redis]\nworkload: {kind: hold}\n",
			[]string{"lease_ttl 50ms", "must be ≥100ms", "redis only"}},
		{"clock-jump without by", "name: x\nclients: 2\nduration: 5s\nworkload: {kind: hold}\nsteps:\n  - {at: 1s, fault: clock-jump, target: member:0}\n",
			[]string{"bad.yaml:6", "clock-jump needs by", "e.g. by: 60s"}},
		{"a step timed to an unknown call", "name: x\nclients: 2\nduration: 5s\nworkload: {kind: hold}\nsteps:\n  - {at: 1s, on: unlock, fault: crash-member, target: leader}\n",
			[]string{"bad.yaml:6", `on "unlock"`, "valid are acquire, release"}},
		{"by for a fault that moves nothing", "name: x\nclients: 2\nduration: 5s\nworkload: {kind: hold}\nsteps:\n  - {at: 1s, fault: crash-member, target: member:0, by: 5s}\n",
			[]string{"bad.yaml:6", "by applies only to clock-jump"}},
		{"nemesis without faults", "name: x\nclients: 2\nduration: 5s\nworkload: {kind: hold}\nnemesis: {every: 1s, for: 500ms}\n",
			[]string{"bad.yaml: nemesis: faults", "crash-member"}},
		{"nemesis faults overlap", "name: x\nclients: 2\nduration: 5s\nworkload: {kind: hold}\nnemesis: {faults: [compact], every: 1s, for: 1s}\n",
			[]string{"nemesis: for 1s", "less than every (1s)"}},
		{"nemesis unknown fault", "name: x\nclients: 2\nduration: 5s\nworkload: {kind: hold}\nnemesis: {faults: [compact, explode], every: 1s, for: 100ms}\n",
			[]string{"nemesis: fault 2", `unknown fault "explode"`}},
		{"nemesis numbered target", "name: x\nclients: 2\nduration: 5s\nworkload: {kind: hold}\nnemesis: {faults: [crash-member member:1], every: 1s, for: 100ms}\n",
			[]string{"nemesis: fault 1", "member:1", "give a role"}},
		{"nemesis target of the wrong class", "name: x\nclients: 2\nduration: 5s\nworkload: {kind: hold}\nnemesis: {faults: [crash-client leader], every: 1s, for: 100ms}\n",
			[]string{"nemesis: fault 1", "crash-client", "a client"}},
		{"nemesis unknown key", "name: x\nclients: 2\nduration: 5s\nworkload: {kind: hold}\nnemesis: {faults: [compact], evry: 1s}\n",
			[]string{"evry", "in nemesis (valid keys: faults, every, for)"}},
		{"step after the end", "name: x\nclients: 2\nduration: 5s\nworkload: {kind: hold}\nsteps:\n  - {at: 9s, fault: heal}\n",
			[]string{"bad.yaml:6", "before the end"}},
		{"unknown workload", "name: x\nclients: 2\nduration: 5s\nworkload: {kind: spin}\n",
			[]string{`"spin"`, "hold, counter, counter-fenced"}},
		{"zero clients", "name: x\nclients: 0\nduration: 5s\nworkload: {kind: hold}\n", []string{"clients 0"}},
		// docs/design.md §6: clients and duration have no default.
		{"no clients", "name: x\nduration: 5s\nworkload: {kind: hold}\n", []string{"clients 0", "required"}},
		{"no duration", "name: x\nclients: 2\nworkload: {kind: hold}\n", []string{"duration 0s", "required"}},
		{"unknown check", "name: x\nclients: 1\nduration: 5s\nworkload: {kind: hold}\nexpect: {default: {safety: pass}}\n",
			[]string{`"safety"`, "exclusion"}},
		{"bad check under a keepalive", "name: x\nclients: 1\nduration: 5s\nworkload: {kind: hold}\nexpect:\n  keepalive:safe: {safety: pass}\n",
			[]string{"bad.yaml:6", "expect.keepalive:safe", `"safety"`}},
		{"bad verdict", "name: x\nclients: 1\nduration: 5s\nworkload: {kind: hold}\nexpect: {default: {exclusion: ok}}\n",
			[]string{`"ok"`, "pass, fail, unknown, any"}},
		{"client target out of range", "name: x\nclients: 4\nduration: 5s\nworkload: {kind: hold}\nsteps:\n  - {at: 1s, fault: heal}\n  - {at: 1s, fault: crash-client, target: client:9}\n",
			[]string{"bad.yaml:7", "step 2", "client:9", "clients 0..3"}},
		{"waiter target out of range", "name: x\nclients: 3\nduration: 5s\nworkload: {kind: hold}\nsteps:\n  - {at: 1s, fault: crash-client, target: waiter:2}\n",
			[]string{"bad.yaml:6", "waiter:2", "waiter:0..1"}},
		{"a list, not a scenario", "- name: x\n- clients: 2\n",
			[]string{"bad.yaml: line 1: the scenario must be a mapping with keys name, description, clients", "not a list"}},
		{"a string, not a scenario", "contention\n",
			[]string{"line 1: the scenario must be a mapping", "not the string contention"}},
		{"clients not a number", "name: x\nclients: two\nduration: 1s\nworkload: {kind: hold}\n",
			[]string{"line 2: clients must be an integer, not the string two"}},
		{"workload a list", "name: x\nclients: 2\nduration: 1s\nworkload: [hold]\n",
			[]string{"line 4: workload must be a mapping with keys kind, hold, think, stagger, release_lost, locks, pick, rate, arrivals, not a list"}},
		{"negative locks", "name: x\nclients: 2\nduration: 1s\nworkload:\n  kind: hold\n  locks: -3\n",
			[]string{"bad.yaml:6", "workload locks -3", "must be 1..65536", "job1"}},
		{"zero locks given", "name: x\nclients: 2\nduration: 1s\nworkload: {kind: hold, locks: 0}\n",
			[]string{"bad.yaml:4", "workload locks 0", "must be 1..65536"}},
		{"too many locks", "name: x\nclients: 2\nduration: 1s\nworkload: {kind: hold, locks: 70000}\n",
			[]string{"bad.yaml:4", "workload locks 70000", "must be 1..65536"}},
		{"locks not a number", "name: x\nclients: 2\nduration: 1s\nworkload: {kind: hold, locks: many}\n",
			[]string{"line 4: locks must be an integer, not the string many"}},
		{"many locks on a counter", "name: x\nclients: 2\nduration: 1s\nworkload:\n  kind: counter\n  locks: 4\n",
			[]string{"bad.yaml:6", "workload locks 4", "kind counter shares one counter", "locks: 1"}},
		{"unknown pick", "name: x\nclients: 2\nduration: 1s\nworkload:\n  kind: hold\n  locks: 4\n  pick: random\n",
			[]string{"bad.yaml:7", `pick "random"`, "uniform, round-robin, zipf:S"}},
		{"zipf exponent not above 1", "name: x\nclients: 2\nduration: 1s\nworkload: {kind: hold, locks: 4, pick: \"zipf:0.9\"}\n",
			[]string{"bad.yaml:4", `pick "zipf:0.9"`, "must be a number > 1"}},
		{"zipf exponent not a number", "name: x\nclients: 2\nduration: 1s\nworkload: {kind: hold, locks: 4, pick: \"zipf:hot\"}\n",
			[]string{"bad.yaml:4", `pick "zipf:hot"`, "zipf:1.2"}},
		{"release_lost not a boolean", "name: x\nclients: 2\nduration: 1s\nworkload: {kind: hold, release_lost: maybe}\n",
			[]string{"line 4: release_lost must be true or false, not the string maybe"}},
		{"steps a mapping", "name: x\nclients: 2\nduration: 1s\nworkload: {kind: hold}\nsteps: {at: 1s}\n",
			[]string{"line 5: steps must be a list of steps, not a mapping"}},
		{"a step a list", "name: x\nclients: 2\nduration: 1s\nworkload: {kind: hold}\nsteps:\n  - [1s, heal]\n",
			[]string{"line 6: a step must be a mapping with keys at, fault, target, for, delay, every, not a list"}},
		{"expectations a list", "name: x\nclients: 2\nduration: 1s\nworkload: {kind: hold}\nexpect: {default: [exclusion]}\n",
			[]string{"line 5: default must be a mapping of check names (exclusion,", "to verdicts, not a list"}},
		{"two type errors, one line", "name: [x]\nclients: [2]\nduration: 1s\nworkload: {kind: hold}\n",
			[]string{"line 1: name must be a string, not a list; line 2: clients must be an integer, not a list"}},
		{"a merged unknown step key", "name: x\nclients: 4\nduration: 8s\nworkload: {kind: hold}\nsteps:\n  - &bad {at: 1s, fault: heal, tagret: x}\n  - {<<: *bad, at: 2s}\n", []string{"line 6", "line 7", "tagret", "valid keys"}},
		{"a merged unknown fault", "name: x\nclients: 4\nduration: 8s\nworkload: {kind: hold}\nsteps:\n  - &bad {at: 1s, fault: explode}\n  - {<<: *bad, at: 2s}\n", []string{`unknown fault "explode"`}},
		{"a merge of a scalar", "name: x\nclients: 4\nduration: 8s\nworkload: {kind: hold}\nsteps:\n  - {at: 1s, fault: heal, for: &f 1s}\n  - {<<: *f, at: 2s}\n", []string{"bad.yaml: line 7: << must merge a mapping or a list of mappings"}},
		{"block style keeps the lines after a merge", "name: x\nclients: 4\nduration: 8s\nworkload: {kind: hold}\nsteps:\n  - &s\n    at: 1s\n    fault: heal\n  - at: 2s\n    <<: *s\n    tagret: x\n", []string{"line 11", "tagret", "valid keys"}},
		{"an aliased block step keeps the lines after it", "name: x\nclients: 4\nduration: 8s\nworkload: {kind: hold}\nsteps:\n  - &s\n    at: 1s\n    fault: heal\n  - {at: 2s, fault: heal}\n  - *s\n  - {at: 3s, fault: explode}\n", []string{"bad.yaml:11", `unknown fault "explode"`}},
		{"aliases that expand without end", "name: x\nclients: 4\nduration: 8s\nworkload: {kind: hold}\nsteps:\n  - {at: 1s, fault: heal, target: [&a [x,x,x,x,x,x,x,x,x,x], &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a], &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b], &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c], [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]]}\n", []string{"bad.yaml", "line 6", "expand to more than"}},
		{"an unknown anchor", "name: x\nclients: 4\nduration: 8s\nworkload: {kind: hold}\nsteps:\n  - {<<: *nope, at: 2s}\n", []string{"bad.yaml", "nope"}},
		{"malformed", "name: [x\n", []string{"bad.yaml", "line"}},
		{"empty", "", []string{"bad.yaml", "empty"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("bad.yaml", strings.NewReader(tc.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			// Go's names for things are not the format's.
			for _, leak := range []string{"!!", "scenarios.", "verdict.", "unmarshal", "\n"} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("error %q says %q", err, leak)
				}
			}
		})
	}
}

// TestPlanIsDeterministic: same seed, same schedule and draws; another
// seed draws differently.
func TestPlanIsDeterministic(t *testing.T) {
	s, err := Parse("my.yaml", strings.NewReader(userScenario))
	if err != nil {
		t.Fatal(err)
	}
	steps := s.Faults()
	// Faults hold funcs, which DeepEqual never finds equal: compare names.
	flat := func(p []chaos.PlannedStep) []string {
		var out []string
		for _, s := range p {
			out = append(out, fmt.Sprintf("%s %s %s %s %s %d", s.At, s.Fault.Name(), s.Target, s.For, s.Arg, s.Draw))
		}
		return out
	}
	a, b := flat(chaos.Plan(steps, 7)), flat(chaos.Plan(steps, 7))
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different plans:\n%+v\n%+v", a, b)
	}
	if c := flat(chaos.Plan(steps, 8)); reflect.DeepEqual(a, c) {
		t.Error("different seeds drew the same")
	}
	// Steps given out of order are planned in time order.
	p := chaos.Plan([]chaos.Step{steps[1], steps[0]}, 7)
	if p[0].At > p[1].At {
		t.Error("plan not in time order")
	}
}

// TestReadmeExampleIsTheExampleFile: the README links the example
// scenario users run; scenario lines it shows are lines of that file, in
// order; and every example parses.
func TestReadmeExampleIsTheExampleFile(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile("../examples/leader-crash-fenced.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "](examples/leader-crash-fenced.yaml)") {
		t.Error("README does not link examples/leader-crash-fenced.yaml")
	}
	if _, block, ok := strings.Cut(string(readme), "```yaml\n"); ok {
		block, _, _ = strings.Cut(block, "```")
		if !strings.Contains(string(file), block) {
			t.Errorf("README's yaml example is not an excerpt of examples/leader-crash-fenced.yaml:\n%s", block)
		}
	}
	examples, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(examples) < 2 {
		t.Fatalf("examples: %v %v", examples, err)
	}
	for _, f := range examples {
		if _, err := ParseFile(f); err != nil {
			t.Error(err)
		}
	}
}

// TestMemberTargetsCheckedAgainstTheCluster: member:N is known to be out
// of range only once the cluster size is; the error names file and line.
func TestMemberTargetsCheckedAgainstTheCluster(t *testing.T) {
	sc, err := Parse("m.yaml", strings.NewReader("name: x\nclients: 2\nduration: 5s\nworkload: {kind: hold}\nsteps:\n  - {at: 1s, fault: crash-member, target: member:5}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.CheckMembers(7); err != nil {
		t.Errorf("7 members: %v", err)
	}
	err = sc.CheckMembers(3)
	if err == nil || !strings.Contains(err.Error(), "m.yaml:6") || !strings.Contains(err.Error(), "members 0..2") {
		t.Errorf("3 members: %v, want m.yaml:6 and members 0..2", err)
	}
}

// TestDurationJSON: config.json embeds a Scenario and has held durations as
// text ("5s"), as nanoseconds (a number) and as "" (zero); all must read.
func TestDurationJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{`"5s"`, 5 * time.Second},
		{`"1.5ms"`, 1500 * time.Microsecond},
		{`2000000000`, 2 * time.Second},
		{`0`, 0},
		{`""`, 0},
	} {
		var d Duration
		if err := json.Unmarshal([]byte(tc.in), &d); err != nil || d.D() != tc.want {
			t.Errorf("%s → %s, %v; want %s", tc.in, d, err, tc.want)
		}
	}
	for _, bad := range []string{`"junk"`, `true`, `1.5`, `{}`} {
		var d Duration
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	b, err := json.Marshal(Duration(1500 * time.Millisecond))
	if err != nil || string(b) != `"1.5s"` {
		t.Errorf("marshal: %s, %v", b, err)
	}
	var back struct {
		LeaseTTL Duration `json:"lease_ttl"`
	}
	if err := json.Unmarshal([]byte(`{"lease_ttl":"10s"}`), &back); err != nil || back.LeaseTTL.D() != 10*time.Second {
		t.Errorf("in a struct: %s, %v", back.LeaseTTL, err)
	}
}

// TestExpectByKeepAlive: a scenario's expectations are chosen by keepalive
// policy, under the strategy's own entries.
func TestExpectByKeepAlive(t *testing.T) {
	ci, err := Lookup("client-isolation")
	if err != nil {
		t.Fatal(err)
	}
	if got := ci.Expect.For(verdict.Subject{Lock: "queue", KeepAlive: "safe"})[verdict.Exclusion]; got != verdict.Pass {
		t.Errorf("client-isolation expects exclusion %q under safe, want pass", got)
	}
	if got := ci.Expect.For(verdict.Subject{Lock: "queue", KeepAlive: "auto"})[verdict.Exclusion]; got != verdict.Fail {
		t.Errorf("client-isolation expects exclusion %q under auto, want fail", got)
	}
	if got, judged := ci.Expect.For(verdict.Subject{Lock: "queue", KeepAlive: "seed"})[verdict.Exclusion]; judged {
		t.Errorf("client-isolation judges exclusion (%q) under seed, want any", got)
	}
	e := verdict.Expectations{
		verdict.DefaultKey:               {verdict.Exclusion: verdict.Pass},
		verdict.KeepAlivePrefix + "seed": {verdict.Exclusion: verdict.Fail},
		"queue-naive":                    {verdict.Exclusion: verdict.Any},
	}
	if got := e.For(verdict.Subject{Lock: "queue", KeepAlive: "seed"})[verdict.Exclusion]; got != verdict.Fail {
		t.Errorf("policy entry: %q, want fail", got)
	}
	if got := e.For(verdict.Subject{Lock: "queue", KeepAlive: "auto"})[verdict.Exclusion]; got != verdict.Pass {
		t.Errorf("no policy entry: %q, want the default pass", got)
	}
	if _, judged := e.For(verdict.Subject{Lock: "queue-naive", KeepAlive: "seed"})[verdict.Exclusion]; judged {
		t.Error("the strategy's own entry must win over the policy's")
	}
}

// A step may use YAML's aliases and merge keys, as expect: may: each step
// is decoded strictly on its own, away from the anchors it names.
func TestStepAliasesAndMergeKeys(t *testing.T) {
	head := "name: x\nclients: 4\nduration: 8s\nworkload: {kind: hold}\nsteps:\n"
	slow := "  - &slow {at: 1s, fault: delay-client, target: \"client:1\", for: 1s, delay: 50ms}\n"
	tests := []struct {
		name, steps string
		at          time.Duration
		delay       time.Duration
		target      string
	}{
		{"merge key", slow + "  - {<<: *slow, at: 3s}\n", 3 * time.Second, 50 * time.Millisecond, "client"},
		{"merge key, block style", slow + "  - <<: *slow\n    at: 3s\n    delay: 70ms\n", 3 * time.Second, 70 * time.Millisecond, "client"},
		{"merge of a list: the first mapping wins", "  - &a {at: 1s, fault: delay-client, target: \"client:1\", for: 1s, delay: 50ms}\n" +
			"  - &b {at: 2s, fault: delay-client, target: \"client:2\", for: 1s, delay: 60ms}\n  - {<<: [*b, *a], at: 4s}\n", 4 * time.Second, 60 * time.Millisecond, "client"},
		{"scalar alias", "  - {at: 1s, fault: delay-client, target: \"client:1\", for: 1s, delay: &d 90ms}\n" +
			"  - {at: 3s, fault: delay-client, target: \"client:2\", for: 1s, delay: *d}\n", 3 * time.Second, 90 * time.Millisecond, "client"},
		{"a whole step an alias", slow + "  - *slow\n", time.Second, 50 * time.Millisecond, "client"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("alias.yaml", strings.NewReader(head+tc.steps))
			if err != nil {
				t.Fatal(err)
			}
			steps := s.Faults()
			last := steps[len(steps)-1]
			if last.At != tc.at || last.Arg != tc.delay || last.Target.Kind != tc.target || last.Fault.Name() != "delay-client" {
				t.Errorf("last step %+v: want at %v, delay %v", last, tc.at, tc.delay)
			}
		})
	}
}

// TestLocksAndPick: locks and pick parse, default to one name drawn
// uniformly, and leave a file without them hashing as before.
func TestLocksAndPick(t *testing.T) {
	tests := []struct {
		yaml  string
		locks int
		pick  Pick
	}{
		{"workload: {kind: hold}", 1, Pick{Kind: PickUniform}},
		{"workload: {kind: hold, locks: 1}", 1, Pick{Kind: PickUniform}},
		{"workload: {kind: hold, locks: 16}", 16, Pick{Kind: PickUniform}},
		{"workload: {kind: hold, locks: 16, pick: round-robin}", 16, Pick{Kind: PickRoundRobin}},
		{"workload: {kind: hold, locks: 16, pick: \"zipf:1.2\"}", 16, Pick{Kind: PickZipf, S: 1.2}},
		{"workload: {kind: counter, locks: 1}", 1, Pick{Kind: PickUniform}},
	}
	for _, tc := range tests {
		s, err := Parse("x.yaml", strings.NewReader("name: x\nclients: 2\nduration: 1s\n"+tc.yaml+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		if got := s.Workload.LockCount(); got != tc.locks {
			t.Errorf("%s: LockCount %d, want %d", tc.yaml, got, tc.locks)
		}
		if got := s.Workload.PickOf(); got != tc.pick {
			t.Errorf("%s: PickOf %+v, want %+v", tc.yaml, got, tc.pick)
		}
	}
	plain, _ := Parse("x.yaml", strings.NewReader("name: x\nclients: 2\nduration: 1s\nworkload: {kind: hold}\n"))
	if b, _ := json.Marshal(plain.Workload); strings.Contains(string(b), "locks") || strings.Contains(string(b), "pick") {
		t.Errorf("a workload without locks encodes them: %s (its hash would change)", b)
	}
}

// FuzzParsePick: any text is a valid pick or one error naming it.
func FuzzParsePick(f *testing.F) {
	for _, s := range []string{"", "uniform", "round-robin", "zipf:1.2", "zipf:1", "zipf:NaN", "zipf:+Inf", "zipf:", "rr"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePick(s)
		switch {
		case err != nil:
			if !strings.HasPrefix(err.Error(), "pick ") {
				t.Errorf("ParsePick(%q): error %q does not name the pick", s, err)
			}
		case p.Kind == PickZipf && !(p.S > 1 && p.S <= 1e6):
			t.Errorf("ParsePick(%q) = %+v: zipf's exponent out of range", s, p)
		case p.Kind != PickZipf && p.Kind != PickUniform && p.Kind != PickRoundRobin:
			t.Errorf("ParsePick(%q) = %+v: unknown kind", s, p)
		}
	})
}

// TestBackends: a scenario's backends say which backends it is for (all,
// unset), and CheckNames refuses a backend the registry does not know.
func TestBackends(t *testing.T) {
	src := "name: failover\nclients: 2\nduration: 1s\nworkload: {kind: hold}\nbackends: [redis]\nexpect:\n  backend:redis: {exclusion: fail}\n"
	sc, err := Parse("failover.yaml", strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	if !sc.For("redis") || sc.For("etcd") {
		t.Errorf("backends %v: For(redis) %v, For(etcd) %v", sc.Backends, sc.For("redis"), sc.For("etcd"))
	}
	if got := sc.Expect.For(verdict.Subject{Lock: "redis-setnx", Backend: "redis"})[verdict.Exclusion]; got != verdict.Fail {
		t.Errorf("the backend's expectation: %q, want fail", got)
	}
	known := func(n string) error {
		if n == "etcd" || n == "redis-setnx" || n == "auto" {
			return nil
		}
		return fmt.Errorf("unknown %q", n)
	}
	err = sc.CheckNames(verdict.Names{Lock: known, KeepAlive: known, Backend: known})
	if err == nil || !strings.Contains(err.Error(), `backends: unknown "redis"`) {
		t.Errorf("an unknown backend: %v", err)
	}
	if all, _ := Lookup("contention"); !all.For("zookeeper") {
		t.Error("a scenario without backends is for every backend")
	}
}

// TestStepOn checks that a step's on reaches its fault (the runner
// strikes it at that call) and that a step without it encodes, so
// hashes, as before the key existed.
func TestStepOn(t *testing.T) {
	const base = "name: x\nclients: 2\nduration: 5s\nworkload: {kind: hold}\nsteps:\n  - {at: 1s, fault: crash-member, target: leader%s}\n"
	for _, tc := range []struct{ key, want string }{{"", ""}, {", on: release", chaos.OnRelease}, {", on: acquire", chaos.OnAcquire}} {
		s, err := Parse("x.yaml", strings.NewReader(fmt.Sprintf(base, tc.key)))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Faults()[0].On; got != tc.want {
			t.Errorf("on %q: fault timed to %q", tc.want, got)
		}
		b, err := json.Marshal(s.Steps[0])
		if err != nil {
			t.Fatal(err)
		}
		if has := strings.Contains(string(b), `"on"`); has != (tc.want != "") {
			t.Errorf("on %q: step encodes as %s", tc.want, b)
		}
	}
}
