package etcdlocks_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
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

// namesPart is one row of TestMeasureNames: what n clients do in a loop,
// counted as acquisitions (a put-and-delete pair is one).
type namesPart struct {
	name string
	// pairs: each client commits a queue-like join (a txn creating its
	// own key under its lease, reading the two newest keys of its own
	// prefix) and then deletes the key: a lock's two writes, no lock.
	pairs bool
	// names: queue Lockers sharing each client's lease, each acquisition
	// on a name drawn uniformly from names (0: each client on its own
	// name, never contended).
	names int
}

// TestMeasureNames is a measurement, not a check: it runs only with
// LOCKBENCH_MEASURE=names. On one 3-member cluster (fsync on), 64
// clients, each on its own connection, it runs rounds of 1.5 s slices in
// rotating order: the parallel write ceiling (harness.MeasureFloor with
// 64 writers, as bench --locks-per-run measures it), then each namesPart,
// and prints each part's acquisitions/s ÷ (the round's ceiling ÷ 2), the
// ratio bench --locks-per-run 64 reports, median over rounds. Pairing
// each part with a ceiling measured seconds away takes out the ceiling's
// drift, which between benches was 2.5× (docs/measurements.md, "Many
// names").
//
//	LOCKBENCH_MEASURE=names go test -run TestMeasureNames -v ./locks
func TestMeasureNames(t *testing.T) {
	if os.Getenv("LOCKBENCH_MEASURE") != "names" || testing.Short() {
		t.Skip("set LOCKBENCH_MEASURE=names to measure")
	}
	parts := []namesPart{{name: "put+delete pairs", pairs: true}, {name: "queue, own name"}, {name: "queue, 64 names", names: 64}}
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	eps, d, rounds, n := c.DirectEndpoints(), 1500*time.Millisecond, 12, 64
	admin, err := clientv3.New(clientv3.Config{Endpoints: eps, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ratios := map[string][]float64{}
	for r := range rounds {
		ceiling, err := harness.MeasureFloor(ctx, admin, fmt.Sprintf("/measure-names/ceiling/%d", r), d, n)
		if err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("round %d: ceiling %4.0f commits/s", r, ceiling.CommitsPerS)
		for i := range parts {
			p := parts[(i+r)%len(parts)]
			rate := namesLoop(t, eps, fmt.Sprintf("/measure-names/%d/%d/", i, r), n, d, p)
			x := rate / (ceiling.CommitsPerS / 2)
			ratios[p.name] = append(ratios[p.name], x)
			line += fmt.Sprintf(" | %s %4.0f/s ×%.2f", p.name, rate, x)
		}
		t.Log(line)
	}
	for _, p := range parts {
		x := ratios[p.name]
		t.Logf("%-17s ÷ (ceiling ÷ 2) median %.2f (%.2f–%.2f), %d rounds", p.name, stats.Median(x), slices.Min(x), slices.Max(x), rounds)
	}
}

// namesLoop runs n clients doing p for d, after each has done it once
// (its connection, lease and first keys are not in the window), and
// returns acquisitions per second.
func namesLoop(t *testing.T, eps []string, prefix string, n int, d time.Duration, p namesPart) float64 {
	t.Helper()
	steps := make([]func(context.Context) bool, n)
	for i := range steps {
		cli, err := clientv3.New(clientv3.Config{Endpoints: eps, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		if steps[i], err = namesStep(cli, prefix, i, p); err != nil {
			t.Fatal(err)
		}
	}
	var (
		wg       sync.WaitGroup
		counting atomic.Bool
		done     atomic.Int64
		ready    sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready.Add(n)
	for _, step := range steps {
		wg.Go(func() {
			step(ctx)
			ready.Done()
			for ctx.Err() == nil {
				if step(ctx) && counting.Load() {
					done.Add(1)
				}
			}
		})
	}
	ready.Wait()
	counting.Store(true)
	time.Sleep(d)
	counting.Store(false)
	cancel()
	wg.Wait()
	return float64(done.Load()) / d.Seconds()
}

// namesStep is client i's acquisition for p on cli: true when it
// completed.
func namesStep(cli *clientv3.Client, prefix string, i int, p namesPart) (func(context.Context) bool, error) {
	ttl := 5 * time.Second
	if p.pairs {
		g, err := cli.Grant(context.Background(), int64(ttl/time.Second))
		if err != nil {
			return nil, err
		}
		own := prefix + "pairs/" + strconv.Itoa(i) + "/"
		key := own + "k"
		return func(ctx context.Context) bool {
			_, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
				Then(clientv3.OpPut(key, "", clientv3.WithLease(g.ID)),
					clientv3.OpGet(own, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(2), clientv3.WithKeysOnly())).
				Commit()
			if err != nil {
				return false
			}
			_, err = cli.Delete(ctx, key)
			return err == nil
		}, nil
	}
	queue, err := locks.Lookup("queue")
	if err != nil {
		return nil, err
	}
	share, err := etcdlocks.NewClientLease(cli, etcdlocks.Options{Options: locks.Options{TTL: ttl}})
	if err != nil {
		return nil, err
	}
	lockers := map[string]locks.Locker{}
	rng := rand.New(rand.NewPCG(uint64(i), 1))
	return func(ctx context.Context) bool {
		name := "own" + strconv.Itoa(i)
		if p.names > 0 {
			name = "job" + strconv.Itoa(1+rng.IntN(p.names))
		}
		l, ok := lockers[name]
		if !ok {
			if l, err = newLocker(ctx, queue, cli, etcdlocks.Options{Options: locks.Options{Name: name, Prefix: prefix, TTL: ttl}, Lease: share}); err != nil {
				return false
			}
			lockers[name] = l
		}
		g, err := l.Lock(ctx)
		if err != nil {
			return false
		}
		return l.Unlock(context.Background(), g) == nil
	}, nil
}
