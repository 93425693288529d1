package harness

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockbench/lockbench/report"
)

// The ideal handoff: the cheapest chain of handoffs etcd allows, with no
// lock logic at all, measured beside the floors so that a lock's figures
// can be held against what etcd could possibly give it
// (docs/measurements.md, "the ideal handoff").
//
// n clients pass a turn around a ring. Client i watches only its own turn
// key (one watch, opened and synced before the clock starts). A step is one
// conditional write: the turn's holder commits a txn that Puts the next
// client's turn key If its own turn key's revision is the one the previous
// step left, and the next client learns of it from the watch event. Right
// after its step, the passer writes a key of its own, as a lock's released
// client joins the queue again while the next holder takes over: the
// handoff commits beside a concurrent write, as a lock's does.

// idealChain is one MeasureIdeal under way.
type idealChain struct {
	prefix string
	clis   []*clientv3.Client
	t0     time.Time
	// passedAt is when the last step's txn was sent (ns since t0): the
	// next client's step latency runs from there to its watch event.
	passedAt atomic.Int64
	errs     atomic.Int64
	lat      [][]time.Duration // per client
}

func (ch *idealChain) turnKey(i int) string { return ch.prefix + "turn/" + strconv.Itoa(i) }
func (ch *idealChain) joinKey(i int) string { return ch.prefix + "join/" + strconv.Itoa(i) }

// MeasureIdeal runs the ideal handoff chain for d with n clients, each on
// its own connection made from base (endpoints, TLS), under prefix.
func MeasureIdeal(ctx context.Context, base clientv3.Config, prefix string, n int, d time.Duration) (*report.Ideal, error) {
	if n < 2 {
		return nil, fmt.Errorf("ideal handoff: %d clients, need ≥ 2", n)
	}
	ch := &idealChain{prefix: prefix, lat: make([][]time.Duration, n)}
	defer func() {
		for _, c := range ch.clis {
			c.Close()
		}
	}()
	base.DialTimeout, base.Logger = DefaultDialTimeout, zap.NewNop()
	for range n {
		cli, err := clientv3.New(base)
		if err != nil {
			return nil, fmt.Errorf("ideal handoff: connect: %w", err)
		}
		ch.clis = append(ch.clis, cli)
	}
	// The chain runs for d once every watch is created: on a loaded
	// machine creating them can take most of a short slice, which then
	// had no step at all. Its end cancels the watches, ending the clients.
	wctx, cancelWatches := context.WithCancel(ctx)
	defer cancelWatches()
	watches, err := ch.watch(wctx, DefaultDialTimeout)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(wctx, d)
	defer cancel()
	stop := context.AfterFunc(rctx, cancelWatches)
	defer stop()
	el, err := ch.run(rctx, watches)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	return ch.result(el)
}

// watch opens every client's watch on its turn key, each living as long
// as ctx, and waits up to within until each is created (synced: events
// reach it at once, not on a resync tick).
func (ch *idealChain) watch(ctx context.Context, within time.Duration) ([]clientv3.WatchChan, error) {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	var out []clientv3.WatchChan
	for i, cli := range ch.clis {
		wch := cli.Watch(ctx, ch.turnKey(i), clientv3.WithCreatedNotify(), clientv3.WithFilterDelete())
		select {
		case wr, ok := <-wch:
			if !ok || !wr.Created {
				return nil, fmt.Errorf("ideal handoff: watch of client %d not created: %v", i, wr.Err())
			}
		case <-deadline.C:
			return nil, fmt.Errorf("ideal handoff: watch of client %d not created within %s", i, within)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		out = append(out, wch)
	}
	return out, nil
}

// run gives client 0 the first turn and lets the chain go until ctx ends;
// it returns the chain's running time.
func (ch *idealChain) run(ctx context.Context, watches []clientv3.WatchChan) (time.Duration, error) {
	var wg sync.WaitGroup
	for i := range ch.clis {
		wg.Go(func() { ch.client(ctx, i, watches[i]) })
	}
	ch.t0 = time.Now()
	ch.passedAt.Store(0)
	_, err := ch.clis[0].Put(ctx, ch.turnKey(0), "0")
	wg.Wait()
	if err != nil && ctx.Err() == nil {
		return 0, fmt.Errorf("ideal handoff: first turn: %w", err)
	}
	return time.Since(ch.t0), nil
}

// client i takes each turn its watch brings and passes it on with one
// conditional commit, then writes its join-like key.
func (ch *idealChain) client(ctx context.Context, i int, wch clientv3.WatchChan) {
	cli, next := ch.clis[i], ch.turnKey((i+1)%len(ch.clis))
	for wr := range wch {
		for _, ev := range wr.Events {
			if ev.Type != mvccpb.PUT || ctx.Err() != nil {
				continue
			}
			now := time.Since(ch.t0)
			ch.lat[i] = append(ch.lat[i], now-time.Duration(ch.passedAt.Load()))
			ch.passedAt.Store(int64(time.Since(ch.t0)))
			resp, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(ch.turnKey(i)), "=", ev.Kv.ModRevision)).
				Then(clientv3.OpPut(next, strconv.Itoa(i))).Commit()
			if ctx.Err() != nil {
				return
			}
			if err != nil || !resp.Succeeded {
				ch.errs.Add(1) // the chain stops here: nothing else passes the turn
				return
			}
			if _, err := cli.Put(ctx, ch.joinKey(i), "1"); err != nil && ctx.Err() == nil {
				ch.errs.Add(1)
			}
		}
	}
}

// result is the chain's figures. The first turn (from the harness's Put)
// is not a step between clients and is left out.
func (ch *idealChain) result(el time.Duration) (*report.Ideal, error) {
	var lat []time.Duration
	for i, l := range ch.lat {
		if i == 0 && len(l) > 0 {
			l = l[1:]
		}
		lat = append(lat, l...)
	}
	if len(lat) == 0 {
		return nil, fmt.Errorf("ideal handoff: no step in %s (%d errors)", el.Round(time.Millisecond), ch.errs.Load())
	}
	perS := float64(len(lat)) / el.Seconds()
	l := LatencyOf(lat)
	return &report.Ideal{Clients: len(ch.clis), Steps: len(lat), Errors: int(ch.errs.Load()), DurationS: round3(el.Seconds()),
		RatePerS: round1(perS), StepP50MS: l.P50, StepMS: l}, nil
}
