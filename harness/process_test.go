package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/scenarios"
)

// TestMain lets the test binary be an etcd member (--etcd-bin self).
func TestMain(m *testing.M) {
	cluster.RunMemberIfAsked()
	os.Exit(m.Run())
}

func pauseLeader(t *testing.T) scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.ParseFile("../examples/pause-leader.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// The embedded cluster refuses pause-member before anything starts, and
// the message names the kind.
func TestEmbeddedRefusesPauseMember(t *testing.T) {
	spec := RunSpec{Lock: "queue", Scenario: pauseLeader(t), Out: t.TempDir()}
	err := spec.Validate()
	if err == nil || !strings.Contains(err.Error(), cluster.KindEmbedded) || !strings.Contains(err.Error(), "--etcd-bin") {
		t.Fatalf("Validate: %v, want a refusal naming the embedded kind", err)
	}
	spec.Cluster.EtcdBin = cluster.EtcdBinSelf
	if err := spec.Validate(); err != nil {
		t.Fatalf("with --etcd-bin self: %v", err)
	}
}

// A run on member processes pauses the leader, writes the members' logs
// into its run folder, and leaves no data folder behind.
func TestRunOnProcessesPauseLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd member processes")
	}
	sc := pauseLeader(t)
	sc.Duration = scenarios.Duration(6 * time.Second)
	data := t.TempDir()
	spec := RunSpec{Lock: "queue", Scenario: sc, Seed: 1, Out: t.TempDir(),
		Cluster: cluster.Options{EtcdBin: cluster.EtcdBinSelf, DataParent: data}}
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		b, err := os.ReadFile(filepath.Join(res.Dir, cluster.LogName(i)))
		if err != nil || len(b) == 0 {
			t.Errorf("member log %d: %v (%d bytes)", i, err, len(b))
		}
	}
	if res.Summary.Faults == 0 {
		t.Errorf("no fault recorded")
	}
	if left, _ := os.ReadDir(data); len(left) > 0 {
		t.Errorf("left in the data parent: %v", left)
	}
	cfg, _ := os.ReadFile(filepath.Join(res.Dir, "config.json"))
	if !strings.Contains(string(cfg), `"cluster_kind": "process"`) && !strings.Contains(string(cfg), `"cluster_kind":"process"`) {
		t.Errorf("config.json does not record the process kind")
	}
}
