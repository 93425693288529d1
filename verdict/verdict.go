// Package verdict is the vocabulary that the checker, scenarios and reports
// share: the names of the checks, their three-valued verdicts, and what a
// scenario expects of each strategy. It sits below all of them so that a
// scenario (data) need not import the checker to say what it expects.
package verdict

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Verdict is three-valued, as in porcupine: a check that cannot decide says
// so rather than guessing.
type Verdict string

// Verdicts, ordered by severity: Fail > Unknown > Pass.
const (
	Pass    Verdict = "pass"
	Unknown Verdict = "unknown"
	Fail    Verdict = "fail"
)

// Any, in an expectation, un-asserts a check for one strategy: its verdict
// is reported but not judged (a race the scenario cannot pin down). It is
// never a check's result.
const Any Verdict = "any"

func (v Verdict) rank() int {
	switch v {
	case Fail:
		return 2
	case Unknown:
		return 1
	}
	return 0
}

// Worst composes verdicts: fail beats unknown beats pass.
func Worst(vs ...Verdict) Verdict {
	w := Pass
	for _, v := range vs {
		if v.rank() > w.rank() {
			w = v
		}
	}
	return w
}

// Check names (keys of check.Report.Checks and of expectations).
const (
	Exclusion = "exclusion"
	Resource  = "resource"
	Fencing   = "fencing"
	Fairness  = "fairness"
	Liveness  = "liveness"
	Herd      = "herd"
	Progress  = "progress"
	Symmetry  = "symmetry"
	Lease     = "lease"
	Cancel    = "cancel"
	Expiry    = "expiry"
	Orphans   = "orphans"
)

// CheckNames lists every check the checker runs, in a stable order.
var CheckNames = []string{Exclusion, Resource, Fencing, Fairness, Liveness, Herd, Progress, Symmetry, Lease, Cancel, Expiry, Orphans}

// Baseline is what every scenario expects of every strategy unless it says
// otherwise: a lock must serve its clients (progress), only a holder may
// release its lock (symmetry), a lease is not lost without a fault
// (lease), a caller that gives up gets its call back (cancel: a
// scenario that cancels nothing passes it with a note), the server
// keeps a lease as it promises (expiry) and a client leaves no key
// behind (orphans). A scenario overrides an entry like any other.
var Baseline = map[string]Verdict{Progress: Pass, Symmetry: Pass, Lease: Pass, Cancel: Pass, Expiry: Pass, Orphans: Pass}

// DefaultKey is the Expectations key whose entries apply to every strategy.
const DefaultKey = "default"

// KeepAlivePrefix starts an Expectations key that applies to every
// strategy run under one keepalive policy ("keepalive:safe"): whether a
// holder stops believing before its lease expires is the policy's doing,
// not the strategy's, so a scenario that probes it says so per policy.
const KeepAlivePrefix = "keepalive:"

// BackendPrefix starts an Expectations key that applies to every
// strategy of one backend ("backend:redis"): what a scenario's fault
// costs depends on the system under the lock (a failover that loses an
// acknowledged write is Redis's, not a quorum's), so a scenario that
// runs on several says so per backend.
const BackendPrefix = "backend:"

// Expectations map a strategy name, DefaultKey, BackendPrefix and a
// backend, or KeepAlivePrefix and a keepalive policy, to the verdict
// expected of each check.
type Expectations map[string]map[string]Verdict

// Subject is what a cell's expectations are chosen by: the strategy, the
// backend it runs on, and the keepalive policy it runs under ("" for
// none).
type Subject struct{ Lock, Backend, KeepAlive string }

// keys are the Expectations keys that apply to s, strongest first: the
// strategy's own entries over the policy's over the backend's over the
// defaults. The strategy's entries win because a strategy that is wrong
// by itself (a buggy one) is wrong whatever keeps its lease.
func (s Subject) keys() []string {
	return []string{s.Lock, KeepAlivePrefix + s.KeepAlive, BackendPrefix + s.Backend, DefaultKey}
}

// For returns the verdicts expected of s: the entries that apply to it
// (Subject.keys) over the Baseline, without the checks it expects Any of.
func (e Expectations) For(s Subject) map[string]Verdict {
	out := maps.Clone(Baseline)
	keys := s.keys()
	for i := len(keys) - 1; i >= 0; i-- {
		maps.Copy(out, e[keys[i]])
	}
	maps.DeleteFunc(out, func(_ string, v Verdict) bool { return v == Any })
	return out
}

// Decider is the key of the entry that decides check for s (the
// strongest that names it), "" when none does.
func (e Expectations) Decider(s Subject, check string) string {
	for _, key := range s.keys() {
		if _, ok := e[key][check]; ok {
			return key
		}
	}
	return ""
}

// Names tell Expectations.Validate what the names in its keys may be.
type Names struct {
	// Lock fails for an unknown strategy name.
	Lock func(string) error
	// KeepAlive fails for an unknown keepalive policy.
	KeepAlive func(string) error
	// Backend fails for an unknown backend.
	Backend func(string) error
}

// Validate reports the first unknown strategy, policy, check or verdict;
// where gives the message's prefix (a file and line) for a key.
func (e Expectations) Validate(where func(key string) string, names Names) error {
	for _, key := range slices.Sorted(maps.Keys(e)) {
		if err := names.key(key); err != nil {
			return fmt.Errorf("%s: expect: %w", where(key), err)
		}
		for _, c := range slices.Sorted(maps.Keys(e[key])) {
			if !slices.Contains(CheckNames, c) {
				return fmt.Errorf("%s: expect.%s: unknown check %q: valid checks are %s", where(key), key, c, strings.Join(CheckNames, ", "))
			}
			if v := e[key][c]; v != Pass && v != Fail && v != Unknown && v != Any {
				return fmt.Errorf("%s: expect.%s.%s: verdict %q: valid verdicts are pass, fail, unknown, any", where(key), key, c, v)
			}
		}
	}
	return nil
}

// key checks one Expectations key.
func (n Names) key(key string) error {
	switch {
	case key == DefaultKey:
		return nil
	case strings.HasPrefix(key, KeepAlivePrefix):
		if err := n.KeepAlive(strings.TrimPrefix(key, KeepAlivePrefix)); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return nil
	case strings.HasPrefix(key, BackendPrefix):
		if err := n.Backend(strings.TrimPrefix(key, BackendPrefix)); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return nil
	}
	if err := n.Lock(key); err != nil {
		return fmt.Errorf("%w (or %s, %sPOLICY or %sNAME)", err, DefaultKey, KeepAlivePrefix, BackendPrefix)
	}
	return nil
}
