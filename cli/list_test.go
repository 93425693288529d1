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
	if code, _, stderr := runCLI(t, "list", "--json", "extra"); code != ExitUsage || !strings.Contains(stderr, `"extra"`) {
		t.Errorf("list --json extra: exit %d, stderr %q", code, stderr)
	}
	if code, stdout, _ := runCLI(t, "list"); code != ExitPass || !strings.Contains(stdout, "LOCK") {
		t.Errorf("list: exit %d, stdout %q; want the table", code, stdout)
	}
}
