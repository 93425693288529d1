package etcdlocks_test

import (
	"context"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/stats"
)

// lockParts are the parts of a queue lock's work added to the ideal
// handoff chain (harness.MeasureIdeal), one at a time.
type lockParts struct {
	name string
	// join: the passer's join-like write is a queue's join — a txn that
	// creates a new key (deleted by the passer's step) and reads the two
	// newest keys of the prefix by create revision — instead of a Put.
	join bool
	// lease: that key is under the client's lease.
	lease bool
	// watch: after joining, the passer opens (and waits for) a watch on
	// another client's join key, and cancels it at its next turn — a
	// waiter's watch of its predecessor, new at every acquisition.
	watch bool
	// dataflow: the queue's own writes and events with no lock logic. A
	// client's join key is also where its turn arrives (a queue's
	// handover puts into the successor's key): the step deletes the
	// passer's key and puts into the next client's, the join creates the
	// passer's key again (an event on its own watch, as a queue's join
	// is), and each client keeps a watch on its predecessor's key for
	// deletes (one more event a step). Implies join and lease.
	dataflow bool
	// list: with dataflow, the step's put carries a handover's list of
	// successors (the lock's encoding of the other clients' keys), which
	// the next client decodes. The lock's refill, in two parts: with
	// refillRead, every third step also reads the successors after a key
	// (a range sorted by create revision); with refillPut, the passer's
	// join after that step puts them, as an extension, into that key's
	// owner's key (whose watch skips it).
	list, refillRead, refillPut bool
	// lock: not the chain but the queue strategy itself, in a bare
	// Lock/Unlock loop per client (no runner): the dataflow's row with the
	// lock's logic added.
	lock bool
}

// TestMeasureLockParts is a measurement, not a check: it runs only with
// LOCKBENCH_MEASURE=parts. On one 3-member cluster (fsync on) it runs
// rounds of 1 s slices: the ideal handoff, then the same chain with a
// lock's parts added (lockParts), in rotating order, 8 clients, and prints
// each variant's rate as a ratio to the round's ideal, median over rounds.
// It shows what etcd charges for the work every queue lock does beyond
// the ideal's, and so where a lock's remaining gap to the ideal goes
// (docs/measurements.md, "Where the gap to the ideal goes").
// LOCKBENCH_PARTS (comma-separated variant names) runs only those.
//
//	LOCKBENCH_MEASURE=parts go test -run TestMeasureLockParts -v ./locks
func TestMeasureLockParts(t *testing.T) {
	if os.Getenv("LOCKBENCH_MEASURE") != "parts" || testing.Short() {
		t.Skip("set LOCKBENCH_MEASURE=parts to measure")
	}
	variants := []lockParts{{name: "chain"}, {name: "+join", join: true}, {name: "+join+lease", join: true, lease: true},
		{name: "+join+lease+watch", join: true, lease: true, watch: true},
		{name: "queue dataflow", join: true, lease: true, dataflow: true},
		{name: "dataflow+list", join: true, lease: true, dataflow: true, list: true},
		{name: "dataflow+list+read", join: true, lease: true, dataflow: true, list: true, refillRead: true},
		{name: "dataflow+list+put", join: true, lease: true, dataflow: true, list: true, refillPut: true},
		{name: "dataflow+list+refill", join: true, lease: true, dataflow: true, list: true, refillRead: true, refillPut: true},
		{name: "queue lock", lock: true}}
	if only := os.Getenv("LOCKBENCH_PARTS"); only != "" {
		variants = slices.DeleteFunc(variants, func(v lockParts) bool { return !slices.Contains(strings.Split(only, ","), v.name) })
	}
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	queue, err := locks.Lookup("queue")
	if err != nil {
		t.Fatal(err)
	}
	eps, d, rounds := c.DirectEndpoints(), 1500*time.Millisecond, 16
	ratios := map[string][]float64{}
	for r := range rounds {
		id, err := harness.MeasureIdeal(ctx, clientv3.Config{Endpoints: eps}, fmt.Sprintf("/measure-parts/ideal/%d/", r), 8, d)
		if err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("round %d: ideal %4.0f steps/s", r, id.RatePerS)
		for i := range variants {
			v := variants[(i+r)%len(variants)]
			prefix := fmt.Sprintf("/measure-parts/%d/%d/", i, r)
			var rate float64
			if v.lock {
				rate, _ = handoffs(t, eps, queue.New, prefix, 8, d)
			} else {
				rate = chainWith(t, eps, prefix, 8, d, v)
			}
			ratios[v.name] = append(ratios[v.name], rate/id.RatePerS)
			line += fmt.Sprintf(" | %s ×%.2f", v.name, rate/id.RatePerS)
		}
		t.Log(line)
	}
	for _, v := range variants {
		x := ratios[v.name]
		t.Logf("%-18s × ideal median %.2f (%.2f–%.2f), %d rounds", v.name, stats.Median(x), slices.Min(x), slices.Max(x), rounds)
	}
}

// chainWith runs the ideal chain with parts for d and returns its steps
// per second. Like MeasureIdeal: client i holds a watch on its turn key,
// and a step is one txn that puts the next client's turn key if its own
// is at the revision the step before left.
func chainWith(t *testing.T, eps []string, prefix string, n int, d time.Duration, parts lockParts) float64 {
	t.Helper()
	clis, leases := make([]*clientv3.Client, n), make([]clientv3.LeaseID, n)
	for i := range clis {
		cli, err := clientv3.New(clientv3.Config{Endpoints: eps, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		clis[i] = cli
		if parts.lease {
			lr, err := cli.Grant(context.Background(), 30)
			if err != nil {
				t.Fatal(err)
			}
			leases[i] = lr.ID
		}
	}
	turn := func(i int) string { return prefix + "turn/" + strconv.Itoa(i%n) }
	join := func(i int) string { return prefix + "join/" + strconv.Itoa(i%n) }
	if parts.dataflow {
		turn = join
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	watches := make([]clientv3.WatchChan, n)
	for i, cli := range clis {
		if parts.dataflow && !chainJoin(ctx, cli, prefix+"join/", join(i), leases[i], parts, stepContent{}) {
			t.Fatal("join")
		}
		watches[i] = cli.Watch(ctx, turn(i), clientv3.WithCreatedNotify(), clientv3.WithFilterDelete())
		<-watches[i]
	}
	var preds sync.WaitGroup
	defer preds.Wait()
	for i, cli := range clis {
		if parts.dataflow {
			pred := cli.Watch(ctx, join(i+n-1), clientv3.WithCreatedNotify(), clientv3.WithFilterPut())
			<-pred
			preds.Go(func() {
				for range pred { // a waiter's wake-up, unused here
				}
			})
		}
	}
	var steps atomic.Int64
	var wg sync.WaitGroup
	for i, cli := range clis {
		wg.Go(func() {
			var endWatch context.CancelFunc = func() {}
			defer func() { endWatch() }()
			var mine int
			for wr := range watches[i] {
				for _, ev := range wr.Events {
					if ev.Type != mvccpb.PUT || len(ev.Kv.Value) == 0 || etcdlocks.IsExtension(ev.Kv.Value) || ctx.Err() != nil {
						continue
					}
					steps.Add(1)
					endWatch()
					sc := stepContent{created: ev.Kv.CreateRevision}
					if parts.list {
						etcdlocks.HandedOn(ev.Kv.Value) // as the lock's grant decodes its list
						var later []string
						for j := i + 2; j < i+n; j++ {
							later = append(later, join(j))
						}
						sc.value = etcdlocks.HandoverValue(later, ev.Kv.CreateRevision)
						sc.ext = etcdlocks.ExtensionValue(later, ev.Kv.CreateRevision)
					}
					mine++
					if mine%3 == 0 {
						sc.read, sc.to = parts.refillRead, join(i+3)
						sc.put = parts.refillPut
					}
					if !chainStep(ctx, cli, ev.Kv.ModRevision, turn(i), turn(i+1), join(i), parts, sc) {
						return
					}
					if !chainJoin(ctx, cli, prefix+"join/", join(i), leases[i], parts, sc) {
						return
					}
					if parts.watch {
						endWatch = chainWatch(ctx, cli, join(i+n-1))
					}
				}
			}
		})
	}
	t0 := time.Now()
	var first []clientv3.OpOption
	if parts.dataflow {
		first = append(first, clientv3.WithIgnoreLease())
	}
	if _, err := clis[0].Put(ctx, turn(0), "0", first...); err != nil {
		t.Fatalf("first turn: %v", err)
	}
	wg.Wait()
	return float64(steps.Load()) / time.Since(t0).Seconds()
}

// stepContent is what a step of the dataflow variants carries beyond the
// turn: the handover's value (list), and a refill's range (read) and
// extension into to's key (put).
type stepContent struct {
	value     string
	ext       string // the extension's value (with put)
	read, put bool
	to        string
	created   int64 // the passer's key's create revision
}

// chainStep passes the turn on (and, with a join, deletes the passer's
// join key, as a lock's release deletes its key).
func chainStep(ctx context.Context, cli *clientv3.Client, rev int64, mine, next, joinKey string, parts lockParts, sc stepContent) bool {
	value := "x"
	if sc.value != "" {
		value = sc.value
	}
	then := []clientv3.Op{clientv3.OpPut(next, value)}
	if parts.dataflow {
		then[0] = clientv3.OpPut(next, value, clientv3.WithIgnoreLease())
	}
	if parts.join {
		then = append(then, clientv3.OpDelete(joinKey))
	}
	if sc.read {
		then = append(then, clientv3.OpGet(path.Dir(joinKey)+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend),
			clientv3.WithLimit(16), clientv3.WithMinCreateRev(rev), clientv3.WithKeysOnly()))
	}
	turn := clientv3.Compare(clientv3.ModRevision(mine), "=", rev)
	if parts.refillPut {
		// An extension may have moved the key's mod revision since the
		// turn's put: compare its create revision, as the lock does.
		turn = clientv3.Compare(clientv3.CreateRevision(mine), "=", sc.created)
	}
	_, err := cli.Txn(ctx).If(turn).Then(then...).Commit()
	return err == nil
}

// chainJoin writes the passer's join key, as a Put or as a queue's join
// txn (with a refill's extension put into sc.to's key).
func chainJoin(ctx context.Context, cli *clientv3.Client, joinPrefix, key string, lease clientv3.LeaseID, parts lockParts, sc stepContent) bool {
	if !parts.join {
		_, err := cli.Put(ctx, key, "1")
		return err == nil
	}
	then := []clientv3.Op{clientv3.OpPut(key, "", clientv3.WithLease(lease)),
		clientv3.OpGet(joinPrefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(2), clientv3.WithKeysOnly())}
	if sc.put {
		then = append(then, clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(sc.to), ">", 0)},
			[]clientv3.Op{clientv3.OpPut(sc.to, sc.ext, clientv3.WithIgnoreLease())}, nil))
	}
	_, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).Then(then...).Commit()
	return err == nil
}

// chainWatch opens a watch on key and waits until the server confirms it;
// the returned function ends it.
func chainWatch(ctx context.Context, cli *clientv3.Client, key string) context.CancelFunc {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	<-cli.Watch(wctx, key, clientv3.WithCreatedNotify(), clientv3.WithFilterPut())
	return cancel
}
