package suite

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func init() {
	never := func(context.Context, *clientv3.Client, etcdlocks.Options) (locks.Locker, error) {
		return nil, errors.New("test only: never run")
	}
	// Hidden: no suite runs them (TestBaselineCoversTheDefaultSuite).
	etcdlocks.Register(locks.Strategy{Name: "test-own-lease", Description: "test only", OwnLease: true, Hidden: true}, never)
	etcdlocks.Register(locks.Strategy{Name: "test-carries-expect", Description: "test only", Hidden: true,
		Expect: map[string]map[string]verdict.Verdict{
			"waiter-crash": {verdict.Exclusion: verdict.Any, verdict.Liveness: verdict.Fail},
		}}, never)
}

// TestStrategyCarriesItsExpectations: a strategy's own expectations for a
// scenario override the scenario's, "any" un-asserting a check, and leave
// other scenarios alone.
func TestStrategyCarriesItsExpectations(t *testing.T) {
	wc, err := scenarios.Lookup("waiter-crash")
	if err != nil {
		t.Fatal(err)
	}
	got := harness.ExpectationsFor(wc, "test-carries-expect", "auto")
	if _, judged := got[verdict.Exclusion]; judged {
		t.Errorf("exclusion still judged: %v", got)
	}
	if got[verdict.Liveness] != verdict.Fail || got[verdict.Progress] != verdict.Pass {
		t.Errorf("expectations %v: want liveness fail (own) and progress pass (baseline)", got)
	}
	if got := harness.ExpectationsFor(wc, "queue", "auto"); got[verdict.Exclusion] != verdict.Pass {
		t.Errorf("queue's expectations changed: %v", got)
	}
	hc, _ := scenarios.Lookup("holder-crash")
	if got := harness.ExpectationsFor(hc, "test-carries-expect", "auto"); got[verdict.Exclusion] != verdict.Pass {
		t.Errorf("another scenario changed: %v", got)
	}
}

// TestOwnLeaseIsNeverJudgedByAPolicy: a strategy that keeps its own lease
// runs once however many policies a suite asks for, is labelled "own", and
// is not held to what client-isolation asserts under keepalive:safe
// (exclusion) — a guarantee of lockbench's keeper it never used — while
// queue, which uses the keeper, is.
func TestOwnLeaseIsNeverJudgedByAPolicy(t *testing.T) {
	ci, err := scenarios.Lookup("client-isolation")
	if err != nil {
		t.Fatal(err)
	}
	if got := harness.ExpectationsFor(ci, "queue", "safe"); got[verdict.Exclusion] != verdict.Pass {
		t.Fatalf("queue under safe: exclusion %q, want pass (the scenario's premise changed?)", got[verdict.Exclusion])
	}
	if got := harness.ExpectationsFor(ci, "test-own-lease", "safe"); got[verdict.Exclusion] == verdict.Pass {
		t.Errorf("own-lease strategy judged by safe's expectations: %v", got)
	}
	spec := Spec{Locks: []string{"queue", "test-own-lease"}, Seeds: 2,
		KeepAlives: []etcdlocks.KeepAlive{etcdlocks.KeepAliveAuto, etcdlocks.KeepAliveSafe}, Scenarios: []scenarios.Scenario{ci}}
	if n := len(spec.keepAlivesFor("test-own-lease")); n != 1 {
		t.Errorf("own-lease strategy runs under %d policies, want 1", n)
	}
	if n := len((&suiteRun{spec: spec}).jobs(suiteBin{})); n != (2+1)*2 {
		t.Errorf("runs per binary = %d, want (2 policies for queue + 1) × 2 seeds = 6", n)
	}
	keys := map[string]bool{}
	for _, k := range spec.cellKeys(ci.Name, []suiteBin{{}}) {
		keys[k.Key()] = true
	}
	want := []string{"queue/client-isolation", "queue/client-isolation/keepalive=auto", "test-own-lease/client-isolation"}
	if len(keys) != len(want) {
		t.Errorf("cell keys %v, want %v", keys, want)
	}
	for _, k := range want {
		if !keys[k] {
			t.Errorf("cell keys %v lack %q", keys, k)
		}
	}
	if got := etcdlocks.EffectiveKeepAlive("test-own-lease", etcdlocks.KeepAliveSafe); got != etcdlocks.KeepAliveOwn {
		t.Errorf("EffectiveKeepAlive = %q, want own", got)
	}
}

// TestAnyReasonsComeFromTheScenario: a check a built-in scenario does not
// Judge carries the comment above the entry that says "any" (queue-naive's
// exclusion in contention, seed's in client-isolation); a judged check
// (auto's and election's exclusion in client-isolation, election's
// fencing in waiter-revoke), or an entry without a comment, carries none.
func TestAnyReasonsComeFromTheScenario(t *testing.T) {
	for _, tc := range []struct {
		scenario, lock, keepalive, check, want string
	}{
		{"late-unlock", "queue", "safe", verdict.Exclusion, ""},
		{"waiter-revoke", "election", "own", verdict.Fencing, ""},
		{"contention", "queue-naive", "auto", verdict.Exclusion, "its exclusion is a race here"},
		{"client-isolation", "queue", "auto", verdict.Exclusion, ""},
		{"client-isolation", "queue", "seed", verdict.Exclusion, "only because etcd revokes an expired lease up to"},
		{"client-isolation", "election", "own", verdict.Exclusion, ""},
		{"client-isolation", "queue", "safe", verdict.Exclusion, ""},
		{"contention", "queue", "auto", verdict.Exclusion, ""},
		{"cancel-waiters", "queue-naive", "auto", verdict.Exclusion, ""},
	} {
		sc, err := scenarios.Lookup(tc.scenario)
		if err != nil {
			t.Fatal(err)
		}
		got := harness.AnyReasons(sc, tc.lock, tc.keepalive, harness.ExpectationsFor(sc, tc.lock, tc.keepalive))[tc.check]
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) || strings.Contains(got, "#") {
			t.Errorf("%s × %s (%s) %s: reason %q, want one with %q", tc.lock, tc.scenario, tc.keepalive, tc.check, got, tc.want)
		}
	}
}
