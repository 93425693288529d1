package etcdlocks_test

import (
	"testing"

	"github.com/lockbench/lockbench/etcd/locktest"
	"github.com/lockbench/lockbench/locks"
)

// TestConformanceRequireLeader runs the conformance suite for the two
// hidden require-leader strategies: with the leader in place they are
// etcd's Mutex, and must pass it (their leader-loss behaviour is
// harness's TestScenarioEtcd21126). They are hidden, so TestConformance
// does not reach them.
func TestConformanceRequireLeader(t *testing.T) {
	for _, name := range []string{"mutex-requireleader", "keepalive-requireleader"} {
		t.Run(name, func(t *testing.T) {
			s, err := locks.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			if !s.Hidden || !s.OwnLease {
				t.Errorf("%s: Hidden %v, OwnLease %v; want both", name, s.Hidden, s.OwnLease)
			}
			locktest.Run(t, s.New, locktest.Env{Endpoints: endpoints(t), Clients: 3, Rounds: 6})
		})
	}
}
