package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestCompactFailsOldWatches: after Compact, a watch from a revision
// before it fails with ErrCompacted, and one from the compacted revision
// on does not: what a lock's waiter meets under compaction.
func TestCompactFailsOldWatches(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli := client(t, c.Endpoints()...)
	first, err := cli.Put(ctx, "/k", "1")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := cli.Put(ctx, "/k", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, physical := range []bool{false, true} {
		rev, err := Compact(ctx, cli, physical)
		if err != nil {
			t.Fatal(err)
		}
		if rev <= first.Header.Revision {
			t.Fatalf("compacted to %d, not past the first put's %d", rev, first.Header.Revision)
		}
		wctx, wcancel := context.WithCancel(ctx)
		resp := <-cli.Watch(wctx, "/k", clientv3.WithRev(first.Header.Revision))
		wcancel()
		if !errors.Is(resp.Err(), rpctypes.ErrCompacted) || resp.CompactRevision != rev {
			t.Errorf("physical %v: watch from %d: %v (compact revision %d), want ErrCompacted at %d", physical, first.Header.Revision, resp.Err(), resp.CompactRevision, rev)
		}
		if again, err := Compact(ctx, cli, physical); err != nil || again != rev {
			t.Errorf("physical %v: compacting again with nothing written: revision %d, %v; want %d and no error", physical, again, err, rev)
		}
		if _, err := cli.Put(ctx, "/k", "after"); err != nil {
			t.Fatal(err)
		}
		wctx, wcancel = context.WithCancel(ctx)
		resp = <-cli.Watch(wctx, "/k", clientv3.WithRev(rev))
		wcancel()
		if resp.Err() != nil || len(resp.Events) == 0 {
			t.Errorf("physical %v: watch from the compacted revision %d: %v, %d events", physical, rev, resp.Err(), len(resp.Events))
		}
	}
}

// TestMoveLeader: MoveLeader makes the chosen member the leader every
// member agrees on, and refuses the member that leads already.
func TestMoveLeader(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	to := (old + 1) % c.Count()
	start := time.Now()
	if err := MoveLeader(ctx, c, to); err != nil {
		t.Fatal(err)
	}
	// Every member learns the new leader by its next heartbeat; an
	// election timeout is a generous bound.
	wctx, wcancel := context.WithTimeout(ctx, c.Election())
	defer wcancel()
	for c.Leader() != to && wctx.Err() == nil {
		time.Sleep(c.Tick() / 2)
	}
	if got := c.Leader(); got != to {
		t.Fatalf("leader %d after moving it from %d to %d", got, old, to)
	}
	t.Logf("leader moved from member %d to %d in %s", old, to, time.Since(start))
	if err := MoveLeader(ctx, c, to); err == nil {
		t.Error("moved the leadership to the member that leads")
	}
	cli := client(t, c.Endpoints()...)
	if _, err := cli.Put(ctx, "/after-move", "1"); err != nil {
		t.Fatal(err)
	}
}

// TestDefragment: defragmenting each member succeeds and shrinks the
// database file to what is in use (after a compaction has freed pages),
// and the cluster serves writes after.
func TestDefragment(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli := client(t, c.Endpoints()...)
	big := string(make([]byte, 64<<10))
	for i := 0; i < 30; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("/big/%d", i%10), big); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Compact(ctx, cli, true); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < c.Count(); i++ {
		before, after, err := Defragment(ctx, c, i)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("member %d: db %d bytes (%d in use) → %d (%d in use)", i, before.Total, before.InUse, after.Total, after.InUse)
		if after.Total >= before.Total || after.Total < after.InUse {
			t.Errorf("member %d: db %d bytes → %d after defrag (in use %d → %d): not shrunk to its live pages", i, before.Total, after.Total, before.InUse, after.InUse)
		}
	}
	if _, err := cli.Put(ctx, "/after-defrag", "1"); err != nil {
		t.Fatal(err)
	}
}
