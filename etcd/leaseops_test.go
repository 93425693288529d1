package etcd_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/etcd"
	"github.com/lockbench/lockbench/etcd/cluster/clustertest"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
)

// TestLeaseOpsAndAlive: a connection tells of its lease's grant (TTL 1 s),
// of each renewal its keepalive has answered (the lease's TTL, a request
// sent before its answer) and of its revoke; the admin's LeaseAlive says a
// live 1 s lease is alive (etcd answers its remaining TTL, rounded down to
// 0 s) and a revoked one is not.
func TestLeaseOpsAndAlive(t *testing.T) {
	c := clustertest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	var ops []backend.LeaseOp
	b := etcd.Backend{}
	conn, err := b.Dial(ctx, c.Endpoints(), backend.DialOptions{OnLeaseOp: func(op backend.LeaseOp) {
		mu.Lock()
		ops = append(ops, op)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	admin, err := b.Admin(ctx, c.Endpoints())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	obs := admin.(backend.Observer)

	sess, err := conn.NewSession(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The lease is granted with the first Lock.
	st, err := locks.Lookup("queue")
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.New(ctx, sess.Conn(), locks.Options{Prefix: "/test-lease-ops/", TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// The keepalive renews a 1 s lease every third of a second or so: wait
	// for two renewals' answers, by what the connection told.
	renewals := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(slices.DeleteFunc(slices.Clone(ops), func(op backend.LeaseOp) bool { return op.Op != history.LeaseRenew }))
	}
	for renewals() < 2 && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	if alive, err := obs.LeaseAlive(ctx, sess.Lease()); !alive || err != nil {
		t.Errorf("a live 1 s lease: alive %v, %v", alive, err)
	}
	if err := sess.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if alive, err := obs.LeaseAlive(ctx, sess.Lease()); alive || err != nil {
		t.Errorf("a revoked lease: alive %v, %v", alive, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ops) < 4 || ops[0].Op != history.LeaseGrant || ops[len(ops)-1].Op != history.LeaseRevoke {
		t.Fatalf("ops %+v: want a grant, renewals, a revoke", ops)
	}
	for _, op := range ops {
		if op.Lease != sess.Lease() {
			t.Errorf("%s of lease %x, the session's is %x", op.Op, op.Lease, sess.Lease())
		}
		if op.Op != history.LeaseRevoke && (op.TTL != time.Second || op.Took <= 0) {
			t.Errorf("%s: TTL %s, request sent %s before its answer", op.Op, op.TTL, op.Took)
		}
	}
}
