package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/scenarios"
)

// TestListJSON: list --json gives every listed strategy (name,
// description, origin, buggy, own_lease) and built-in scenario (name,
// description, clients, duration, steps) with the keys scripts read;
// an argument is still bad input.
func TestListJSON(t *testing.T) {
	code, stdout, stderr := runCLI(t, "list", "--json")
	if code != ExitPass || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var got struct {
		Strategies []map[string]any `json:"strategies"`
		Scenarios  []map[string]any `json:"scenarios"`
		Extended   []map[string]any `json:"extended_scenarios"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if len(got.Strategies) != len(locks.All()) || len(got.Scenarios) != len(scenarios.Names()) {
		t.Fatalf("%d strategies, %d scenarios; want %d, %d", len(got.Strategies), len(got.Scenarios), len(locks.All()), len(scenarios.Names()))
	}
	byName := map[string]map[string]any{}
	for _, s := range got.Strategies {
		for _, k := range []string{"name", "description", "origin", "buggy", "own_lease"} {
			if _, ok := s[k]; !ok {
				t.Errorf("strategy %v lacks %q", s["name"], k)
			}
		}
		byName[s["name"].(string)] = s
	}
	if byName["queue-naive"]["buggy"] != true || byName["queue"]["buggy"] != false {
		t.Errorf("buggy: queue-naive %v, queue %v", byName["queue-naive"]["buggy"], byName["queue"]["buggy"])
	}
	for _, sc := range got.Scenarios {
		for _, k := range []string{"name", "description", "clients", "duration", "steps"} {
			if _, ok := sc[k]; !ok {
				t.Errorf("scenario %v lacks %q", sc["name"], k)
			}
		}
		want, err := scenarios.Lookup(sc["name"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if sc["clients"] != float64(want.Clients) || sc["duration"] != want.Duration.String() || len(sc["steps"].([]any)) != len(want.Steps) {
			t.Errorf("scenario %s: %v", want.Name, sc)
		}
	}
	var ext []string
	for _, sc := range got.Extended {
		ext = append(ext, sc["name"].(string))
		// redis-steady is the Redis study's control: no fault.
		if len(sc["steps"].([]any)) == 0 && sc["name"] != "redis-steady" {
			t.Errorf("extended scenario %v has no steps", sc["name"])
		}
	}
	if strings.Join(ext, ",") != strings.Join(scenarios.ExtendedNames(), ",") || len(ext) == 0 {
		t.Errorf("extended_scenarios %v, want %v", ext, scenarios.ExtendedNames())
	}
	if code, _, stderr := runCLI(t, "list", "--json", "extra"); code != ExitUsage || !strings.Contains(stderr, `"extra"`) {
		t.Errorf("list --json extra: exit %d, stderr %q", code, stderr)
	}
	if code, stdout, _ := runCLI(t, "list"); code != ExitPass || !strings.Contains(stdout, "LOCK") || !strings.Contains(stdout, "EXTENDED SCENARIO") || !strings.Contains(stdout, "\n"+ext[0]+" ") {
		t.Errorf("list: exit %d, stdout %q; want the table", code, stdout)
	}
}

// TestListShowsLockClients: the shipped adapters are hidden from the
// default matrix (strategies) but listed apart, each with whether its
// runtime is installed; the generic adapter is ready only once its
// command is set.
func TestListShowsLockClients(t *testing.T) {
	clients := func() map[string]string {
		code, stdout, stderr := runCLI(t, "list", "--json")
		if code != ExitPass {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		var got struct {
			Strategies  []map[string]any `json:"strategies"`
			LockClients []struct {
				Name, Runtime string
			} `json:"lock_clients"`
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, c := range got.LockClients {
			out[c.Name] = c.Runtime
		}
		for _, s := range got.Strategies {
			if _, dup := out[s["name"].(string)]; dup {
				t.Errorf("%s is both a default strategy and a lock client", s["name"])
			}
		}
		return out
	}
	t.Setenv("LOCKBENCH_ADAPTER", "")
	got := clients()
	for _, name := range []string{"python-etcd3", "node-etcd3", "etcdctl", "etcdctl-3.4", "adapter"} {
		if rt, ok := got[name]; !ok || rt != "ready" && !strings.HasPrefix(rt, "missing: ") {
			t.Errorf("lock client %s: runtime %q (listed %v), want ready or missing: …", name, rt, ok)
		}
	}
	if !strings.Contains(got["adapter"], "LOCKBENCH_ADAPTER") {
		t.Errorf("adapter without its command: %q, want what to set", got["adapter"])
	}
	t.Setenv("LOCKBENCH_ADAPTER", "/bin/true")
	if rt := clients()["adapter"]; rt != "ready" {
		t.Errorf("adapter with its command set: %q, want ready", rt)
	}
	if _, stdout, _ := runCLI(t, "list"); !strings.Contains(stdout, "LOCK CLIENT") || !strings.Contains(stdout, "python-etcd3") {
		t.Errorf("list's table has no lock clients:\n%s", stdout)
	}
}
