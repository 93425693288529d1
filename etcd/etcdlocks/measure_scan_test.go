package etcdlocks_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/stats"
)

// TestMeasureJoinScan is a measurement, not a check: it runs only with
// LOCKBENCH_MEASURE=scan. It times, on an otherwise idle 3-member cluster
// (fsync on), queue's join txn — a put and a range of the queue's prefix
// sorted by create revision, limit 2 — beside a plain Put, with 0 to
// 10,000 keys already in the queue. etcd reads every key of a range it
// must sort before applying the limit, and a txn that writes is applied
// on every member in the one apply loop, so a join costs time in the
// queue's length: with many waiters on one name that, not the handoff,
// is the lock's limit (docs/measurements.md, "Ten thousand clients").
// etcd's Mutex and lock service range the same way (WithFirstCreate,
// WithLastCreate).
//
//	LOCKBENCH_MEASURE=scan go test -run TestMeasureJoinScan -v ./locks
func TestMeasureJoinScan(t *testing.T) {
	if os.Getenv("LOCKBENCH_MEASURE") != "scan" || testing.Short() {
		t.Skip("set LOCKBENCH_MEASURE=scan to measure")
	}
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.DirectEndpoints(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	const pfx, samples = "/measure-scan/", 200
	have := 0
	for _, n := range []int{0, 100, 1000, 3000, 10000} {
		// Waiters' keys, named as queue names them (a lease ID in hex), so
		// in no particular order of creation.
		for ; have < n; have++ {
			if _, err := cli.Put(ctx, pfx+fmt.Sprintf("%016x", have*7919%100003), ""); err != nil {
				t.Fatal(err)
			}
		}
		for _, join := range []bool{true, false} {
			lat := make([]float64, 0, samples)
			for i := range samples {
				key := pfx + "~" + strconv.Itoa(i)
				start := time.Now()
				if join {
					_, err = cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
						Then(clientv3.OpPut(key, ""), clientv3.OpGet(pfx, clientv3.WithPrefix(),
							clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(2), clientv3.WithKeysOnly())).
						Commit()
				} else {
					_, err = cli.Put(ctx, key, "")
				}
				lat = append(lat, ms(time.Since(start)))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := cli.Delete(ctx, key); err != nil {
					t.Fatal(err)
				}
			}
			slices.Sort(lat)
			what := "plain put"
			if join {
				what = "join txn (sorted range, limit 2)"
			}
			t.Logf("queue length %5d  %-33s p50 %6.2f ms  p90 %6.2f ms", n, what, stats.Median(lat), lat[samples*9/10])
		}
	}
}
