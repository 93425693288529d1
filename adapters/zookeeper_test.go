package adapters_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/adapters"
	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/locktest"
	"github.com/lockbench/lockbench/relay"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
	"github.com/lockbench/lockbench/zookeeper/zkbackend"
	"github.com/lockbench/lockbench/zookeeper/zkcluster"
	"github.com/lockbench/lockbench/zookeeper/zkcluster/zktest"
	"github.com/lockbench/lockbench/zookeeper/zklocks"
)

// One ZooKeeper ensemble for the package, started by the first test that
// needs it and closed by TestMain.
var (
	zkOnce sync.Once
	zkEns  *zkcluster.Cluster
	zkErr  error
)

// ensemble is the package's ensemble; it skips t where ZooKeeper is not
// installed (fails it under LOCKBENCH_REQUIRE_ZOOKEEPER).
func ensemble(t *testing.T) *zkcluster.Cluster {
	t.Helper()
	zktest.Need(t)
	zkOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		zkEns, zkErr = zkcluster.Start(ctx, zkcluster.Options{})
	})
	if zkErr != nil {
		t.Fatalf("start ensemble: %v", zkErr)
	}
	return zkEns
}

// checked is p behind its check, as needs wants it.
func checked(p *adapters.Program) func() (*adapters.Program, error) {
	return func() (*adapters.Program, error) {
		if err := p.Check(context.Background()); err != nil {
			return nil, err
		}
		return p, nil
	}
}

// zkSession is a client's ZooKeeper connection as the adapter factory
// reads it: only the servers it was opened to (no session is opened).
func zkSession(servers []string) *zklocks.Conn { return &zklocks.Conn{Servers: servers} }

// TestZooKeeperFactoryEnvironment: a ZooKeeper adapter is given the
// session's host:port servers, the lock's node path and the session
// timeout in whole seconds rounded up; another backend's connection is
// refused.
func TestZooKeeperFactoryEnvironment(t *testing.T) {
	noneLeft(t)
	p := sh("zk-env", `read -r line; echo "{\"reply\":\"granted\",\"token\":1,\"key\":\"$LOCKBENCH_ENDPOINTS|$LOCKBENCH_TTL|$LOCKBENCH_LOCK\",\"lease\":\"1\"}"; read -r line; echo '{"reply":"closed"}'`)
	for _, tc := range []struct {
		ttl  time.Duration
		want string
	}{
		{1500 * time.Millisecond, "127.0.0.1:1,127.0.0.1:2|2|/lockbench/t/locks/lock"},
		{300 * time.Millisecond, "127.0.0.1:1,127.0.0.1:2|1|/lockbench/t/locks/lock"},
		{3 * time.Second, "127.0.0.1:1,127.0.0.1:2|3|/lockbench/t/locks/lock"},
	} {
		l, err := p.ZooKeeperFactory()(context.Background(), zkSession([]string{"127.0.0.1:1", "127.0.0.1:2"}), locks.Options{Prefix: "/lockbench/t/", TTL: tc.ttl})
		if err != nil {
			t.Fatal(err)
		}
		g, err := l.Lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if g.Key != tc.want {
			t.Errorf("TTL %s: the adapter saw %q, want %q", tc.ttl, g.Key, tc.want)
		}
		if err := l.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}
	_, err := p.ZooKeeperFactory()(context.Background(), &etcdlocks.Conn{}, locks.Options{})
	if err == nil || !strings.Contains(err.Error(), "needs a ZooKeeper session") {
		t.Errorf("ZooKeeperFactory on an etcd connection: %v, want a refusal", err)
	}
}

// TestSourceOnDescriptor3: a Program's Source is read on /dev/fd/3, and
// no file of it is left in the temporary directory while it runs.
func TestSourceOnDescriptor3(t *testing.T) {
	noneLeft(t)
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "lockbench-adapter-source-*"))
	p := sh("sourced", `read -r line; src=$(cat /dev/fd/3); echo "{\"reply\":\"granted\",\"token\":1,\"key\":\"$src\",\"lease\":\"1\"}"; read -r line; echo '{"reply":"closed"}'`)
	p.Source = "the source"
	l := newLocker(t, p)
	g, err := l.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if g.Key != "the source" {
		t.Errorf("the adapter read %q on descriptor 3, want the Source", g.Key)
	}
	if after, _ := filepath.Glob(filepath.Join(os.TempDir(), "lockbench-adapter-source-*")); len(after) > len(before) {
		t.Errorf("source files left in %s: %v", os.TempDir(), after)
	}
}

// TestZooKeeperAdaptersRegistered: curator and kazoo are hidden
// ZooKeeper strategies with their own session, a FIFO order and a
// runtime check, whose Expect names real scenarios and checks.
func TestZooKeeperAdaptersRegistered(t *testing.T) {
	for _, name := range []string{"curator", "kazoo"} {
		st, err := locks.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if st.Backend != zklocks.Backend || !st.Hidden || !st.OwnLease || st.Order != verdict.FIFO || st.Runtime == nil {
			t.Errorf("%s: backend %q, hidden %v, own lease %v, order %v, runtime %v", name, st.Backend, st.Hidden, st.OwnLease, st.Order, st.Runtime != nil)
		}
		for sc, checks := range st.Expect {
			if _, err := scenarios.Lookup(sc); err != nil {
				t.Errorf("%s: Expect names %v", name, err)
			}
			for c := range checks {
				if !slices.Contains(verdict.CheckNames, c) {
					t.Errorf("%s: Expect[%s] names check %q", name, sc, c)
				}
			}
		}
	}
}

// TestZooKeeperAdapters drives each ZooKeeper adapter's Lockers on one
// ensemble: two clients (one behind relays), one granted while the other
// waits, the release hands the lock over with a growing token, a
// cancelled wait is a certain error that leaves no node behind, and a
// holder cut from the ensemble past its session timeout is told (Lost)
// while the other is granted after it; the cut client, back, releases
// its lost grant and is granted again.
func TestZooKeeperAdapters(t *testing.T) {
	for _, p := range []*adapters.Program{adapters.Curator, adapters.Kazoo} {
		t.Run(p.Name, func(t *testing.T) {
			// Each on its own root; the two run at once (about a minute
			// each, mostly waiting out leases).
			t.Parallel()
			ens := ensemble(t)
			needs(t, checked(p))
			noneLeftOf(t, p.Name)
			testZooKeeperAdapter(t, p, ens)
		})
	}
}

func testZooKeeperAdapter(t *testing.T, p *adapters.Program, ens *zkcluster.Cluster) {
	ctx := context.Background()
	var rs []*relay.Relay
	var relays []string
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
	opts := locks.Options{Name: "lock", Prefix: "/lockbench/test-" + p.Name + "/", TTL: ttl}
	// Both processes start at once: a JVM takes a second or two.
	var cut, direct locks.Locker
	var wg sync.WaitGroup
	var errA, errB error
	start := time.Now()
	wg.Add(2)
	go func() { defer wg.Done(); cut, errA = p.ZooKeeperFactory()(ctx, zkSession(relays), opts) }()
	go func() { defer wg.Done(); direct, errB = p.ZooKeeperFactory()(ctx, zkSession(ens.Addrs()), opts) }()
	wg.Wait()
	if err := errors.Join(errA, errB); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, l := range []locks.Locker{cut, direct} {
			if err := l.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
		}
	})
	t.Logf("two processes ready after %s", time.Since(start).Round(time.Millisecond))

	lock := func(l locks.Locker, within time.Duration) (*locks.Grant, error) {
		lctx, cancel := context.WithTimeout(ctx, within)
		defer cancel()
		return l.Lock(lctx)
	}
	// Step 1: granted; the key is a node under the lock's path.
	g1, err := lock(cut, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(g1.Key, opts.Key()+"/") || g1.Token <= 0 || g1.Lease == 0 {
		t.Errorf("grant %+v: want a node under %s, a czxid and a session", g1, opts.Key())
	}
	// Step 2: the other waits; the release hands the lock over.
	type result struct {
		g   *locks.Grant
		err error
	}
	waited := make(chan result, 1)
	go func() { g, err := lock(direct, 20*time.Second); waited <- result{g, err} }()
	select {
	case r := <-waited:
		t.Fatalf("the second client's Lock returned while the first holds: %+v, %v", r.g, r.err)
	case <-time.After(time.Second):
	}
	if err := cut.Unlock(ctx, g1); err != nil {
		t.Fatal(err)
	}
	r := <-waited
	if r.err != nil {
		t.Fatal(r.err)
	}
	g2 := r.g
	if g2.Token <= g1.Token || g2.Lease == g1.Lease || g2.Key == g1.Key {
		t.Errorf("handover %+v after %+v: want a higher token, another session, another node", g2, g1)
	}
	// Step 3: a cancelled wait is a certain error, and leaves no node:
	// once the holder releases, the cancelled client is granted at once.
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = cut.Lock(cctx)
	cancel()
	if !errors.Is(err, locks.ErrNotAcquired) || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("cancelled Lock: %v, want a certain error saying cancelled", err)
	}
	if err := direct.Unlock(ctx, g2); err != nil {
		t.Fatal(err)
	}
	g3, err := lock(cut, 5*time.Second)
	if err != nil {
		t.Fatalf("Lock after a cancelled wait, on a free lock: %v (did the cancelled wait leave its node?)", err)
	}
	// Step 4: the holder is cut from the ensemble (its relays pass
	// nothing): it is told, and the other is granted once its session
	// expired.
	go func() { g, err := lock(direct, 20*time.Second); waited <- result{g, err} }()
	time.Sleep(300 * time.Millisecond) // queued behind the holder
	for _, r := range rs {
		r.PauseTx()
		r.PauseRx()
	}
	cutAt := time.Now()
	var lostAfter time.Duration
	select {
	case <-g3.Lost:
		lostAfter = time.Since(cutAt)
	case <-time.After(15 * time.Second):
		t.Fatal("the cut holder was not told within 15 s")
	}
	r = <-waited
	if r.err != nil {
		t.Fatal(r.err)
	}
	g4 := r.g
	grantedAfter := time.Since(cutAt)
	t.Logf("session timeout %s: the cut holder was told after %s, the other granted after %s",
		ttl, lostAfter.Round(time.Millisecond), grantedAfter.Round(time.Millisecond))
	if grantedAfter < ttl/2 {
		t.Errorf("granted %s after the cut: before the holder's session (%s) could expire", grantedAfter, ttl)
	}
	if g4.Token <= g3.Token {
		t.Errorf("token %d after %d: fencing tokens must grow", g4.Token, g3.Token)
	}
	// Step 5: the cut client, back, asks again without unlocking its lost
	// grant (as lockbench's worker does): it releases that grant and
	// queues behind the holder.
	for _, r := range rs {
		r.UnpauseTx()
		r.UnpauseRx()
	}
	go func() { g, err := lock(cut, 20*time.Second); waited <- result{g, err} }()
	time.Sleep(300 * time.Millisecond)
	if err := direct.Unlock(ctx, g4); err != nil {
		t.Fatal(err)
	}
	r = <-waited
	if r.err != nil {
		t.Fatalf("the cut client, back: %v", r.err)
	}
	if r.g.Token <= g4.Token || r.g.Lease == g3.Lease {
		t.Errorf("grant %+v after %+v: want a higher token on a new session (the old one expired)", r.g, g4)
	}
	if err := cut.Unlock(ctx, r.g); err != nil {
		t.Error(err)
	}
}

// TestZooKeeperAdapterConformance runs the conformance suite (package
// locktest) on each ZooKeeper adapter, on the package's ensemble: a
// grant is lost by cutting its process's relays until the ensemble
// expires its session (ZooKeeper has no session to revoke).
func TestZooKeeperAdapterConformance(t *testing.T) {
	for _, p := range []*adapters.Program{adapters.Curator, adapters.Kazoo} {
		t.Run(p.Name, func(t *testing.T) {
			// Each on its own root; the two run at once (about a minute
			// each, mostly waiting out leases).
			t.Parallel()
			ens := ensemble(t)
			needs(t, checked(p))
			noneLeftOf(t, p.Name)
			locktest.Run(t, locktest.Env{Backend: zkbackend.Backend{}, Endpoints: zkbackend.Members{Cluster: ens}.Endpoints(),
				Factory: p.ZooKeeperFactory(), Root: "/locktest-" + p.Name + "/"})
		})
	}
}
