package runner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/etcd"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
)

// TestLeaseAndKeyOpsRecorded runs mutex on a real cluster with its holder
// crashing: every lease a client was granted is recorded with its TTL and
// renewals (each answered after its send), every grant's key is recorded
// created under the grant's own lease at the grant's revision, and the
// expiry and orphans checks judge the history (the crashed holder's key,
// the released keys) and pass it.
func TestLeaseAndKeyOpsRecorded(t *testing.T) {
	c := startCluster(t)
	sc, err := scenarios.Parse("lease-ops.yaml", strings.NewReader(`
name: lease-ops
clients: 3
lease_ttl: 1s
duration: 4s
workload: {kind: hold, hold: 100ms}
steps:
  - {at: 500ms, fault: crash-client, target: holder}
`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), Config{Backend: etcd.Backend{}, Scenario: sc, Lock: "mutex", Seed: 1, Prefix: "/lockbench/test-lease-ops/",
		Endpoints: c.Endpoints(), Cluster: etcd.Members{Members: c}})
	if err != nil {
		t.Fatal(err)
	}
	renewed := map[string]int{}
	created := map[[2]any]bool{}
	for _, e := range out.Events {
		switch e.F {
		case history.FLeaseOp:
			var v history.LeaseOp
			if err := json.Unmarshal(e.Value, &v); err != nil {
				t.Fatalf("lease-op value %s: %v", e.Value, err)
			}
			if v.Op == history.LeaseGrant || v.Op == history.LeaseRenew {
				if v.TTLNS != int64(time.Second) || v.SentNS > e.Time || v.SentNS <= 0 {
					t.Errorf("%s of lease %s: TTL %d ns, sent at %d, answered at %d", v.Op, v.Lease, v.TTLNS, v.SentNS, e.Time)
				}
				renewed[v.Lease]++
			}
		case history.FKeyOp:
			var v history.KeyOp
			if err := json.Unmarshal(e.Value, &v); err != nil {
				t.Fatalf("key-op value %s: %v", e.Value, err)
			}
			if v.Op == history.KeyCreate {
				created[[2]any{v.Lease, v.Revision}] = true
			}
		}
	}
	grants := 0
	for _, e := range out.Events {
		if e.F == history.FAcquire && e.Type == history.OK {
			grants++
			if !created[[2]any{e.Lease, e.Token}] {
				t.Errorf("grant of token %d under lease %s: no key-op create of that key", e.Token, e.Lease)
			}
			if renewed[e.Lease] < 2 {
				t.Errorf("lease %s: %d grant and renewals recorded, want the grant and a renewal at least", e.Lease, renewed[e.Lease])
			}
		}
	}
	if grants == 0 {
		t.Fatal("no grant")
	}
	rep := check.Check(out.Events, check.Options{LivenessBound: sc.TTL() + c.Election(), ElectionTimeout: c.Election()})
	for name, judged := range map[string]string{verdict.Expiry: "abandoned_keys", verdict.Orphans: "orphans_judged"} {
		r := rep.Checks[name]
		if r.Verdict != verdict.Pass || r.NotJudged || r.Metrics[judged] < 1 {
			t.Errorf("%s %s (not judged %v, %s %v): %+v", name, r.Verdict, r.NotJudged, judged, r.Metrics[judged], r)
		}
	}
}
