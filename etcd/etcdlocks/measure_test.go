package etcdlocks_test

import (
	"context"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/locks"
)

// TestMeasure is a quick contention measurement, not a check: it runs only
// with LOCKBENCH_MEASURE=1 (the official figures come from the CLI). Each
// client loops Lock → Unlock (hold 0) on its own connection, on a fresh
// 3-member cluster with fsync on, as the bench does (docs/measurements.md).
//
//	LOCKBENCH_MEASURE=1 go test -run TestMeasure -v ./locks
func TestMeasure(t *testing.T) {
	if os.Getenv("LOCKBENCH_MEASURE") == "" || testing.Short() {
		t.Skip("set LOCKBENCH_MEASURE=1 to measure")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// LOCKBENCH_MEASURE=nofsync: fsync off, for a loaded machine's disk.
	c, err := cluster.Start(ctx, cluster.Options{UnsafeNoFsync: os.Getenv("LOCKBENCH_MEASURE") == "nofsync"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d := 5 * time.Second
	for _, m := range []struct {
		lock    string
		clients int
	}{
		{"queue", 8}, {"mutex", 8}, {"txn", 8}, {"txn-watch", 8}, {"rpc", 8},
		{"queue", 16}, {"txn-watch", 16}, {"mutex", 16},
	} {
		r := measure(t, c.Endpoints(), m.lock, m.clients, d)
		t.Logf("%-9s %2d clients: %6.0f acq/s  acquire p50 %6.2f ms p99 %6.2f ms  wake-ups/handoff %5.2f  RPCs/acq %5.2f",
			m.lock, m.clients, r.rate, ms(r.p50), ms(r.p99), r.wakeups, r.rpcs)
	}
}

type measured struct {
	rate          float64
	p50, p99      time.Duration
	wakeups, rpcs float64
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func measure(t *testing.T, eps []string, lock string, clients int, d time.Duration) measured {
	s, err := locks.Lookup(lock)
	if err != nil {
		t.Fatal(err)
	}
	opts := etcdlocks.Options{Options: locks.Options{Name: "m", Prefix: "/measure/" + lock + "/", TTL: 5 * time.Second}}
	var (
		wakeups atomic.Int64
		mu      sync.Mutex
		lat     []time.Duration
		wg      sync.WaitGroup
	)
	opts.OnWakeup = func() { wakeups.Add(1) }
	counters := make([]*etcdlocks.RPCCounter, clients)
	lockers := make([]locks.Locker, clients)
	for i := range lockers {
		counters[i] = &etcdlocks.RPCCounter{}
		cli, err := clientv3.New(clientv3.Config{Endpoints: eps, Logger: zap.NewNop(), DialOptions: counters[i].DialOptions()})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		if lockers[i], err = newLocker(context.Background(), s, cli, opts); err != nil {
			t.Fatal(err)
		}
		defer lockers[i].Close(context.Background())
	}
	var rpc0 int64
	for _, c := range counters {
		rpc0 += c.Count()
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	for _, l := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for ctx.Err() == nil {
				t0 := time.Now()
				g, err := l.Lock(ctx)
				if err != nil {
					continue
				}
				mine = append(mine, time.Since(t0))
				l.Unlock(context.Background(), g)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	el := time.Since(start)
	var rpcs int64
	for _, c := range counters {
		rpcs += c.Count()
	}
	slices.Sort(lat)
	n := len(lat)
	if n == 0 {
		return measured{}
	}
	return measured{
		rate:    float64(n) / el.Seconds(),
		p50:     lat[n/2],
		p99:     lat[n*99/100],
		wakeups: float64(wakeups.Load()) / float64(n),
		rpcs:    float64(rpcs-rpc0) / float64(n),
	}
}
