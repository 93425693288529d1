package scenarios

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Pick kinds: how each acquisition chooses among a workload's lock names
// (Workload.Locks > 1).
const (
	// PickUniform draws every name with the same chance.
	PickUniform = "uniform"
	// PickRoundRobin takes the names in turn, each client starting at its
	// own offset (client id mod locks).
	PickRoundRobin = "round-robin"
	// PickZipf draws name k (from 1) with a chance ∝ 1/k^S, S > 1: a few
	// hot names and a long tail, as jobs or tenants are.
	PickZipf = "zipf"
)

// MaxLocks bounds Workload.Locks: each name a client uses costs it a
// Locker (and, for the strategies on the shared keeper, a lease of its
// own), so more names than this would measure lease keepalives, not locks.
const MaxLocks = 65536

// Pick is a parsed Workload.Pick.
type Pick struct {
	// Kind is PickUniform, PickRoundRobin or PickZipf.
	Kind string
	// S is PickZipf's exponent (> 1).
	S float64
}

// validPicks is what a pick may be, for errors.
const validPicks = "uniform, round-robin, zipf:S (S > 1, e.g. zipf:1.2)"

// ParsePick reads a pick ("" is uniform); the error says what is valid.
func ParsePick(s string) (Pick, error) {
	switch s {
	case "", PickUniform:
		return Pick{Kind: PickUniform}, nil
	case PickRoundRobin:
		return Pick{Kind: PickRoundRobin}, nil
	}
	if rest, ok := strings.CutPrefix(s, PickZipf+":"); ok {
		v, err := strconv.ParseFloat(rest, 64)
		if err != nil || !(v > 1) || v > 1e6 {
			return Pick{}, fmt.Errorf("pick %q: zipf's exponent must be a number > 1 (e.g. zipf:1.2)", s)
		}
		return Pick{Kind: PickZipf, S: v}, nil
	}
	return Pick{}, fmt.Errorf("pick %q: valid picks are %s", s, validPicks)
}

// LockCount is the workload's number of lock names (Locks, or 1).
func (w Workload) LockCount() int {
	return max(w.Locks, 1)
}

// PickOf is the workload's parsed pick (Validate has checked it: a bad one
// reads as uniform).
func (w Workload) PickOf() Pick {
	p, err := ParsePick(w.Pick)
	if err != nil {
		return Pick{Kind: PickUniform}
	}
	return p
}

// validateNames checks the workload's locks and pick, naming the line of
// the key at fault (lines: the workload's key lines, from workloadLines).
func (s Scenario) validateNames() error {
	w := s.Workload
	at := func(key string) string { return s.where(s.workloadLines[key]) }
	_, given := s.workloadLines["locks"]
	switch {
	case w.Locks < 0 || (given && w.Locks == 0) || w.Locks > MaxLocks:
		return fmt.Errorf("%s: workload locks %d: must be 1..%d (names lock for 1, job1…jobN for more)", at("locks"), w.Locks, MaxLocks)
	case w.Locks > 1 && w.Kind != WorkloadHold:
		return fmt.Errorf("%s: workload locks %d: kind %s shares one counter across every name, so it needs locks: 1 (use kind: hold)", at("locks"), w.Locks, w.Kind)
	}
	if _, err := ParsePick(w.Pick); err != nil {
		return fmt.Errorf("%s: workload %w", at("pick"), err)
	}
	return nil
}

// workloadLines are the lines of the workload mapping's keys in the file
// b (none when it has no workload mapping), for validateNames' errors.
func workloadLines(b []byte) map[string]int {
	nodes := keyNodes(b, "workload")
	if len(nodes) == 0 {
		return nil
	}
	out := make(map[string]int, len(nodes))
	for _, k := range nodes {
		if k.Kind == yaml.ScalarNode {
			out[k.Value] = k.Line
		}
	}
	return out
}
