package zklocks_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/relay"
	"github.com/lockbench/lockbench/zookeeper/zkcluster"
	"github.com/lockbench/lockbench/zookeeper/zkcluster/zktest"
	"github.com/lockbench/lockbench/zookeeper/zklocks"
)

// start starts an ensemble for t, closed when t ends.
func start(t *testing.T) *zkcluster.Cluster {
	t.Helper()
	zktest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := zkcluster.Start(ctx, zkcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// open opens a session of ttl to servers, closed when t ends.
func open(t *testing.T, servers []string, ttl time.Duration) *zklocks.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := zklocks.Open(ctx, servers, ttl, zklocks.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestQueue: on a real ensemble, three zk-queue clients are granted one
// at a time in the order they asked, with growing tokens, and each
// release wakes only the next waiter (one wake-up per handoff).
func TestQueue(t *testing.T) {
	ens := start(t)
	ctx := context.Background()
	var wakeups atomic.Int64
	opts := locks.Options{Prefix: "/lockbench/t/", TTL: 5 * time.Second, OnWakeup: func() { wakeups.Add(1) }}
	var qs []*zklocks.Queue
	for range 3 {
		q, err := zklocks.NewQueue(open(t, ens.Addrs(), 5*time.Second), opts)
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q)
	}
	first, err := qs[0].Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	granted := make(chan int, 2)
	grants := make([]*locks.Grant, 3)
	grants[0] = first
	for i := 1; i < 3; i++ {
		go func() {
			g, err := qs[i].Lock(ctx)
			if err != nil {
				t.Error(err)
			}
			grants[i] = g
			granted <- i
		}()
		time.Sleep(300 * time.Millisecond) // queue in client order
	}
	select {
	case i := <-granted:
		t.Fatalf("client %d granted while client 0 holds", i)
	case <-time.After(500 * time.Millisecond):
	}
	for want := 1; want < 3; want++ {
		if err := qs[want-1].Unlock(ctx, grants[want-1]); err != nil {
			t.Fatal(err)
		}
		if got := <-granted; got != want {
			t.Fatalf("granted client %d, want %d (FIFO)", got, want)
		}
		if grants[want].Token <= grants[want-1].Token {
			t.Errorf("token %d after %d: fencing tokens must grow", grants[want].Token, grants[want-1].Token)
		}
	}
	if err := qs[2].Unlock(ctx, grants[2]); err != nil {
		t.Fatal(err)
	}
	if got := wakeups.Load(); got != 2 {
		t.Errorf("%d wake-ups for 2 handoffs, want 2 (each waiter watches its predecessor only)", got)
	}
}

// TestLostWhenCut: a holder cut from the ensemble is told (Lost closes)
// once its connection is suspended, before its session expires and the
// next waiter is granted; the waiter's grant comes only after the
// expiry, and the cut holder's node is then gone (the fenced write's
// check would refuse it).
func TestLostWhenCut(t *testing.T) {
	ens := start(t)
	ctx := context.Background()
	var relays []string
	var rs []*relay.Relay
	for _, a := range ens.Addrs() {
		r, err := relay.Start(a)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		rs = append(rs, r)
		relays = append(relays, r.Addr())
	}
	const ttl = 2 * time.Second
	opts := locks.Options{Prefix: "/lockbench/t/", TTL: ttl}
	holder, _ := zklocks.NewQueue(open(t, relays, ttl), opts)
	waiterConn := open(t, ens.Addrs(), ttl)
	waiter, _ := zklocks.NewQueue(waiterConn, opts)
	g, err := holder.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		r.PauseTx()
		r.PauseRx()
	}
	cut := time.Now()
	lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	g2, err := waiter.Lock(lctx)
	if err != nil {
		t.Fatal(err)
	}
	grantedAfter := time.Since(cut)
	select {
	case <-g.Lost:
	default:
		t.Fatalf("the waiter was granted %s after the cut, and the cut holder was not told", grantedAfter)
	}
	if grantedAfter < ttl/2 {
		t.Errorf("granted %s after the cut: before the holder's session (%s) could expire", grantedAfter, ttl)
	}
	if ok, _, err := waiterConn.ZK.Exists(g.Key); err != nil || ok {
		t.Errorf("the cut holder's node %s: exists %v, %v; want gone with its session", g.Key, ok, err)
	}
	if err := waiter.Unlock(ctx, g2); err != nil {
		t.Fatal(err)
	}
}

// TestGoZKHasNoLossSignal: go-zookeeper's zk.Lock grants in turn, and a
// holder whose session expired is never told — the gap lockbench's
// scenarios show.
func TestGoZKHasNoLossSignal(t *testing.T) {
	ens := start(t)
	ctx := context.Background()
	r, err := relay.Start(ens.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const ttl = 2 * time.Second
	opts := locks.Options{Prefix: "/lockbench/t/", TTL: ttl}
	holder, _ := zklocks.NewGoZK(open(t, []string{r.Addr()}, ttl), opts)
	waiter, _ := zklocks.NewGoZK(open(t, ens.Addrs(), ttl), opts)
	g, err := holder.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.PauseTx()
	r.PauseRx()
	lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := waiter.Lock(lctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.Lost:
		t.Error("go-zookeeper's grant was told of its loss: it has no such signal")
	default:
	}
	r.UnpauseTx()
	r.UnpauseRx()
	if err := holder.Unlock(ctx, g); err == nil {
		t.Error("the expired holder's Unlock succeeded; want zk.Lock's error")
	} else if errors.Is(err, context.Canceled) {
		t.Error(err)
	}
}
