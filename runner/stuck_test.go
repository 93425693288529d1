package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/etcd"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/scenarios"
)

// stuckRelease ends every ignoreCtxLocker's wait when the test is over.
var stuckRelease = make(chan struct{})

// ignoreCtxLocker's Lock never returns while the test runs, whatever its
// context says: the bug a per-cell time limit exists for.
type ignoreCtxLocker struct{}

func (ignoreCtxLocker) Lock(context.Context) (*locks.Grant, error) {
	<-stuckRelease
	return nil, locks.ErrNotAcquired
}
func (ignoreCtxLocker) Unlock(context.Context, *locks.Grant) error { return nil }
func (ignoreCtxLocker) Close(context.Context) error                { return nil }

func init() {
	locks.Register(locks.Strategy{Name: "test-ignores-ctx", Description: "test only: Lock ignores its context", Backend: "etcd",
		New: func(context.Context, locks.Conn, locks.Options) (locks.Locker, error) {
			return ignoreCtxLocker{}, nil
		}})
}

// TestStuckLockEndsTheRun: a Lock that never returns ends the run after
// StuckAfter, naming the client and the call, instead of hanging it.
func TestStuckLockEndsTheRun(t *testing.T) {
	c := startCluster(t)
	defer close(stuckRelease)
	sc, err := scenarios.Lookup("contention")
	if err != nil {
		t.Fatal(err)
	}
	sc.Clients, sc.Duration = 2, scenarios.Duration(300*time.Millisecond)
	start := time.Now()
	out, err := Run(context.Background(), Config{Backend: etcd.Backend{}, Scenario: sc, Lock: "test-ignores-ctx", Seed: 1, Prefix: "/lockbench/test-stuck/",
		Endpoints: c.Endpoints(), Cluster: etcd.Members{Members: c}, StuckAfter: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the run took %s", took)
	}
	if len(out.Stuck) != 2 || !strings.Contains(out.Stuck[0], "client 0: Lock had not returned") {
		t.Errorf("stuck = %q, want both clients named in Lock", out.Stuck)
	}
}
