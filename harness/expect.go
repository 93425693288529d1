package harness

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
)

// ExpectationsFor is what a suite expects of lock in scenario sc under a
// keepalive policy (the one lock really runs under, etcdlocks.EffectiveKeepAlive:
// a strategy that keeps its own lease is never judged by a policy's
// expectations): the scenario's expectations for it, overlaid with the
// strategy's own for that scenario (locks.Strategy.Expect), without the
// checks either leaves unjudged ("any").
func ExpectationsFor(sc scenarios.Scenario, lock, keepalive string) map[string]verdict.Verdict {
	st, _ := locks.Lookup(lock)
	out := sc.Expect.For(subject(lock, keepalive))
	maps.Copy(out, st.Expect[sc.Name])
	maps.DeleteFunc(out, func(_ string, v verdict.Verdict) bool { return v == verdict.Any })
	return out
}

// AnyReasons is, for each check expect does not judge, why the scenario
// says "any" of it for lock under keepalive, where it says why; nil when
// it gives no reason.
func AnyReasons(sc scenarios.Scenario, lock, keepalive string, expect map[string]verdict.Verdict) map[string]string {
	var out map[string]string
	sub := subject(lock, keepalive)
	for _, name := range verdict.CheckNames {
		if _, judged := expect[name]; judged {
			continue
		}
		if why := sc.AnyReason(sub, name); why != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = why
		}
	}
	return out
}

// Judge compares a run's verdicts with what its scenario expects of the
// strategy, check by check.
func Judge(sum report.Summary, expect map[string]verdict.Verdict) report.Cell {
	cell := report.Cell{Summary: sum, Matches: true, ExpectedChecks: expect}
	var exp []verdict.Verdict
	var diffs []string
	for _, name := range slices.Sorted(maps.Keys(expect)) {
		want := expect[name]
		exp = append(exp, want)
		got := verdict.Unknown
		if r, ok := sum.Checks[name]; ok {
			got = r.Verdict
		}
		if got != want {
			cell.Matches = false
			diffs = append(diffs, fmt.Sprintf("%s: %s, expected %s", name, got, want))
		}
	}
	if sum.Interrupted {
		cell.Matches = false
		diffs = append(diffs, "interrupted")
	}
	if len(sum.Stuck) > 0 {
		cell.Matches = false
		diffs = append(diffs, "stuck: "+strings.Join(sum.Stuck, "; "))
	}
	if !cell.Matches && sum.Saturated() {
		diffs = append([]string{"harness saturated: " + sum.Saturation.Reason}, diffs...)
	}
	if len(exp) > 0 {
		cell.Expected = verdict.Worst(exp...)
	}
	// A check the scenario does not judge is said to be so: a failing one
	// must never read as if "pass" were expected of it.
	for _, name := range verdict.CheckNames {
		if r, ok := sum.Checks[name]; ok && r.Verdict != verdict.Pass && name != verdict.Herd {
			if _, judged := expect[name]; !judged {
				diffs = append(diffs, fmt.Sprintf("%s: %s, not asserted", name, r.Verdict))
			}
		}
	}
	cell.Note = strings.Join(diffs, "; ")
	return cell
}

// WithReasons is sc, or the built-in scenario of its name when that has
// the same expectations: config.json records a scenario's expectations
// but not the comments that say why a check is "any" (they are YAML
// comments), which the built-in one carries.
func WithReasons(sc scenarios.Scenario) scenarios.Scenario {
	if b, err := scenarios.Lookup(sc.Name); err == nil && reflect.DeepEqual(b.Expect, sc.Expect) {
		return b
	}
	return sc
}

// IsSuite reports whether dir is a suite folder (it holds suite.json).
func IsSuite(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, rundir.SuiteFile))
	return err == nil && st.Mode().IsRegular()
}

// subject is what lock's expectations are chosen by under keepalive: the
// policy it really runs under (etcdlocks.EffectiveKeepAlive: a strategy
// that keeps its own lease is never judged by a policy's expectations)
// and its backend.
func subject(lock, keepalive string) verdict.Subject {
	return verdict.Subject{Lock: lock, Backend: BackendOf(lock),
		KeepAlive: string(etcdlocks.EffectiveKeepAlive(lock, etcdlocks.KeepAlive(keepalive)))}
}
