package etcd_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/etcd"
	"github.com/lockbench/lockbench/etcd/cluster/clustertest"
)

// TestRevisions: a lock client's connection sees each answer's revision,
// streamed ones too (a watch's event of another client's put), and names
// the revision a write sent after a mark created: a put's, a delete's
// that deleted, a txn's that changed something; a delete of nothing, a
// txn whose compare failed and a write before the mark count for nothing.
func TestRevisions(t *testing.T) {
	c := clustertest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := etcd.Backend{}.Dial(ctx, c.Endpoints(), backend.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	admin, err := etcd.Backend{}.Admin(ctx, c.Endpoints())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	revs := conn.(backend.Revisions)
	cli := conn.(*etcd.Connection).Client
	other := admin.(*etcd.Admin).Client

	const key = "/test-revisions/k"
	put, err := cli.Put(ctx, key, "v")
	if err != nil {
		t.Fatal(err)
	}
	if got := revs.Seen(); got < put.Header.Revision {
		t.Errorf("Seen %d after a put at %d", got, put.Header.Revision)
	}
	mark := revs.Mark()
	if got := revs.WroteSince(mark); got != 0 {
		t.Errorf("WroteSince a mark after the put: %d, want 0", got)
	}
	if _, err := cli.Delete(ctx, key+"-absent"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.Version(key), "=", 99)).Then(clientv3.OpDelete(key)).Commit(); err != nil {
		t.Fatal(err)
	}
	if got := revs.WroteSince(mark); got != 0 {
		t.Errorf("WroteSince after a delete of nothing and a failed txn: %d, want 0", got)
	}
	del, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.Version(key), "=", 1)).Then(clientv3.OpDelete(key)).Commit()
	if err != nil || !del.Succeeded {
		t.Fatalf("delete txn: %v, %v", del, err)
	}
	if got := revs.WroteSince(mark); got != del.Header.Revision {
		t.Errorf("WroteSince after a txn that deleted at %d: %d", del.Header.Revision, got)
	}

	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	w := cli.Watch(wctx, key+"-watched", clientv3.WithRev(del.Header.Revision+1))
	theirs, err := other.Put(ctx, key+"-watched", "v")
	if err != nil {
		t.Fatal(err)
	}
	if wr := <-w; wr.Err() != nil || len(wr.Events) != 1 {
		t.Fatalf("watch: %v, %d events", wr.Err(), len(wr.Events))
	}
	if got := revs.Seen(); got < theirs.Header.Revision {
		t.Errorf("Seen %d after a watch event of a put at %d", got, theirs.Header.Revision)
	}
}
