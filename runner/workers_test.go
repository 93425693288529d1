package runner

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockbench/lockbench/etcd"
	"github.com/lockbench/lockbench/scenarios"
)

// Two workers of one run on an external cluster (no Cluster): each drives
// its share of the clients under their scenario ids, probes throughout,
// and worker 1 deletes the prefix at the end. A worker interrupted
// mid-run (worker 2, here) waits for no one: it is back while worker 1
// still runs, and worker 1, not interrupted, still finishes its run.
func TestWorkersShareARun(t *testing.T) {
	c := startCluster(t)
	sc, err := scenarios.Lookup("contention")
	if err != nil {
		t.Fatal(err)
	}
	sc.Duration = scenarios.Duration(4 * time.Second)
	prefix := "/lockbench/test-workers/"
	type result struct {
		worker int
		out    *Outcome
		err    error
	}
	done := make(chan result, 2)
	ctx2, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	for i, ctx := range []context.Context{context.Background(), ctx2} {
		go func() {
			out, err := Run(ctx, Config{Backend: etcd.Backend{}, Scenario: sc, Lock: "queue", Seed: 1, Prefix: prefix, Endpoints: c.Endpoints(),
				Worker: Worker{Index: i + 1, Count: 2, Wait: time.Minute}})
			done <- result{i + 1, out, err}
		}()
	}
	time.AfterFunc(time.Second+500*time.Millisecond, interrupt)
	first, second := <-done, <-done
	for _, r := range []result{first, second} {
		if r.err != nil {
			t.Fatalf("worker %d: %v", r.worker, r.err)
		}
	}
	if first.worker != 2 || !first.out.Interrupted || second.out.Interrupted || second.out.Stopped != "" {
		t.Fatalf("worker %d came back first (interrupted %v), then worker %d (interrupted %v, stopped %q): want 2 interrupted at once, 1 running its whole run",
			first.worker, first.out.Interrupted, second.worker, second.out.Interrupted, second.out.Stopped)
	}
	for _, r := range []result{first, second} {
		if len(r.out.Probes) < 5 {
			t.Errorf("worker %d: %d probes", r.worker, len(r.out.Probes))
		}
		for _, e := range r.out.Events {
			if int(e.Process) >= 0 && int(e.Process)%2 != r.worker-1 {
				t.Fatalf("worker %d recorded client %d's event %+v", r.worker, e.Process, e)
			}
		}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 0 {
		t.Errorf("the run's prefix holds %v keys after both workers (%v): want none", resp, err)
	}
}
