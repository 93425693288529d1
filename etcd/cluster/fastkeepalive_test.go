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
)

// etcd v3.7's FastLeaseKeepAlive feature gate (on by default): the
// leader renews a lease it still has without first waiting for its
// applied index to reach its commit index, so a renewal can succeed while
// a revoke of that lease is committed but not yet applied. These measure
// how late a holder learns that its lease is gone, gate off and on, when
// the lease is revoked while the leader is paused. docs/leases.md.

// leaseLearn is what one revoke did to its holder, in time from the
// revoke's answer: when the holder's KeepAlive channel closed (it
// learned), how many renewals it was granted after the revoke answered,
// and how long its last granted renewal let it believe past the revoke.
// probeLate counts the answers with a TTL that a renewal probe (one
// KeepAliveOnce after another on the leader, from the pause until 300 ms
// after the revoke answered) got after the revoke answered: the leader
// had committed the revoke by then, since the follower applied it.
type leaseLearn struct {
	learned, believed       time.Duration
	lateRenewals, probeLate int
	probed                  int // probe answers with a TTL in all
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

// revokeUnderLeaderPause grants a lease of ttl to a holder whose client
// talks to the leader only and keeps it alive (clientv3's KeepAlive),
// with a key under it and four writers putting 1 KiB values through the
// leader; then pauses the leader for pause (none when 0) and, halfway
// through it, revokes the lease through a follower; and watches the
// holder's KeepAlive channel until it closes.
func revokeUnderLeaderPause(t *testing.T, pc *ProcessCluster, ttl, pause time.Duration) leaseLearn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := waitProcLeader(ctx, t, pc)
	eps := pc.Endpoints()
	holder, revoker := procClient(t, eps[l]), procClient(t, eps[(l+1)%len(eps)])
	g, err := holder.Grant(ctx, int64(ttl/time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Put(ctx, "/fastkeepalive", "held", clientv3.WithLease(g.ID)); err != nil {
		t.Fatal(err)
	}
	ch, err := holder.KeepAlive(ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var granted []time.Time // renewals answered with a TTL
	closed := make(chan time.Time, 1)
	go func() {
		for r := range ch {
			if r.TTL > 0 {
				mu.Lock()
				granted = append(granted, time.Now())
				mu.Unlock()
			}
		}
		closed <- time.Now()
	}()
	load, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for load.Err() == nil {
				c, done := context.WithTimeout(load, time.Second)
				holder.Put(c, "/fastkeepalive-load", strings.Repeat("x", 1024))
				done()
			}
		})
	}
	time.Sleep(1500 * time.Millisecond)
	revoked := make(chan time.Time, 1)
	probe, probed := context.WithCancel(ctx)
	var probes []time.Time // probe answers with a TTL
	wg.Go(func() {
		for probe.Err() == nil {
			c, done := context.WithTimeout(probe, time.Second)
			r, err := holder.KeepAliveOnce(c, g.ID)
			done()
			if err == nil && r.TTL > 0 {
				mu.Lock()
				probes = append(probes, time.Now())
				mu.Unlock()
			}
		}
	})
	if pause > 0 {
		if err := pc.Pause(l); err != nil {
			t.Fatal(err)
		}
		time.Sleep(pause / 2)
	}
	go func() {
		if _, err := revoker.Revoke(ctx, g.ID); err != nil {
			t.Error(err)
		}
		revoked <- time.Now()
	}()
	if pause > 0 {
		time.Sleep(pause - pause/2)
		if err := pc.Resume(l); err != nil {
			t.Fatal(err)
		}
	}
	var res leaseLearn
	at := <-revoked
	time.AfterFunc(300*time.Millisecond, probed)
	select {
	case c := <-closed:
		res.learned = c.Sub(at)
	case <-time.After(3 * ttl):
		t.Fatalf("the holder's KeepAlive channel was still open %s after the revoke", 3*ttl)
	}
	stop()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, g := range granted {
		if g.After(at) {
			res.lateRenewals++
		}
	}
	res.probed = len(probes)
	for _, p := range probes {
		if p.After(at) {
			res.probeLate++
		}
	}
	if n := len(granted); n > 0 {
		res.believed = max(0, granted[n-1].Add(ttl).Sub(at))
	}
	return res
}

// TestFastLeaseKeepAlive measures, on 3.7.3 member processes (self) with
// FastLeaseKeepAlive off and on, how late a holder (its client on the
// leader, TTL 3 s) learns that its lease was revoked through a follower,
// and how many renewals a probe renewing the same lease back to back on
// the leader was granted after the revoke answered:
// with no pause, with the leader paused 300 ms (no election) and 2 s (a
// new leader), the revoke sent halfway through the pause, under a write
// load on the leader. LOCKBENCH_FASTKEEPALIVE_RUNS (default 5) runs of
// each. A measurement, printed with -v (make measure-etcd-fastkeepalive):
// it asserts only that each member's feature metric says the gate is as
// asked and that every holder learned within 3 TTLs.
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
			for _, pause := range []time.Duration{0, 300 * time.Millisecond, 2 * time.Second} {
				var learned, believed []time.Duration
				late, probeLate, withLate, probed := 0, 0, 0, 0
				for range runs {
					r := revokeUnderLeaderPause(t, pc, ttl, pause)
					learned, believed, late, probeLate = append(learned, r.learned), append(believed, r.believed), late+r.lateRenewals, probeLate+r.probeLate
					probed += r.probed
					if r.probeLate > 0 {
						withLate++
					}
				}
				t.Logf("FastLeaseKeepAlive=%s, leader paused %s, %d runs: the holder learned %s after the revoke answered; believed up to %s past it; %d of its renewals granted after it; the probe was granted %d renewals after it (of %d), in %d runs",
					gate, pause, runs, spread(learned), spread(believed), late, probeLate, probed, withLate)
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
