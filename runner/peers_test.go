package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/etcd"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/scenarios"
)

// TestReplaceMemberUnderQueue replaces a follower while queue clients
// take turns: the fault ends ok, exactly one member has a new ID, the lock
// is granted after the replacement, and exclusion holds. The run lasts as
// long as the extended set's replace-member: a replacement takes up to 12 s
// (see cluster.replaceMember; under CI's load it outlasted a 4 s run).
func TestReplaceMemberUnderQueue(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	sc, err := scenarios.Parse("replace.yaml", strings.NewReader(`
name: replace
clients: 4
lease_ttl: 2s
duration: 14s
workload: {kind: hold, hold: 20ms}
steps:
  - {at: 500ms, fault: replace-member, target: follower}
`))
	if err != nil {
		t.Fatal(err)
	}
	// etcd refuses to add a member until the member asked has been
	// connected to its peers for 5 s (HealthInterval): a cluster in use
	// has been, one just started not yet.
	time.Sleep(5 * time.Second)
	var before []string
	for _, m := range c.Members() {
		before = append(before, m.ID().String())
	}
	out, err := Run(context.Background(), Config{Backend: etcd.Backend{}, Scenario: sc, Lock: "queue", Seed: 1, Prefix: "/lockbench/test-replace/",
		Endpoints: c.Endpoints(), Cluster: etcd.Members{Members: c}})
	if err != nil {
		t.Fatal(err)
	}
	changed := 0
	for i, m := range c.Members() {
		if m.ID().String() != before[i] {
			changed++
			t.Logf("member %d: ID %s, now %s", i, before[i], m.ID())
		}
	}
	if changed != 1 {
		t.Errorf("%d members changed ID, want 1", changed)
	}
	ended, grantsAfter := history.Type(0), 0
	for _, e := range out.Events {
		switch {
		case e.F == history.FFault && e.Type != history.Invoke:
			ended = e.Type
			if e.Error != "" {
				t.Errorf("replace-member: %s", e.Error)
			}
		case ended != 0 && e.F == history.FAcquire && e.Type == history.OK:
			grantsAfter++
		}
	}
	t.Logf("fault ended %s; %d grants after it", ended, grantsAfter)
	if ended != history.OK || grantsAfter == 0 {
		t.Fatalf("fault ended %q, %d grants after it", ended, grantsAfter)
	}
	requireExclusion(t, out.Events, sc, c)
}
