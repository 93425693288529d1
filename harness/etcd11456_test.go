package harness

import (
	"context"
	"os"
	"testing"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
)

// runEtcd11456 runs examples/etcd-11456.yaml with rpc-trusting on etcdBin.
func runEtcd11456(t *testing.T, etcdBin string) *Result {
	t.Helper()
	sc, err := scenarios.ParseFile("../examples/etcd-11456.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), RunSpec{Lock: "rpc-trusting", Scenario: sc, Seed: 1, Out: t.TempDir(),
		Cluster: cluster.Options{EtcdBin: etcdBin, DataParent: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// etcd #11456 through the runner and the checker: on etcd 3.4 the lock
// service grants a waiter whose lease lapsed while it waited, while the
// next waiter holds, and exclusion fails. Skipped without /usr/bin/etcd.
func TestScenarioEtcd11456On34(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd member processes")
	}
	if _, err := os.Stat("/usr/bin/etcd"); err != nil {
		t.Skip("no /usr/bin/etcd (apt-get install etcd-server)")
	}
	res := runEtcd11456(t, "/usr/bin/etcd")
	if v := res.Summary.Checks[verdict.Exclusion].Verdict; v != verdict.Fail {
		t.Errorf("etcd %s: exclusion %s, want fail (two holders); run folder %s", res.Summary.EtcdVersion, v, res.Dir)
	}
}

// The same scenario on lockbench's own etcd (3.5+ refuses the grant with
// "session is expired"): every check passes.
func TestScenarioEtcd11456OnSelf(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd member processes")
	}
	res := runEtcd11456(t, cluster.EtcdBinSelf)
	if res.Summary.Verdict != verdict.Pass {
		t.Errorf("etcd %s: verdict %s, want pass: %v; run folder %s", res.Summary.EtcdVersion, res.Summary.Verdict, res.Summary.Violations, res.Dir)
	}
}
