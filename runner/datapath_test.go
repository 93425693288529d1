package runner

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lockbench/lockbench/etcd"
	"github.com/lockbench/lockbench/scenarios"
)

// TestDataPath checks which endpoints a run's clients dial: the members'
// own listeners when no fault needs the front doors, the front doors for
// every scenario with a member fault, and what the caller gave otherwise.
func TestDataPath(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	front, direct := c.Endpoints(), c.DirectEndpoints()
	if slices.Equal(front, direct) {
		t.Fatalf("direct endpoints %v are the front doors", direct)
	}
	for _, name := range scenarios.Names() {
		sc, err := scenarios.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		want := direct
		if sc.Needs().Members {
			want = front
		}
		if got := dataPath(Config{Backend: etcd.Backend{}, Scenario: sc, Endpoints: front, Cluster: etcd.Members{Members: c}}); !slices.Equal(got, want) {
			t.Errorf("%s (member faults %v): clients dial %v, want %v", name, sc.Needs().Members, got, want)
		}
		if got := dataPath(Config{Backend: etcd.Backend{}, Scenario: sc, Endpoints: front, Cluster: etcd.Members{Members: c}, FrontDoors: true}); !slices.Equal(got, front) {
			t.Errorf("%s with FrontDoors: clients dial %v, want the front doors %v", name, got, front)
		}
	}
	sc, _ := scenarios.Lookup("contention")
	if got := dataPath(Config{Backend: etcd.Backend{}, Scenario: sc, Endpoints: front[:1], Cluster: etcd.Members{Members: c}}); !slices.Equal(got, front[:1]) {
		t.Errorf("endpoints the caller picked were replaced by %v", got)
	}
	if got := dataPath(Config{Backend: etcd.Backend{}, Scenario: sc, Endpoints: front}); !slices.Equal(got, front) {
		t.Errorf("external cluster: clients dial %v, want %v", got, front)
	}

	// A whole fault-free run on the direct path, and one with a member
	// fault through the front doors.
	sc.Clients, sc.Duration = 3, scenarios.Duration(500*time.Millisecond)
	out, err := Run(context.Background(), Config{Backend: etcd.Backend{}, Scenario: sc, Lock: "queue", Seed: 1, Prefix: "/lockbench/test-direct/", Endpoints: front, Cluster: etcd.Members{Members: c}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Endpoints, direct) || out.Acquisitions == 0 {
		t.Errorf("fault-free run: dialed %v with %d grants, want %v and some grants", out.Endpoints, out.Acquisitions, direct)
	}
	requireExclusion(t, out.Events, sc, c)
	lk, _ := scenarios.Lookup("partition-leader")
	lk.Clients, lk.Duration = 3, scenarios.Duration(time.Second)
	lk.Steps[0].At, lk.Steps[0].For = scenarios.Duration(200*time.Millisecond), scenarios.Duration(300*time.Millisecond)
	out, err = Run(context.Background(), Config{Backend: etcd.Backend{}, Scenario: lk, Lock: "queue", Seed: 1, Prefix: "/lockbench/test-front/", Endpoints: front, Cluster: etcd.Members{Members: c}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Endpoints, front) {
		t.Errorf("member-fault run: dialed %v, want the front doors %v", out.Endpoints, front)
	}
}
