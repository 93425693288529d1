package scenarios

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/cluster"
	"github.com/lockbench/lockbench/history"
	_ "github.com/lockbench/lockbench/locks"
)

// TestLeaderKillHandsOverBeforeEtcdGivesUp kills the leader while clients
// hold and wait, and needs a grant after the crash within 4 s. A lock
// request that was proposed through a follower to the dead leader is
// answered by etcd only after its request timeout (5 s + 2 × election =
// 6 s), so without the clients' per-request deadline (1 s) the first grant
// comes after the run has ended.
func TestLeaderKillHandsOverBeforeEtcdGivesUp(t *testing.T) {
	ctx := context.Background()
	c := startCluster(t)
	sc, err := Lookup("leader-kill")
	if err != nil {
		t.Fatal(err)
	}
	sc.Duration = Duration(5 * time.Second)
	sc.Steps[0].At = Duration(500 * time.Millisecond)
	for _, lock := range []string{"queue", "mutex"} {
		t.Run(lock, func(t *testing.T) {
			out, err := Run(ctx, Config{Scenario: sc, Lock: lock, Seed: 1, Prefix: "/lockbench/test-" + lock + "/",
				Endpoints: c.Endpoints(), Cluster: c})
			if err != nil {
				t.Fatal(err)
			}
			crash, grant, grants := int64(-1), int64(-1), int64(0)
			for _, e := range out.Events {
				if e.F == history.FAcquire && e.Type == history.OK {
					grants++
				}
				switch {
				case e.F == history.FFault && e.Type == history.Invoke && crash < 0:
					crash = e.Time
				case crash >= 0 && e.F == history.FAcquire && e.Type == history.OK && grant < 0:
					grant = e.Time
				}
			}
			if grants != out.Acquisitions {
				t.Errorf("Outcome.Acquisitions %d, history has %d grants", out.Acquisitions, grants)
			}
			if crash < 0 {
				t.Fatal("no crash in the history")
			}
			if grant < 0 {
				t.Fatalf("no grant after the crash at %v", time.Duration(crash))
			}
			if d := time.Duration(grant - crash); d > 4*time.Second {
				t.Fatalf("first grant %v after the crash, want ≤ 4s", d)
			}
			requireExclusion(t, out.Events, sc, c)
		})
	}
}

// TestSharedConns runs clients over fewer etcd connections than clients:
// the lock still excludes, and the RPCs of a shared connection are shared
// out so that the per-process counts add up to what was sent.
func TestSharedConns(t *testing.T) {
	ctx := context.Background()
	c := startCluster(t)
	sc, err := Lookup("contention")
	if err != nil {
		t.Fatal(err)
	}
	sc.Clients, sc.Duration = 7, Duration(1500*time.Millisecond)
	out, err := Run(ctx, Config{Scenario: sc, Lock: "queue", Seed: 1, Prefix: "/lockbench/test-shared/",
		Endpoints: c.Endpoints(), Cluster: c, SharedConns: 3})
	if err != nil {
		t.Fatal(err)
	}
	var recorded, sent int64
	procs := map[int]bool{}
	for _, e := range out.Events {
		if e.F == history.FAcquire && e.Type == history.OK {
			procs[e.Process] = true
		}
		if e.F == history.FRPCs {
			var n int64
			if err := json.Unmarshal(e.Value, &n); err != nil {
				t.Fatal(err)
			}
			recorded += n
		}
	}
	for _, n := range out.RPCs {
		sent += n
	}
	if len(procs) != sc.Clients {
		t.Errorf("%d of %d clients got the lock", len(procs), sc.Clients)
	}
	if sent == 0 || recorded != sent {
		t.Errorf("rpcs events add up to %d, clients sent %d", recorded, sent)
	}
	requireExclusion(t, out.Events, sc, c)
	if err := CheckSharedConns(sc, 3); err != nil {
		t.Errorf("contention refused shared connections: %v", err)
	}
	wc, _ := Lookup("waiter-crash")
	if _, err := Run(ctx, Config{Scenario: wc, Lock: "queue", Endpoints: c.Endpoints(), Cluster: c, SharedConns: 2}); err == nil {
		t.Error("a client-fault scenario ran on shared connections")
	}
}

// startCluster starts an embedded cluster for one test (skipped under
// -short) and closes it when the test ends.
func startCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	c, err := cluster.Start(context.Background(), cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// requireExclusion fails the test unless the history passes the exclusion
// check.
func requireExclusion(t *testing.T, events []history.Event, sc Scenario, c *cluster.Cluster) {
	t.Helper()
	rep := check.Check(events, check.Options{LivenessBound: sc.TTL() + c.Election()})
	if r := rep.Checks[check.Exclusion]; r.Verdict != check.Pass {
		t.Fatalf("exclusion %s: %+v", r.Verdict, r)
	}
}
