package harness

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/stats"
)

// The benchmark's measurements: the commit floor, a recording run, the
// cost of one history append, and the cluster's care. The figures they
// give are report's types, and RunBench (bench.go) puts them together.

// MeasureFloor Puts in a loop for d from writers goroutines on one client,
// each on its own key (key, key/1, key/2, ...), each Put waiting for the
// last: with one writer the rate of serialized commits and their latency;
// with two, what one write costs while another is in flight, as a lock's
// release is while some client joins the queue. An error stops it only
// when no Put succeeded.
func MeasureFloor(ctx context.Context, cli *clientv3.Client, key string, d time.Duration, writers int) (*report.Floor, error) {
	keys := []string{key}
	for i := 1; i < writers; i++ {
		keys = append(keys, key+"/"+strconv.Itoa(i))
	}
	// One Put each first, untimed: the connection and the keys exist.
	for _, k := range keys {
		wctx, cancel := context.WithTimeout(ctx, OpTimeout)
		_, err := cli.Put(wctx, k, "0")
		cancel()
		if err != nil {
			return nil, err
		}
	}
	type result struct {
		lat     []time.Duration
		errs    int
		lastErr error
	}
	results := make([]result, len(keys))
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	t0 := time.Now()
	var wg sync.WaitGroup
	for w, k := range keys {
		wg.Go(func() {
			r := &results[w]
			for i := 1; rctx.Err() == nil; i++ {
				s := time.Now()
				_, err := cli.Put(rctx, k, strconv.Itoa(i))
				switch {
				case err == nil:
					r.lat = append(r.lat, time.Since(s))
				case rctx.Err() == nil:
					r.errs++
					r.lastErr = err
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(t0)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var (
		lat     []time.Duration
		errs    int
		lastErr error
	)
	for _, r := range results {
		lat = append(lat, r.lat...)
		errs += r.errs
		lastErr = cmp.Or(r.lastErr, lastErr)
	}
	if len(lat) == 0 {
		return nil, fmt.Errorf("no Put succeeded in %s: %v", d, lastErr)
	}
	perS := float64(len(lat)) / el.Seconds()
	return &report.Floor{Writers: len(keys), Commits: len(lat), Errors: errs, DurationS: round3(el.Seconds()),
		CommitsPerS: round1(perS), PerWriterPerS: round1(perS / float64(len(keys))), LatencyMS: LatencyOf(lat)}, nil
}

// LatencyOf is the distribution of ds in milliseconds (exact quantiles).
func LatencyOf(ds []time.Duration) report.Latency {
	if len(ds) == 0 {
		return report.Latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) float64 { return round3(ms(stats.NearestRank(s, p))) }
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return report.Latency{Count: int64(len(s)), P50: q(0.5), P90: q(0.9), P99: q(0.99), P999: q(0.999),
		Max: round3(ms(s[len(s)-1])), Mean: round3(ms(sum / time.Duration(len(s))))}
}

// OpTimeout bounds one request of the benchmark's own client.
const OpTimeout = 5 * time.Second

// ClusterCloseWait bounds closing the cluster. A member's Close can hang
// for good after an rpc cell: its v3lock Lock handlers stay blocked on the
// member's deadlocked in-process watch stream (see cluster.Close),
// GracefulStop waits for them while holding the gRPC server's lock, and
// the Stop that should follow it waits for that lock.
const ClusterCloseWait = 30 * time.Second

// CloseCluster closes c, giving up after wait: the cluster is then left
// running (the process is about to exit) and its data folder stays.
func CloseCluster(c cluster.Members, wait time.Duration) error {
	if c == nil {
		return nil
	}
	dir := c.DataDir()
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("close etcd cluster: %w", err)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("close etcd cluster: still closing after %s, left behind (data folder %s)", wait, dir)
	}
}

// NewAdmin connects the benchmark's own client, which measures the floor
// and clears the benchmark's keys at the end. It dials the members' own
// listeners, as the cells' clients do (runner: no member fault, no front
// door), so that the floor is measured on the cells' data path.
func NewAdmin(c cluster.Members) (*clientv3.Client, error) {
	cfg, err := DirectConfig(c)
	if err != nil {
		return nil, err
	}
	cfg.DialTimeout, cfg.Logger = DefaultDialTimeout, zap.NewNop()
	return clientv3.New(cfg)
}

// DirectConfig is a client config for the members' own listeners (no
// front door): the cells' data path.
func DirectConfig(c cluster.Members) (clientv3.Config, error) {
	tlsCfg, err := c.ClientTLSConfig()
	if err != nil {
		return clientv3.Config{}, err
	}
	return clientv3.Config{Endpoints: c.DirectEndpoints(), TLS: tlsCfg}, nil
}

// ms is d in milliseconds; round1 and round3 round figures to one and
// three decimals, as the reports print them.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func round1(v float64) float64   { return math.Round(v*10) / 10 }
func round3(v float64) float64   { return math.Round(v*1000) / 1000 }
