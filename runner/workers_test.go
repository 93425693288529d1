package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/etcd"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
)

// Two workers of one run on an external cluster (no Cluster): each drives
// its share of the clients under their scenario ids, probes throughout,
// and worker 1 deletes the prefix at the end. A worker interrupted
// mid-run (worker 2, here) waits for no one: it is back while worker 1
// still runs, and worker 1, not interrupted, still finishes its run.
func TestWorkersShareARun(t *testing.T) {
	t.Parallel()
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

// An interrupted worker 1 ends every worker's run (they say why) and
// deletes the prefix only once the others are done: the other worker's
// history shows no key of its holders deleted under them, and no false
// violation (issue: worker 1 cleaned the prefix while worker 2's clients
// held keys, and worker 2 waited for a finished it had missed).
func TestInterruptedCoordinatorStopsTheOthers(t *testing.T) {
	c := startCluster(t)
	sc, err := scenarios.Lookup("contention")
	if err != nil {
		t.Fatal(err)
	}
	sc.Duration = scenarios.Duration(6 * time.Second)
	prefix := "/lockbench/test-workers-stop/"
	type result struct {
		out *Outcome
		err error
	}
	results := [2]chan result{make(chan result, 1), make(chan result, 1)}
	ctx1, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	for i, ctx := range []context.Context{ctx1, context.Background()} {
		go func() {
			out, err := Run(ctx, Config{Backend: etcd.Backend{}, Scenario: sc, Lock: "queue", Seed: 1, Prefix: prefix, Endpoints: c.Endpoints(),
				Worker: Worker{Index: i + 1, Count: 2, Wait: 30 * time.Second}})
			results[i] <- result{out, err}
		}()
	}
	time.AfterFunc(2*time.Second, interrupt)
	one, two := <-results[0], <-results[1]
	if one.err != nil || two.err != nil {
		t.Fatalf("worker 1: %v; worker 2: %v", one.err, two.err)
	}
	if !one.out.Interrupted || one.out.Stopped != "" {
		t.Errorf("worker 1: interrupted %v, stopped %q: want interrupted, and every done seen", one.out.Interrupted, one.out.Stopped)
	}
	if two.out.Interrupted || !strings.Contains(two.out.Stopped, "worker 1 was interrupted") {
		t.Errorf("worker 2: interrupted %v, stopped %q: want its run ended by worker 1's stop", two.out.Interrupted, two.out.Stopped)
	}
	rep := check.Check(two.out.Events, check.Options{})
	for _, name := range []string{verdict.Exclusion, verdict.Symmetry, verdict.Fencing} {
		if r := rep.Checks[name]; r.Verdict != verdict.Pass {
			t.Errorf("worker 2's %s: %s %v", name, r.Verdict, r.Violations)
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

// Two runs on one prefix of a shared cluster: the second, started while
// the first runs, is refused (backend.ErrClaimed) before it writes a key,
// and deletes nothing of the first's, which runs on unharmed.
func TestSecondRunOnAPrefixIsRefused(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	sc, err := scenarios.Lookup("contention")
	if err != nil {
		t.Fatal(err)
	}
	sc.Duration = scenarios.Duration(3 * time.Second)
	prefix := "/lockbench/test-claim/"
	cfg := Config{Backend: etcd.Backend{}, Scenario: sc, Lock: "queue", Seed: 1, Prefix: prefix, Endpoints: c.Endpoints()}
	type result struct {
		out *Outcome
		err error
	}
	first := make(chan result, 1)
	go func() {
		out, err := Run(context.Background(), cfg)
		first <- result{out, err}
	}()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for deadline := time.Now().Add(20 * time.Second); ; {
		resp, err := cli.Get(context.Background(), prefix+ClaimKey)
		if err == nil && resp.Count == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first run never claimed %s (%v)", prefix, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := Run(context.Background(), cfg); !errors.Is(err, backend.ErrClaimed) {
		t.Errorf("second run: %v, want backend.ErrClaimed", err)
	}
	r := <-first
	if r.err != nil || r.out.Stopped != "" {
		t.Fatalf("first run: %v (stopped %q)", r.err, r.out.Stopped)
	}
	rep := check.Check(r.out.Events, check.Options{})
	for _, name := range []string{verdict.Exclusion, verdict.Symmetry, verdict.Liveness} {
		if res := rep.Checks[name]; res.Verdict != verdict.Pass {
			t.Errorf("first run's %s: %s %v", name, res.Verdict, res.Violations)
		}
	}
	resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 0 {
		t.Errorf("the prefix holds %v keys after the first run (%v): want none", resp, err)
	}
}

// A ready left by a worker killed since (its key lives on with its
// lease) does not let worker 1 start alone: the dead worker never answers
// the start, and worker 1 stops, saying why.
func TestStaleReadyDoesNotStartARun(t *testing.T) {
	c := startCluster(t)
	sc, err := scenarios.Lookup("contention")
	if err != nil {
		t.Fatal(err)
	}
	prefix := "/lockbench/test-stale-ready/"
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	lease, err := cli.Grant(context.Background(), 60)
	if err != nil {
		t.Fatal(err)
	}
	// As worker 2 of this very run wrote it before it was killed.
	same := fmt.Sprintf("lock %s, scenario %s (%.19s), seed %d, %d workers", "queue", sc.Name, sc.Hash(), 1, 2)
	if _, err := cli.Put(context.Background(), prefix+"workers/ready/2", same, clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), Config{Backend: etcd.Backend{}, Scenario: sc, Lock: "queue", Seed: 1, Prefix: prefix, Endpoints: c.Endpoints(),
		Worker: Worker{Index: 1, Count: 2, Wait: 3 * time.Second}})
	if err == nil || !strings.Contains(err.Error(), "0 of the 1 other workers that said ready answered the start") {
		t.Errorf("worker 1 with a dead worker 2's ready: %v, want it stopped before the run", err)
	}
}

// Workers that run different locks on one prefix are not one run: worker
// 1 finds the other's ready written by another run and stops before the
// start, saying which.
func TestWorkersOfDifferentRunsDoNotMeet(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	sc, err := scenarios.Lookup("contention")
	if err != nil {
		t.Fatal(err)
	}
	prefix := "/lockbench/test-other-run/"
	errs := make(chan error, 2)
	for i, lock := range []string{"queue", "mutex"} {
		go func() {
			_, err := Run(context.Background(), Config{Backend: etcd.Backend{}, Scenario: sc, Lock: lock, Seed: 1, Prefix: prefix, Endpoints: c.Endpoints(),
				Worker: Worker{Index: i + 1, Count: 2, Wait: 5 * time.Second}})
			errs <- err
		}()
	}
	var msgs []string
	for range 2 {
		if err := <-errs; err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if !slices.ContainsFunc(msgs, func(m string) bool {
		return strings.Contains(m, "worker 1/2: workers/ready/2 was written by a worker of another run (lock mutex")
	}) {
		t.Errorf("errors %q: want worker 1 to name worker 2's ready as another run's", msgs)
	}
}
