package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/features"
)

// etcd v3.7's FastLeaseKeepAlive feature gate (on by default): the
// leader renews a lease it still has without first waiting for its
// applied index to reach its commit index, so a renewal can succeed while
// a revoke of that lease is committed but not yet applied. These measure
// how late a holder learns that its lease is gone, gate off and on, when
// the lease is revoked while the leader is paused. docs/leases.md.

// leaseLearn is what one revoke did to its holder, in time from the
// revoke's answer: when the holder's KeepAlive channel closed (it
// learned), how long its last granted renewal let it believe past the
// revoke, and how many of its renewals were granted after the revoke
// answered. A probe renewing the same lease back to back on the leader
// counts its grants answered while the revoke was in flight (sent, not
// yet answered: before its commit, and, with the gate on, between its
// commit and its apply) and after it answered.
type leaseLearn struct {
	learned, believed                    time.Duration
	lateRenewals, inFlight, after, total int
}

// leaseFault is what strikes while the lease is revoked: the leader
// paused for pause (the revoke sent halfway through), or heavy keys put
// beforehand and deleted in one request just before the revoke, so that
// the leader is busy applying the delete when the revoke commits.
type leaseFault struct {
	pause time.Duration
	heavy int
}

func (f leaseFault) String() string {
	if f.heavy > 0 {
		return fmt.Sprintf("a delete of %d keys applied just before the revoke", f.heavy)
	}
	return fmt.Sprintf("leader paused %s", f.pause)
}

// featureEnabled reads member i's etcd_server_feature_enabled metric for
// feature: "1" or "0" ("" when absent).
func featureEnabled(t *testing.T, pc *ProcessCluster, i int, feature string) string {
	t.Helper()
	resp, err := http.Get(pc.Endpoints()[i] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "etcd_server_feature_enabled{") && strings.Contains(line, `name="`+feature+`"`) {
			f := strings.Fields(line)
			return f[len(f)-1]
		}
	}
	return ""
}

// renewals records when a lease's renewals were granted.
type renewals struct {
	mu      sync.Mutex
	granted []time.Time
}

func (r *renewals) add() {
	r.mu.Lock()
	r.granted = append(r.granted, time.Now())
	r.mu.Unlock()
}

// count returns how many grants came after from and, of those, before to.
func (r *renewals) count(from, to time.Time) (after, before int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.granted {
		if g.After(from) {
			after++
			if g.Before(to) {
				before++
			}
		}
	}
	return after, before
}

// holdLease grants a lease of ttl through cli, puts a key under it and
// keeps it alive with clientv3's KeepAlive, recording each renewal
// granted; closed hears when the KeepAlive channel closed.
func holdLease(ctx context.Context, t *testing.T, cli *clientv3.Client, ttl time.Duration) (clientv3.LeaseID, *renewals, <-chan time.Time) {
	t.Helper()
	g, err := cli.Grant(ctx, int64(ttl/time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/fastkeepalive", "held", clientv3.WithLease(g.ID)); err != nil {
		t.Fatal(err)
	}
	ch, err := cli.KeepAlive(ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	r, closed := &renewals{}, make(chan time.Time, 1)
	go func() {
		for resp := range ch {
			if resp.TTL > 0 {
				r.add()
			}
		}
		closed <- time.Now()
	}()
	return g.ID, r, closed
}

// putHeavy puts n keys of 1 KiB under /fastkeepalive-heavy/, 100 to a
// transaction.
func putHeavy(ctx context.Context, t *testing.T, cli *clientv3.Client, n int) {
	t.Helper()
	for i := 0; i < n; i += 100 {
		var ops []clientv3.Op
		for j := i; j < min(n, i+100); j++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("/fastkeepalive-heavy/%06d", j), strings.Repeat("x", 1024)))
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// revokeUnder keeps a lease of ttl alive for a holder whose client talks
// to the leader only, a key under it, with four writers putting 1 KiB
// values and a probe renewing the lease back to back, both through the
// leader; then revokes the lease through a follower under fault, and
// watches the holder's KeepAlive channel until it closes.
func revokeUnder(t *testing.T, pc *ProcessCluster, ttl time.Duration, fault leaseFault) leaseLearn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := waitProcLeader(ctx, t, pc)
	eps := pc.Endpoints()
	holder, revoker := procClient(t, eps[l]), procClient(t, eps[(l+1)%len(eps)])
	if fault.heavy > 0 {
		putHeavy(ctx, t, holder, fault.heavy)
	}
	id, held, closed := holdLease(ctx, t, holder, ttl)
	var wg sync.WaitGroup
	defer wg.Wait() // after stop, on every path out
	load, stop := context.WithCancel(ctx)
	defer stop()
	for range 4 {
		wg.Go(func() {
			for load.Err() == nil {
				c, done := context.WithTimeout(load, time.Second)
				holder.Put(c, "/fastkeepalive-load", strings.Repeat("x", 1024))
				done()
			}
		})
	}
	probe := &renewals{}
	wg.Go(func() {
		for load.Err() == nil {
			c, done := context.WithTimeout(load, time.Second)
			if r, err := holder.KeepAliveOnce(c, id); err == nil && r.TTL > 0 {
				probe.add()
			}
			done()
		}
	})
	time.Sleep(1500 * time.Millisecond)
	sent, at := revokeWith(ctx, t, pc, l, holder, revoker, id, fault)
	var res leaseLearn
	select {
	case c := <-closed:
		res.learned = c.Sub(at)
	case <-time.After(3 * ttl):
		t.Fatalf("the holder's KeepAlive channel was still open %s after the revoke", 3*ttl)
	}
	stop()
	wg.Wait()
	res.lateRenewals, _ = held.count(at, time.Now())
	res.after, _ = probe.count(at, time.Now())
	_, res.inFlight = probe.count(sent, at)
	res.total, _ = probe.count(time.Time{}, time.Now())
	if n := len(held.granted); n > 0 {
		res.believed = max(0, held.granted[n-1].Add(ttl).Sub(at))
	}
	return res
}

// revokeWith revokes lease id through revoker under fault (pausing
// member l, or deleting the heavy keys through the holder's client just
// before) and returns when the revoke was sent and when it answered.
func revokeWith(ctx context.Context, t *testing.T, pc *ProcessCluster, l int, holder, revoker *clientv3.Client, id clientv3.LeaseID, fault leaseFault) (sent, at time.Time) {
	t.Helper()
	if fault.pause > 0 {
		if err := pc.Pause(l); err != nil {
			t.Fatal(err)
		}
		time.Sleep(fault.pause / 2)
	}
	deleted := make(chan error, 1)
	if fault.heavy > 0 {
		go func() {
			_, err := holder.Delete(ctx, "/fastkeepalive-heavy/", clientv3.WithPrefix())
			deleted <- err
		}()
		time.Sleep(time.Millisecond) // the delete first, then the revoke
	}
	revoked := make(chan error, 1)
	sent = time.Now()
	go func() {
		_, err := revoker.Revoke(ctx, id)
		revoked <- err
	}()
	if fault.pause > 0 {
		time.Sleep(fault.pause - fault.pause/2)
		if err := pc.Resume(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-revoked; err != nil {
		t.Fatalf("revoke: %v", err)
	}
	at = time.Now()
	if fault.heavy > 0 {
		if err := <-deleted; err != nil {
			t.Fatalf("delete the heavy keys: %v", err)
		}
	}
	return sent, at
}

// TestFastLeaseKeepAlive measures, on 3.7.3 member processes (self) with
// FastLeaseKeepAlive off and on, how late a holder (its client on the
// leader, TTL 3 s) learns that its lease was revoked through a follower,
// and how many renewals a back-to-back probe on the leader was granted
// while the revoke was in flight and after it answered: with no fault,
// with the leader paused 300 ms (no election) and 2 s (a new leader),
// the revoke sent halfway through the pause, and with the leader busy
// applying a delete of 20,000 keys when the revoke commits; under a
// write load on the leader. LOCKBENCH_FASTKEEPALIVE_RUNS (default 5)
// runs of each. A measurement, printed with -v (make
// measure-etcd-fastkeepalive): it asserts only that each member's
// feature metric says the gate is as asked and that every holder
// learned within 3 TTLs.
func TestFastLeaseKeepAlive(t *testing.T) {
	if os.Getenv("LOCKBENCH_MEASURE") != "fastkeepalive" {
		t.Skip("a measurement: LOCKBENCH_MEASURE=fastkeepalive (make measure-etcd-fastkeepalive)")
	}
	runs := 5
	if s := os.Getenv("LOCKBENCH_FASTKEEPALIVE_RUNS"); s != "" {
		if _, err := fmt.Sscanf(s, "%d", &runs); err != nil || runs < 1 {
			t.Fatalf("LOCKBENCH_FASTKEEPALIVE_RUNS=%q: want a whole number of runs, 1 or more", s)
		}
	}
	const ttl = 3 * time.Second
	faults := []leaseFault{{}, {pause: 300 * time.Millisecond}, {pause: 2 * time.Second}, {heavy: 20000}}
	for _, gate := range []string{"false", "true"} {
		t.Run("FastLeaseKeepAlive="+gate, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			pc, err := StartProcesses(ctx, Options{EtcdBin: EtcdBinSelf, DataParent: t.TempDir(), FeatureGates: "FastLeaseKeepAlive=" + gate})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { pc.Close() })
			for i := range pc.Count() {
				if got, want := featureEnabled(t, pc, i, "FastLeaseKeepAlive"), map[string]string{"false": "0", "true": "1"}[gate]; got != want {
					t.Fatalf("member %d: etcd_server_feature_enabled FastLeaseKeepAlive %q, asked %s", i, got, gate)
				}
			}
			for _, f := range faults {
				var learned, believed []time.Duration
				var sum leaseLearn
				hit := 0
				for range runs {
					r := revokeUnder(t, pc, ttl, f)
					learned, believed = append(learned, r.learned), append(believed, r.believed)
					sum.lateRenewals, sum.inFlight, sum.after, sum.total = sum.lateRenewals+r.lateRenewals, sum.inFlight+r.inFlight, sum.after+r.after, sum.total+r.total
					if r.inFlight > 0 {
						hit++
					}
				}
				t.Logf("FastLeaseKeepAlive=%s, %s, %d runs: the holder learned %s after the revoke answered, believed up to %s past it, %d of its renewals granted after it; the probe was granted %d renewals while the revoke was in flight (in %d runs), %d after it answered, %d in all",
					gate, f, runs, spread(learned), spread(believed), sum.lateRenewals, sum.inFlight, hit, sum.after, sum.total)
			}
		})
	}
}

// spread prints durations as min/median/max in milliseconds.
func spread(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	return fmt.Sprintf("%d/%d/%d ms (min/median/max)", ms(s[0]), ms(s[len(s)/2]), ms(s[len(s)-1]))
}

// TestFeatureGatesEmbedded: Options.FeatureGates reaches every embedded
// member's server, and a gate etcd does not know is refused by name.
func TestFeatureGatesEmbedded(t *testing.T) {
	t.Parallel()
	c := startClusterWith(t, Options{UnsafeNoFsync: true, FeatureGates: "FastLeaseKeepAlive=false"})
	for _, m := range c.Members() {
		m.mu.Lock()
		on := m.etcd.Server.FeatureEnabled(features.FastLeaseKeepAlive)
		m.mu.Unlock()
		if on {
			t.Errorf("member %d: FastLeaseKeepAlive on, asked off", m.Index)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bad, err := Start(ctx, Options{UnsafeNoFsync: true, DataParent: t.TempDir(), FeatureGates: "NoSuchGate=true"})
	if err == nil {
		bad.Close()
		t.Fatal("a cluster started with an unknown feature gate")
	}
	t.Logf("refused: %v", err)
	if !strings.Contains(err.Error(), "NoSuchGate") {
		t.Errorf("unknown gate refused with %q, which does not name it", err)
	}
}
