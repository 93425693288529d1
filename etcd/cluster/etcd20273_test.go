package cluster

import (
	"context"
	"os"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/features"
)

// leaseOverrun grants a lease of ttl, puts a key under it and never
// refreshes it (a holder that crashed at once), moves the leadership to
// another member after wait, and returns how long the key outlived the
// lease's TTL, measured from the grant's answer to the key's deletion.
func leaseOverrun(t *testing.T, checkpoint bool, ttl, wait time.Duration) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{UnsafeNoFsync: true, LeaseCheckpoint: checkpoint})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		dir := c.DataDir()
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		os.RemoveAll(dir)
	}()
	for _, m := range c.Members() {
		m.mu.Lock()
		on := m.etcd.Server.FeatureEnabled(features.LeaseCheckpoint)
		m.mu.Unlock()
		if on != checkpoint {
			t.Fatalf("member %d: LeaseCheckpoint %v, asked %v", m.Index, on, checkpoint)
		}
	}
	cli := client(t, c.Endpoints()...)
	l, err := cli.Grant(ctx, int64(ttl/time.Second))
	if err != nil {
		t.Fatal(err)
	}
	granted := time.Now()
	put, err := cli.Put(ctx, "/20273", "held", clientv3.WithLease(l.ID))
	if err != nil {
		t.Fatal(err)
	}
	wch := cli.Watch(ctx, "/20273", clientv3.WithRev(put.Header.Revision+1))
	time.Sleep(wait)
	leader, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := MoveLeader(ctx, c, (leader+1)%c.Count()); err != nil {
		t.Fatal(err)
	}
	for resp := range wch {
		if err := resp.Err(); err != nil {
			t.Fatal(err)
		}
		for _, ev := range resp.Events {
			if ev.Type == clientv3.EventTypeDelete {
				return time.Since(granted) - ttl
			}
		}
	}
	t.Fatal("the watch ended before the key's lease expired")
	return 0
}

// TestEtcd20273: a planned leader change gives a lease that nobody
// refreshes a full TTL again from the change (plus an election timeout,
// lessor.Promote), so a crashed holder's lock outlives its TTL by about
// the time between its last refresh and the change. LeaseCheckpoint does
// not help a lock's lease in v3.7.3: the lessor checkpoints only leases
// whose remaining TTL is above the checkpoint interval (5 minutes, which
// the embedded server does not let one change). A measurement, printed
// with -v (make measure-etcd-20273); it asserts only that the lease did
// outlive its TTL by more than half the wait, either way.
func TestEtcd20273(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts etcd clusters")
	}
	const ttl, wait = 3 * time.Second, 1500 * time.Millisecond
	for _, checkpoint := range []bool{false, true} {
		over := leaseOverrun(t, checkpoint, ttl, wait)
		t.Logf("lease checkpoint %v: a %s lease, never refreshed, leader moved %s after the grant: deleted %s after its TTL ended", checkpoint, ttl, wait, over.Round(time.Millisecond))
		if over < wait/2 {
			t.Errorf("lease checkpoint %v: the lease outlived its TTL by %s only: the leader change did not renew it (etcd #20273 fixed?)", checkpoint, over)
		}
	}
}
