package etcdlocks_test

import (
	"context"
	"fmt"
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
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/stats"
)

// TestMeasureHandover measures queue's handoff against the ideal one, not
// a check: it runs only with LOCKBENCH_MEASURE=handover. On one 3-member
// cluster (fsync on) it runs rounds of two 2 s slices back to back: the
// ideal handoff (harness.MeasureIdeal), then queue, 8 clients, hold 0, and
// prints queue's rate and handoff p50 as ratios to the round's ideal: the
// bench's two targets for a handover, without a whole bench. Slices
// seconds apart share the machine's load, which on a shared machine moves
// more between separate bench runs than the ratios do.
//
// It once was an A/B of queue with and without handovers, through a mode
// of the lock kept only for it; that mode is gone, and the A/B's results
// stand in docs/measurements.md.
//
//	LOCKBENCH_MEASURE=handover go test -run TestMeasureHandover -v ./locks
func TestMeasureHandover(t *testing.T) {
	if os.Getenv("LOCKBENCH_MEASURE") != "handover" || testing.Short() {
		t.Skip("set LOCKBENCH_MEASURE=handover to measure")
	}
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	eps, d, rounds := c.DirectEndpoints(), 2*time.Second, 8
	queue, err := locks.Lookup("queue")
	if err != nil {
		t.Fatal(err)
	}
	var x, ho []float64
	for r := range rounds {
		id, err := harness.MeasureIdeal(ctx, clientv3.Config{Endpoints: eps}, fmt.Sprintf("/measure-handover/ideal/%d/", r), 8, d)
		if err != nil {
			t.Fatal(err)
		}
		rate, p50 := handoffs(t, eps, queue.New, fmt.Sprintf("/measure-handover/queue/%d/", r), 8, d)
		x, ho = append(x, rate/id.RatePerS), append(ho, p50/id.StepP50MS)
		t.Logf("round %d: ideal %4.0f/s step p50 %.2f ms | queue %4.0f/s ×ideal %.2f, handoff p50 %.2f ms ÷ step %.2f",
			r, id.RatePerS, id.StepP50MS, rate, rate/id.RatePerS, p50, p50/id.StepP50MS)
	}
	t.Logf("queue: ×ideal median %.2f (%.2f–%.2f), handoff p50 ÷ ideal step median %.2f (%.2f–%.2f), %d rounds",
		stats.Median(x), slices.Min(x), slices.Max(x), stats.Median(ho), slices.Min(ho), slices.Max(ho), rounds)
}

// handoffs runs n clients of f looping Lock → Unlock (hold 0) and
// returns the grants per second and the handoff p50 in ms (from a
// release's Unlock called to the next grant's Lock returning, as the
// bench's handoff runs from the release invoked to the next grant), both
// over a window of d that opens handoffWarmup after the first grant, as
// the bench's paired rounds time a lock: the clients' leases, first joins
// and first watches are not in it, as the chains' setup is not in theirs.
func handoffs(t *testing.T, eps []string, f locks.Factory, prefix string, n int, d time.Duration) (float64, float64) {
	t.Helper()
	opts := locks.Options{Name: "m", Prefix: prefix, TTL: 5 * time.Second}
	lockers := make([]locks.Locker, n)
	for i := range lockers {
		cli, err := clientv3.New(clientv3.Config{Endpoints: eps, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		if lockers[i], err = f(context.Background(), &etcdlocks.Conn{Client: cli}, opts); err != nil {
			t.Fatal(err)
		}
		defer lockers[i].Close(context.Background())
	}
	var (
		mu       sync.Mutex
		ho       []time.Duration
		wg       sync.WaitGroup
		released atomic.Int64 // ns since t0 of the last Unlock called; 0: none yet
		grants   atomic.Int64
		counting atomic.Bool // in the window
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Now()
	for _, l := range lockers {
		wg.Go(func() {
			var mine []time.Duration
			for ctx.Err() == nil {
				g, err := l.Lock(ctx)
				if err != nil {
					continue
				}
				if r := released.Load(); r > 0 && counting.Load() {
					mine = append(mine, time.Since(t0)-time.Duration(r))
				}
				grants.Add(1)
				released.Store(int64(time.Since(t0)))
				l.Unlock(context.Background(), g)
			}
			mu.Lock()
			ho = append(ho, mine...)
			mu.Unlock()
		})
	}
	for deadline := time.Now().Add(10 * time.Second); grants.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(handoffWarmup)
	counting.Store(true)
	g0, w0 := grants.Load(), time.Now()
	time.Sleep(d)
	g1, el := grants.Load(), time.Since(w0)
	counting.Store(false)
	cancel()
	wg.Wait()
	if len(ho) == 0 {
		t.Fatalf("%s: no handoff in %s", prefix, d)
	}
	slices.Sort(ho)
	return float64(g1-g0) / el.Seconds(), float64(ho[len(ho)/2]) / float64(time.Millisecond)
}

// handoffWarmup is how long handoffs lets a lock run before its window.
const handoffWarmup = 300 * time.Millisecond
