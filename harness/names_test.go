package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/scenarios"
)

// TestExpectNamesAreChecked: a scenario is data and does not know the
// registry, so a run checks that its expectations name real strategies
// and keepalive policies, with the file and line of the bad key.
func TestExpectNamesAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown lock in expect", "name: x\nclients: 1\nduration: 5s\nworkload: {kind: hold}\nexpect: {nolock: {exclusion: pass}}\n",
			[]string{`"nolock"`, "default"}},
		{"unknown keepalive in expect", "name: x\nclients: 1\nduration: 5s\nworkload: {kind: hold}\nexpect:\n  default: {exclusion: pass}\n  keepalive:fast: {exclusion: pass}\n",
			[]string{"bad.yaml:7", `keepalive:fast`, "auto, seed, safe"}},
		{"unknown lock in expect, with its line", "name: x\nclients: 1\nduration: 5s\nworkload: {kind: hold}\nexpect:\n  nolock: {exclusion: pass}\n",
			[]string{"bad.yaml:6", `"nolock"`, "keepalive:POLICY", "valid locks are"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scenarios.Parse("bad.yaml", strings.NewReader(tc.yaml))
			if err != nil {
				t.Fatalf("the scenario alone is valid data: %v", err)
			}
			err = RunSpec{Lock: "queue", Scenario: sc, Out: t.TempDir()}.Validate()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	// Every built-in's expectations (the extended set's too) name
	// registered strategies.
	for _, n := range append(scenarios.Names(), scenarios.ExtendedNames()...) {
		sc, _ := scenarios.Lookup(n)
		if err := sc.CheckNames(registryNames); err != nil {
			t.Errorf("built-in %s: %v", n, err)
		}
	}
}

// TestDefaultLeaseTTLAgrees: a scenario's default TTL is the strategies'
// and the checker's (none of the three packages imports another).
func TestDefaultLeaseTTLAgrees(t *testing.T) {
	for name, ttl := range map[string]time.Duration{"locks.DefaultTTL": locks.DefaultTTL, "check.DefaultLeaseTTL": check.DefaultLeaseTTL} {
		if ttl != scenarios.DefaultLeaseTTL {
			t.Errorf("%s is %s, scenarios.DefaultLeaseTTL %s", name, ttl, scenarios.DefaultLeaseTTL)
		}
	}
}
