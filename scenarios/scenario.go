// Package scenarios holds what a run does: the scenario (data: clients,
// workload, duration, fault steps, expectations), the built-in scenarios,
// and the runner that drives lock clients against etcd and records the
// history.
package scenarios

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/locks"
)

// Workload kinds.
const (
	// WorkloadHold acquires, holds for Hold, releases, thinks for Think.
	WorkloadHold = "hold"
)

// Workload is what each client does in a loop.
type Workload struct {
	Kind string `json:"kind" yaml:"kind"`
	// Hold is how long a client keeps the lock once granted.
	Hold time.Duration `json:"hold" yaml:"hold"`
	// Think is how long a client waits after a release before the next
	// acquire.
	Think time.Duration `json:"think" yaml:"think"`
}

// Scenario is a run described as data, so it can be read, edited and
// re-run with the same schedule.
type Scenario struct {
	Name        string        `json:"name" yaml:"name"`
	Description string        `json:"description" yaml:"description"`
	Clients     int           `json:"clients" yaml:"clients"`
	LeaseTTL    time.Duration `json:"lease_ttl" yaml:"lease_ttl"`
	Duration    time.Duration `json:"duration" yaml:"duration"`
	Workload    Workload      `json:"workload" yaml:"workload"`
	// Expect maps a strategy name (or "default") to the verdict expected of
	// each check.
	Expect map[string]map[string]check.Verdict `json:"expect,omitempty" yaml:"expect"`
}

// Defaults shared by built-ins and CLI flags.
const (
	DefaultClients  = 8
	DefaultDuration = 10 * time.Second
	DefaultHold     = time.Millisecond
)

// Validate reports the first thing wrong with s, naming the field and what
// is valid.
func (s Scenario) Validate() error {
	switch {
	case s.Name == "":
		return fmt.Errorf("scenario has no name")
	case s.Clients < 1:
		return fmt.Errorf("scenario %s: clients %d: must be ≥1", s.Name, s.Clients)
	case s.Duration <= 0:
		return fmt.Errorf("scenario %s: duration %s: must be > 0", s.Name, s.Duration)
	case s.Workload.Hold < 0:
		return fmt.Errorf("scenario %s: hold %s: must be ≥0", s.Name, s.Workload.Hold)
	case s.Workload.Think < 0:
		return fmt.Errorf("scenario %s: think %s: must be ≥0", s.Name, s.Workload.Think)
	case s.LeaseTTL != 0 && (s.LeaseTTL < time.Second || s.LeaseTTL%time.Second != 0):
		return fmt.Errorf("scenario %s: lease_ttl %s: must be a whole number of seconds ≥1s", s.Name, s.LeaseTTL)
	}
	switch s.Workload.Kind {
	case WorkloadHold:
	default:
		return fmt.Errorf("scenario %s: workload %q: valid workloads are %s", s.Name, s.Workload.Kind, WorkloadHold)
	}
	return nil
}

// TTL is the scenario's lease TTL, or the default.
func (s Scenario) TTL() time.Duration {
	if s.LeaseTTL == 0 {
		return locks.DefaultTTL
	}
	return s.LeaseTTL
}

// builtins are the scenarios that ship with lockbench.
var builtins = map[string]Scenario{
	"contention": {
		Name:        "contention",
		Description: "C clients loop acquire → hold → release on one lock for the whole run",
		Clients:     DefaultClients,
		Duration:    DefaultDuration,
		Workload:    Workload{Kind: WorkloadHold, Hold: DefaultHold},
		Expect:      map[string]map[string]check.Verdict{"default": {check.Exclusion: check.Pass}},
	},
}

// Names lists the built-in scenarios.
func Names() []string {
	out := make([]string, 0, len(builtins))
	for n := range builtins {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns a copy of a built-in scenario; the error lists the valid
// names.
func Lookup(name string) (Scenario, error) {
	s, ok := builtins[name]
	if !ok {
		return Scenario{}, fmt.Errorf("unknown scenario %q: valid scenarios are %s", name, strings.Join(Names(), ", "))
	}
	return s, nil
}
