package etcd_test

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/etcd"
	"github.com/lockbench/lockbench/etcd/cluster/clustertest"
	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/locks"
)

// TestBackend: a lock client's connection counts its RPCs and tells of
// each lease it is granted, the admin one counts nothing; a session's
// Lockers share its lease; the counter is absent until written, and a
// fenced write is refused once the grant's key is gone.
func TestBackend(t *testing.T) {
	c := clustertest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := etcd.Backend{}
	var leases atomic.Int64
	conn, err := b.Dial(ctx, c.Endpoints(), backend.DialOptions{OnLease: func(id int64) { leases.Store(id) }})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	admin, err := b.Admin(ctx, c.Endpoints())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	const key = "/test-backend/counter"
	if _, err := admin.ReadCounter(ctx, key); !errors.Is(err, backend.ErrNoCounter) {
		t.Fatalf("read of an absent counter: %v, want ErrNoCounter", err)
	}
	// The run puts the counter under its admin lease; a write keeps it.
	if err := admin.InitCounter(ctx, key); err != nil {
		t.Fatal(err)
	}
	sess, err := conn.NewSession(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	st, err := locks.Lookup("queue")
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.New(ctx, sess.Conn(), locks.Options{Prefix: "/test-backend/", TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	g, err := l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g.Lease == 0 || g.Lease != sess.Lease() || g.Lease != leases.Load() {
		t.Errorf("grant's lease %x, session's %x, last granted %x: want one lease", g.Lease, sess.Lease(), leases.Load())
	}
	if ok, err := conn.WriteCounter(ctx, key, 7, g); !ok || err != nil {
		t.Fatalf("fenced write by the holder: %v, %v", ok, err)
	}
	if v, err := admin.ReadCounter(ctx, key); v != 7 || err != nil {
		t.Fatalf("read %d, %v; want 7", v, err)
	}
	if err := l.Unlock(ctx, g); err != nil {
		t.Fatal(err)
	}
	if ok, err := conn.WriteCounter(ctx, key, 8, g); ok || err != nil {
		t.Errorf("fenced write after the release: accepted %v, %v; want refused", ok, err)
	}
	if ok, err := conn.WriteCounter(ctx, key, 9, nil); !ok || err != nil {
		t.Errorf("unfenced write: %v, %v", ok, err)
	}
	if v, _ := admin.ReadCounter(ctx, key); v != 9 {
		t.Errorf("counter %d after the unfenced write, want 9", v)
	}
	if conn.RPCs() == 0 || admin.RPCs() != 0 {
		t.Errorf("RPCs: lock client %d, admin %d; want some, and none counted", conn.RPCs(), admin.RPCs())
	}
	if sess.Conn().Backend() != etcdlocks.Backend {
		t.Errorf("session's conn is %s's", sess.Conn().Backend())
	}
	l.Close(ctx)
	if err := sess.Close(ctx); err != nil {
		t.Errorf("close session: %v", err)
	}
}

// TestMain closes the cluster the package's tests share.
func TestMain(m *testing.M) {
	code := m.Run()
	clustertest.Close()
	os.Exit(code)
}
