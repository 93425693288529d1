package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/runner"
)

// The bare loop: the target lock with nothing of lockbench's around it,
// each client calling Lock then Unlock on its own connection. A paired
// round measures it beside the ideal handoff and the runner's slice, so
// that the gap to the ideal splits into the lock's share (bare ÷ ideal)
// and the runner's (runner ÷ bare), each judged against its own target.

// windowCost is one window's grants per second and what each grant cost
// the whole process (members included): CPU µs and KB allocated.
type windowCost struct{ rate, cpuUS, allocKB float64 }

// meter reads the process's CPU time and bytes allocated so far.
type meter struct {
	cpu   time.Duration
	alloc uint64
}

func readMeter() meter {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return meter{processCPU(), m.TotalAlloc}
}

// cost turns the grants counted between m0 and now into a windowCost.
func (m0 meter) cost(grants int64, elapsed time.Duration) windowCost {
	m := readMeter()
	g := float64(grants)
	return windowCost{g / elapsed.Seconds(), float64((m.cpu-m0.cpu)/time.Microsecond) / g, float64(m.alloc-m0.alloc) / 1024 / g}
}

// bareWindow runs the target lock in a bare Lock/Unlock loop per client,
// each on its own connection, and times it as the paired rounds time the
// runner's slice: from its first grant + recordWarmup, for
// spec.PairedSlice.
func bareWindow(ctx context.Context, eps []string, prefix string, spec BenchSpec) (windowCost, error) {
	st, err := locks.Lookup(spec.TargetLock)
	if err != nil {
		return windowCost{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var grants atomic.Int64
	for range spec.TargetClients {
		cli, err := clientv3.New(clientv3.Config{Endpoints: eps, Logger: zap.NewNop()})
		if err != nil {
			return windowCost{}, err
		}
		l, err := st.New(ctx, &etcdlocks.Conn{Client: cli, KeepAlive: spec.KeepAlive}, locks.Options{Prefix: prefix, TTL: spec.scenario(spec.TargetClients).TTL()})
		if err != nil {
			cli.Close()
			return windowCost{}, err
		}
		wg.Go(func() {
			defer cli.Close()
			defer l.Close(context.Background())
			for ctx.Err() == nil {
				if g, err := l.Lock(ctx); err == nil {
					grants.Add(1)
					l.Unlock(context.Background(), g)
				}
			}
		})
	}
	for deadline := time.Now().Add(10 * time.Second); grants.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return windowCost{}, fmt.Errorf("bare loop: no grant in 10s")
		}
	}
	if !runner.Sleep(ctx, recordWarmup) {
		return windowCost{}, ctx.Err()
	}
	g0, t0, m0 := grants.Load(), time.Now(), readMeter()
	if !runner.Sleep(ctx, spec.PairedSlice) {
		return windowCost{}, ctx.Err()
	}
	g, el := grants.Load()-g0, time.Since(t0)
	if g == 0 {
		return windowCost{}, fmt.Errorf("bare loop: no grant in the window")
	}
	return m0.cost(g, el), nil
}
