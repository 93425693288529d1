package runner

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockbench/lockbench/etcd"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/scenarios"
)

// TestCounterUnderLease: the counter a run writes stays under the admin
// client's lease through the clients' writes, so that a killed run (no
// close, no prefix delete) leaves nothing behind once the lease ends; and
// a run that closes leaves no key.
func TestCounterUnderLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := startCluster(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	sc, err := scenarios.Lookup("contention")
	if err != nil {
		t.Fatal(err)
	}
	sc.Clients, sc.Duration = 3, scenarios.Duration(700*time.Millisecond)
	sc.Workload.Kind = scenarios.WorkloadCounterFenced
	prefix := "/lockbench/test-counter-lease/"
	r, _, err := newRunner(Config{Backend: etcd.Backend{}, Scenario: sc, Lock: "queue", Seed: 1, Prefix: prefix, Endpoints: c.Endpoints(), Cluster: etcd.Members{Members: c}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.connect(ctx); err != nil {
		r.close()
		t.Fatal(err)
	}
	if err := r.run(ctx, nil); err != nil {
		r.close()
		t.Fatal(err)
	}
	writes := 0
	for _, e := range r.rec.Events() {
		if e.F == history.FWrite && e.Type == history.OK {
			writes++
		}
	}
	resp, err := cli.Get(ctx, counterKey(prefix))
	if err != nil || len(resp.Kvs) != 1 {
		r.close()
		t.Fatalf("counter: %v %v", resp, err)
	}
	admin := r.admin.(*etcd.Admin)
	if kv := resp.Kvs[0]; writes == 0 || kv.Lease != int64(admin.Lease()) || kv.Version < 2 {
		t.Errorf("after %d writes the counter has lease %x (want the admin's %x), version %d", writes, kv.Lease, admin.Lease(), kv.Version)
	}
	ttl, err := cli.TimeToLive(ctx, admin.Lease())
	if err != nil || ttl.TTL <= 0 || ttl.GrantedTTL != etcd.KeepTTL {
		t.Errorf("counter lease TTL %d of %d (%v): want alive, granted %d", ttl.TTL, ttl.GrantedTTL, err, etcd.KeepTTL)
	}
	// What a SIGKILL leaves: the lease ends (here: revoked instead of
	// waiting out its TTL), and the counter goes with it.
	if err := admin.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if resp, err := cli.Get(ctx, counterKey(prefix)); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("counter outlived its lease: %v %v", resp, err)
	}
	r.close()
	if resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Errorf("after close %d keys under %s (%v)", resp.Count, prefix, err)
	}
}
