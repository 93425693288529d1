package bench

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/runner"
)

// relayPath is one way to reach a member: its own listener, its front
// door, or a client fault proxy in front of its own listener.
type relayPath struct {
	cli      *clientv3.Client
	put, get []time.Duration
}

// MeasureRelay measures, for d, what the front door of the cluster's
// leader and a client fault proxy add to one RPC: each round sends one Put
// (a commit on key) and one serializable Get on each of the three paths in
// turn, so that the machine's drift falls on all of them alike.
func MeasureRelay(ctx context.Context, c *cluster.Cluster, key string, d time.Duration) (*report.Relay, error) {
	lead := max(c.Leader(), 0)
	m := c.Members()[lead]
	px, pxURL, err := runner.StartProxy(m.DirectURL())
	if err != nil {
		return nil, fmt.Errorf("relay cost: %w", err)
	}
	defer px.Close()
	paths := make([]*relayPath, 3)
	for i, ep := range []string{m.DirectURL(), m.ClientURL, pxURL} {
		if paths[i], err = newRelayPath(c, ep); err != nil {
			return nil, err
		}
		defer paths[i].cli.Close()
	}
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	rounds := 0
	for ; rctx.Err() == nil; rounds++ {
		for _, p := range paths {
			if err := p.round(rctx, key); err != nil && rctx.Err() == nil {
				return nil, fmt.Errorf("relay cost: %w", err)
			}
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return relayResult(lead, rounds, paths), nil
}

func newRelayPath(c *cluster.Cluster, ep string) (*relayPath, error) {
	tlsCfg, err := c.ClientTLSConfig()
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, TLS: tlsCfg, DialTimeout: harness.DefaultDialTimeout, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("relay cost: connect %s: %w", ep, err)
	}
	return &relayPath{cli: cli}, nil
}

// round sends one Put and one serializable Get, timing each.
func (p *relayPath) round(ctx context.Context, key string) error {
	t := time.Now()
	if _, err := p.cli.Put(ctx, key, "r"); err != nil {
		return err
	}
	p.put = append(p.put, time.Since(t))
	t = time.Now()
	if _, err := p.cli.Get(ctx, key, clientv3.WithSerializable()); err != nil {
		return err
	}
	p.get = append(p.get, time.Since(t))
	return nil
}

// relayResult is the three paths' figures and their differences to
// direct. The first round is left out (connections warming up).
func relayResult(member, rounds int, paths []*relayPath) *report.Relay {
	lat := func(ds []time.Duration) report.Latency {
		if len(ds) > 1 {
			ds = ds[1:]
		}
		return harness.LatencyOf(ds)
	}
	var put, get [3]report.Latency
	for i, p := range paths {
		put[i], get[i] = lat(p.put), lat(p.get)
	}
	ms := func(l [3]report.Latency) report.PathsMS {
		return report.PathsMS{DirectP50: l[0].P50, FrontDoorP50: l[1].P50, ProxyP50: l[2].P50,
			DirectMean: l[0].Mean, FrontDoorMean: l[1].Mean, ProxyMean: l[2].Mean}
	}
	return &report.Relay{Member: member, Rounds: rounds, PutMS: ms(put), GetMS: ms(get),
		FrontDoorUS: pairedUS(paths[1].put, paths[0].put), ProxyUS: pairedUS(paths[2].put, paths[0].put),
		FrontDoorGetUS: pairedUS(paths[1].get, paths[0].get), ProxyGetUS: pairedUS(paths[2].get, paths[0].get)}
}

// pairedUS is the median, in µs, of a[i] − b[i] over the rounds both have
// (the first left out): a difference taken within one round carries
// less of a loaded machine's drift than a difference of two p50s.
func pairedUS(a, b []time.Duration) float64 {
	var d []float64
	for i := 1; i < min(len(a), len(b)); i++ {
		d = append(d, float64(a[i]-b[i])/float64(time.Microsecond))
	}
	return round1(medianOrZero(d))
}
