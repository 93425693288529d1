package etcdlocks_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/relay"
	"github.com/lockbench/lockbench/runner"
)

func TestSafeDeadline(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		ttl, margin, want time.Duration
	}{
		{time.Second, 50 * time.Millisecond, 950 * time.Millisecond},
		{5 * time.Second, 100 * time.Millisecond, 4900 * time.Millisecond},
		{2 * time.Second, 0, 2 * time.Second},
	} {
		if got := etcdlocks.SafeDeadline(t0, tc.ttl, tc.margin).Sub(t0); got != tc.want {
			t.Errorf("SafeDeadline(t0, %v, %v) = t0+%v, want t0+%v", tc.ttl, tc.margin, got, tc.want)
		}
	}
	// The deadline moves with the send time, not with anything later:
	// a refresh answered late counts from when it left.
	sent := t0.Add(300 * time.Millisecond)
	if got := etcdlocks.SafeDeadline(sent, time.Second, 50*time.Millisecond); !got.Equal(t0.Add(1250 * time.Millisecond)) {
		t.Errorf("deadline of a refresh sent at t0+300ms = %v, want t0+1.25s", got.Sub(t0))
	}
}

func TestDefaultSafeMargin(t *testing.T) {
	for ttl, want := range map[time.Duration]time.Duration{
		time.Second:      50 * time.Millisecond, // floor: timer lateness
		2 * time.Second:  50 * time.Millisecond,
		5 * time.Second:  100 * time.Millisecond, // 2%: clock rate
		60 * time.Second: 1200 * time.Millisecond,
	} {
		if got := etcdlocks.DefaultSafeMargin(ttl); got != want {
			t.Errorf("DefaultSafeMargin(%v) = %v, want %v", ttl, got, want)
		}
		// A healthy client has three refreshes between two deadlines.
		if iv := etcdlocks.SafeRefreshInterval(ttl); 3*iv >= ttl-etcdlocks.DefaultSafeMargin(ttl) {
			t.Errorf("TTL %v: refresh every %v leaves fewer than three before the deadline", ttl, iv)
		}
	}
}

func TestKeepAliveOptions(t *testing.T) {
	o, err := etcdlocks.Options{Options: locks.Options{TTL: 2 * time.Second}, KeepAlive: etcdlocks.KeepAliveSafe}.WithDefaults()
	if err != nil || o.SafeMargin != 50*time.Millisecond {
		t.Fatalf("safe with no margin: %+v, %v; want the default margin", o, err)
	}
	if _, err := (etcdlocks.Options{Options: locks.Options{TTL: 2 * time.Second}, SafeMargin: time.Second}).WithDefaults(); err == nil {
		t.Error("a margin of half the TTL was accepted")
	}
	if _, err := (etcdlocks.Options{KeepAlive: "fast"}).WithDefaults(); err == nil {
		t.Error("an unknown policy was accepted")
	}
	for _, k := range etcdlocks.KeepAlives {
		if got, err := etcdlocks.ParseKeepAlive(string(k)); err != nil || got != k {
			t.Errorf("ParseKeepAlive(%q) = %q, %v", k, got, err)
		}
	}
}

// proxied starts the runner's fault proxy in front of the first endpoint.
func proxied(t *testing.T, eps []string) (*relay.Relay, string) {
	t.Helper()
	p, dial, err := runner.StartProxy(eps[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, dial
}

// TestSafeLeaseCluster holds a lock under the safe policy: Lost never
// closes for a healthy client over a few TTLs; once its network is cut,
// Lost closes within a TTL and before the server expires the lease — a
// refresh from another client, sent after Lost closed, still finds it.
func TestSafeLeaseCluster(t *testing.T) {
	eps := endpoints(t)
	const ttl = 2 * time.Second
	p, ep := proxied(t, eps)
	cli, admin := dial(t, []string{ep}), dial(t, eps)
	st, _ := locks.Lookup("txn")
	ctx := context.Background()
	l, err := newLocker(ctx, st, cli, etcdlocks.Options{Options: locks.Options{Prefix: "/test-safe/" + t.Name() + "/", TTL: ttl}, KeepAlive: etcdlocks.KeepAliveSafe})
	if err != nil {
		t.Fatal(err)
	}
	g, err := l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.Lost:
		t.Fatalf("a healthy client's lease was reported lost")
	case <-time.After(3 * ttl):
	}
	// Slow the network first, so that counting from answers would
	// overrun, then cut it.
	p.DelayTx(200 * time.Millisecond)
	p.DelayRx(200 * time.Millisecond)
	time.Sleep(ttl / 2)
	cut := time.Now()
	p.BlackholeTx()
	p.BlackholeRx()
	select {
	case <-g.Lost:
	case <-time.After(2 * ttl):
		t.Fatal("Lost did not close after the network was cut")
	}
	lost := time.Since(cut)
	resp, err := admin.KeepAliveOnce(ctx, clientv3.LeaseID(g.Lease))
	if err != nil || resp.TTL <= 0 {
		t.Fatalf("the server had expired the lease when Lost closed (%v after the cut): %v", lost, err)
	}
	if lost > ttl {
		t.Errorf("Lost closed %v after the cut, more than one TTL", lost)
	}
	t.Logf("Lost closed %v after the cut; the server still had the lease", lost)
	admin.Revoke(ctx, clientv3.LeaseID(g.Lease))
}

// TestSafeLeaseRevoked: a refresh answered "lease gone" closes Lost at
// once, long before the deadline.
func TestSafeLeaseRevoked(t *testing.T) {
	eps := endpoints(t)
	const ttl = 4 * time.Second
	cli, admin := dial(t, eps), dial(t, eps)
	st, _ := locks.Lookup("queue")
	ctx := context.Background()
	l, err := newLocker(ctx, st, cli, etcdlocks.Options{Options: locks.Options{Prefix: "/test-safe/" + t.Name() + "/", TTL: ttl}, KeepAlive: etcdlocks.KeepAliveSafe})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	g, err := l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	if _, err := admin.Revoke(ctx, clientv3.LeaseID(g.Lease)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.Lost:
	case <-time.After(ttl / 2):
		t.Fatal("Lost did not close within TTL/2 of the revoke")
	}
	if d := time.Since(revoked); d > etcdlocks.SafeRefreshInterval(ttl)+500*time.Millisecond {
		t.Errorf("Lost closed %v after the revoke, want within one refresh interval", d)
	}
}
