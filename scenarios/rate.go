package scenarios

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Arrival processes of an open-loop workload (Workload.Rate).
const (
	// ArrivalsUniform spaces arrivals evenly, 1/rate apart.
	ArrivalsUniform = "uniform"
	// ArrivalsPoisson draws exponential gaps of mean 1/rate from the
	// run's seed: the arrivals of many independent callers.
	ArrivalsPoisson = "poisson"
)

// arrivalKinds are the valid Workload.Arrivals, in the order messages list
// them.
var arrivalKinds = []string{ArrivalsUniform, ArrivalsPoisson}

// MaxRate bounds Workload.Rate: far beyond what an etcd cluster commits,
// so a larger value is a typo (a missing unit, an extra zero).
const MaxRate = 1e6

// Rate is an offered load in acquisitions per second over all clients,
// written "200/s" in YAML and JSON. Zero means none: the workload is
// closed-loop.
type Rate float64

// PerS is r as acquisitions per second.
func (r Rate) PerS() float64 { return float64(r) }

func (r Rate) String() string { return strconv.FormatFloat(float64(r), 'f', -1, 64) + "/s" }

// ParseRate reads "200/s" (a number > 0 and ≤ MaxRate, then "/s"); the
// error says what is valid.
func ParseRate(s string) (Rate, error) {
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "/s")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	switch {
	case !ok || err != nil || math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fmt.Errorf("rate %q: want acquisitions per second over all clients, a number followed by /s, e.g. 200/s", s)
	case v <= 0 || v > MaxRate:
		return 0, fmt.Errorf("rate %q: must be > 0/s and ≤ %s/s", s, strconv.FormatFloat(MaxRate, 'f', -1, 64))
	}
	return Rate(v), nil
}

// UnmarshalYAML reads "200/s".
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseRate(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*r = v
	return nil
}

// MarshalYAML writes "200/s".
func (r Rate) MarshalYAML() (any, error) { return r.String(), nil }

// MarshalJSON writes "200/s".
func (r Rate) MarshalJSON() ([]byte, error) { return json.Marshal(r.String()) }

// UnmarshalJSON reads "200/s" (config.json embeds the scenario).
func (r *Rate) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("rate %s: want a string like \"200/s\"", b)
	}
	v, err := ParseRate(s)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// OpenLoop reports whether the workload offers load at a fixed arrival
// rate (Rate set) instead of each client asking again once it released.
func (w Workload) OpenLoop() bool { return w.Rate > 0 }

// ArrivalKind is the workload's arrival process: Arrivals, or uniform.
func (w Workload) ArrivalKind() string {
	if w.Arrivals == "" {
		return ArrivalsUniform
	}
	return w.Arrivals
}

// validateOpenLoop checks rate and arrivals: arrivals only with a rate,
// one of the known processes, and no think (with a rate the arrivals pace
// the clients, not a pause after each release).
func (w Workload) validateOpenLoop(where string) error {
	switch {
	case w.Rate < 0:
		return fmt.Errorf("%s: rate %s: must be > 0/s", where, w.Rate)
	case w.Arrivals != "" && !w.OpenLoop():
		return fmt.Errorf("%s: arrivals %q applies only to an open-loop workload: give rate too (e.g. rate: 200/s)", where, w.Arrivals)
	case w.Arrivals != "" && !contains(arrivalKinds, w.Arrivals):
		return fmt.Errorf("%s: arrivals %q: valid arrivals are %s", where, w.Arrivals, strings.Join(arrivalKinds, ", "))
	case w.OpenLoop() && w.Think > 0:
		return fmt.Errorf("%s: think %s with rate %s: think applies to closed-loop load only (with a rate the arrivals pace the clients); drop one", where, w.Think, w.Rate)
	}
	return nil
}
