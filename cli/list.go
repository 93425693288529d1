package cli

import (
	"context"
	"strings"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/scenarios"
)

// listEntries is `lockbench list --json`: what the table lists, for
// scripts (e.g. a CI matrix built from the strategies). Its keys are a
// contract, like the run folder's.
type listEntries struct {
	Strategies []listStrategy `json:"strategies"`
	// LockClients are the hidden strategies that need a runtime (the
	// shipped adapters): run by name, never in the default matrix, so
	// apart from Strategies, which scripts build that matrix from.
	LockClients []listClient   `json:"lock_clients"`
	Scenarios   []listScenario `json:"scenarios"`
	// ExtendedScenarios are the built-in scenarios of the extended set
	// (suite --extended): found by name, not in the default suite, so
	// apart from Scenarios, which scripts build that suite from.
	ExtendedScenarios []listScenario `json:"extended_scenarios"`
}

// listClient is one lock client run by name, and whether this machine
// has what it runs on.
type listClient struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Origin      string `json:"origin"`
	// Backend is the system it runs on (etcd, redis).
	Backend string `json:"backend"`
	// Runtime is "ready", or what is missing and how to install it.
	Runtime string `json:"runtime"`
}

// runtimeStatus is "ready" when s's runtime is installed, else the first
// line of what is missing.
func runtimeStatus(ctx context.Context, s locks.Strategy) string {
	err := s.Runtime(ctx)
	if err == nil {
		return "ready"
	}
	first, _, _ := strings.Cut(err.Error(), "\n")
	return "missing: " + first
}

// listStrategy is one registered strategy (locks.Strategy).
type listStrategy struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Origin      string `json:"origin"`
	// Backend is the system it runs on (etcd, redis).
	Backend string `json:"backend"`
	// Buggy: kept on purpose to prove the checker catches its bug.
	Buggy bool `json:"buggy"`
	// OwnLease: it keeps its own lease, so --keepalive does not apply.
	OwnLease bool `json:"own_lease"`
}

// listScenario is one built-in scenario: what it runs, and its faults.
type listScenario struct {
	Name        string             `json:"name"`
	Description string             `json:"description"`
	Clients     int                `json:"clients"`
	Duration    scenarios.Duration `json:"duration"`
	Steps       []scenarios.Step   `json:"steps"`
}

// listCmd is `lockbench list [--json]`: every registered strategy (a
// program built on Main lists its own too), the lock clients run by name
// with whether their runtime is installed, and every built-in scenario,
// as a table (listCommand) or, with --json, as listEntries.
func listCmd(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "list", "list [--json]")
	asJSON := fs.Bool("json", false, "print the strategies and scenarios as JSON")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInputf("list takes no arguments, got %q: it lists every lock strategy and scenario", fs.Arg(0))
	}
	if !*asJSON {
		return listCommand(ctx, e, nil)
	}
	out := listEntries{Strategies: []listStrategy{}, LockClients: []listClient{}}
	for _, s := range locks.All() {
		out.Strategies = append(out.Strategies, listStrategy{Name: s.Name, Description: s.Description, Origin: s.Origin, Backend: s.Backend, Buggy: s.Buggy, OwnLease: s.OwnLease})
	}
	for _, s := range locks.HiddenWithRuntime() {
		out.LockClients = append(out.LockClients, listClient{Name: s.Name, Description: s.Description, Origin: s.Origin, Backend: s.Backend, Runtime: runtimeStatus(ctx, s)})
	}
	var err error
	if out.Scenarios, err = listScenarios(scenarios.Names()); err != nil {
		return err
	}
	if out.ExtendedScenarios, err = listScenarios(scenarios.ExtendedNames()); err != nil {
		return err
	}
	return writeJSON(e.stdout, out)
}

// listScenarios are the built-in scenarios names, as list --json gives
// them ([] for none).
func listScenarios(names []string) ([]listScenario, error) {
	out := []listScenario{}
	for _, n := range names {
		sc, err := scenarios.Lookup(n)
		if err != nil {
			return nil, err
		}
		steps := sc.Steps
		if steps == nil {
			steps = []scenarios.Step{}
		}
		out = append(out, listScenario{Name: sc.Name, Description: sc.Description, Clients: sc.Clients, Duration: sc.Duration, Steps: steps})
	}
	return out, nil
}
