package suite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/scenarios"
)

// TestClusterFor: a scenario's faults get the cluster options they need
// and the user did not give, on the embedded cluster only; what a kind
// cannot give is then refused by name, never left to fail when the fault
// strikes.
func TestClusterFor(t *testing.T) {
	lookup := func(n string) scenarios.Scenario {
		sc, err := scenarios.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	for _, tc := range []struct {
		scenario   string
		opts       cluster.Options
		relays     bool
		count      uint64
		refusedFor string // "" when the cluster can run it
	}{
		{"contention", cluster.Options{}, false, 0, ""},
		{"leader-kill", cluster.Options{}, false, 0, ""},
		{"drop-peers", cluster.Options{}, true, 0, ""},
		{"delay-peers", cluster.Options{SnapshotCount: 50}, true, 50, ""},
		{"snapshot-catchup", cluster.Options{}, false, harness.CatchUpSnapshotCount, ""},
		{"snapshot-catchup", cluster.Options{PeerRelays: true, SnapshotCount: 300}, true, 300, ""},
		{"snapshot-catchup", cluster.Options{SnapshotCount: 5000}, false, 5000, "--snapshot-count 1..1000"},
		{"snapshot-catchup", cluster.Options{EtcdBin: cluster.EtcdBinSelf}, false, 0, "process cluster does not set"},
		{"drop-peers", cluster.Options{EtcdBin: cluster.EtcdBinSelf}, false, 0, ""},
		{"replace-member", cluster.Options{}, false, 0, ""},
	} {
		sc := lookup(tc.scenario)
		got := harness.ClusterFor(tc.opts, sc)
		if got.PeerRelays != tc.relays || got.SnapshotCount != tc.count || got.EtcdBin != tc.opts.EtcdBin {
			t.Errorf("%s on %+v: relays %v, snapshot count %d; want %v, %d", tc.scenario, tc.opts, got.PeerRelays, got.SnapshotCount, tc.relays, tc.count)
		}
		err := harness.Refused(got, sc)
		switch {
		case tc.refusedFor == "" && err != nil:
			t.Errorf("%s on %+v: refused: %v", tc.scenario, tc.opts, err)
		case tc.refusedFor != "" && (err == nil || !strings.Contains(err.Error(), tc.refusedFor)):
			t.Errorf("%s on %+v: %v, want a refusal naming %q", tc.scenario, tc.opts, err, tc.refusedFor)
		}
		if vErr := (harness.RunSpec{Lock: "queue", Scenario: sc, Cluster: tc.opts, Out: t.TempDir()}).Validate(); (vErr != nil) != (tc.refusedFor != "") {
			t.Errorf("%s on %+v: Validate %v", tc.scenario, tc.opts, vErr)
		}
	}
	if note := harness.FaultOptionsNote(cluster.Options{}, harness.ClusterFor(cluster.Options{}, lookup("snapshot-catchup"))); !strings.Contains(note, "snapshot count of 100") {
		t.Errorf("note %q", note)
	}
}

// TestSuiteGivesEachCellItsCluster runs plain, peer-relay and
// snapshot-catchup cells, two seeds each, in one suite without any
// cluster flag: every fault strikes and ends ok (drop-peers on a cluster
// without relays fails; a second catch-up on a cluster that sent a
// snapshot less than 30 s before cuts its follower again until it gets
// one, past the cell's end), the commit floor is the plain
// cluster's, and the notes say which cells had a cluster of their own.
func TestSuiteGivesEachCellItsCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd clusters")
	}
	var scs []scenarios.Scenario
	for _, n := range []string{"drop-peers", "contention", "snapshot-catchup"} {
		sc, err := scenarios.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Needs().SnapshotCount {
			// Room for the catch-up's 300 writes under -race on a loaded
			// machine (281 in 4 s once); a second catch-up on a cluster
			// that sent a snapshot in the cell before would still need
			// the rest of those 30 s.
			sc.Duration = scenarios.Duration(10 * time.Second)
		}
		scs = append(scs, sc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, Spec{Locks: []string{"queue"}, Scenarios: scs, Seeds: 2, Out: t.TempDir(), QuickDuration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 6 {
		t.Fatalf("%d cells, want 6; notes %q", len(res.Cells), res.Notes)
	}
	for _, c := range res.Cells {
		f, err := rundir.Load(filepath.Join(res.Dir, c.Dir))
		if err != nil {
			t.Fatal(err)
		}
		// config.json says which cluster the cell had: contention shares
		// the default one, drop-peers has relays, snapshot-catchup a
		// snapshot count of its own.
		want := map[string][2]any{"contention": {false, uint64(0)}, "drop-peers": {true, uint64(0)}, "snapshot-catchup": {false, uint64(harness.CatchUpSnapshotCount)}}[c.Summary.Scenario]
		if got := [2]any{f.Config.Cluster.PeerRelays, f.Config.Cluster.SnapshotCount}; got != want {
			t.Errorf("%s seed %d: config.json's cluster has peer_relays, snapshot_count %v, want %v", c.Summary.Scenario, c.Summary.Seed, got, want)
		}
		if c.Summary.Scenario == "contention" {
			continue
		}
		var ok, failed int
		var why []string
		for _, e := range f.Events {
			if e.F != history.FFault {
				continue
			}
			switch e.Type {
			case history.OK:
				ok++
			case history.Fail, history.Info:
				failed++
				why = append(why, e.Error)
			}
		}
		if ok != 1 || failed != 0 {
			t.Errorf("%s seed %d: %d faults ok, %d not (%s); want 1 ok", c.Summary.Scenario, c.Summary.Seed, ok, failed, strings.Join(why, "; "))
		}
	}
	notes := strings.Join(res.Notes, "\n")
	for _, want := range []string{"scenario drop-peers ran on a cluster of its own: its faults need the cluster started with peer relays",
		"scenario snapshot-catchup ran on a cluster of its own: its faults need the cluster started with a snapshot count of 100 (as --snapshot-count 100); a fresh one for each cell"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q lack %q", notes, want)
		}
	}
	if res.Header.Floor == nil {
		t.Errorf("no commit floor measured; notes %q", notes)
	}
}

// TestRunGivesTheScenarioItsCluster: Run, without any cluster option,
// starts the cluster a peer-fault scenario needs, says so through
// Notice, and the fault strikes and ends ok.
func TestRunGivesTheScenarioItsCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	sc, err := scenarios.Lookup("delay-peers")
	if err != nil {
		t.Fatal(err)
	}
	sc.Duration = scenarios.Duration(3 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var notices []string
	res, err := harness.Run(ctx, harness.RunSpec{Lock: "queue", Scenario: sc, Seed: 1, Out: t.TempDir(), Notice: func(m string) { notices = append(notices, m) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "scenario delay-peers: its faults need the cluster started with peer relays") {
		t.Errorf("notices %q", notices)
	}
	f, err := rundir.Load(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Config.Cluster.PeerRelays {
		t.Errorf("config.json's cluster lacks peer_relays: %+v", f.Config.Cluster)
	}
	var ok int
	for _, e := range f.Events {
		if e.F == history.FFault && e.Type != history.Invoke {
			if e.Type != history.OK {
				t.Errorf("fault %s: %s", e.Type, e.Error)
			}
			ok++
		}
	}
	if ok != 1 {
		t.Errorf("%d fault outcomes, want 1", ok)
	}
}
