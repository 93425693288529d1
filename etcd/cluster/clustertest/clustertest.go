// Package clustertest is the embedded etcd cluster a package's tests
// share: started by the first test that needs it (skipped under -short),
// closed by the package's TestMain. A test binary that runs many
// conformance checks pays for one cluster, not one per test; tests that
// fault a cluster start their own (cluster.Start).
package clustertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/etcd/cluster"
)

var (
	once    sync.Once
	shared  *cluster.Cluster
	started error
)

// Shared is the shared cluster, started on first use. Under -short t is
// skipped; a cluster that fails to start fails t.
func Shared(t testing.TB) *cluster.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// No fsync: the shared cluster's tests judge locks, not disks.
		shared, started = cluster.Start(ctx, cluster.Options{UnsafeNoFsync: true})
	})
	if started != nil {
		t.Fatalf("start the shared etcd cluster: %v", started)
	}
	return shared
}

// Close closes the shared cluster if a test started it; TestMain calls
// it after m.Run.
func Close() {
	if shared != nil {
		shared.Close()
	}
}
