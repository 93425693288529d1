package runner

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/clocks"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/scenarios"
)

// Worker is one of Count processes that drive one run together, on one
// cluster and one key prefix (lockbench run --worker I/N): one machine
// cannot drive the clients of a production fleet. Worker Index (from 1)
// drives the scenario's clients Index−1, Index−1+Count, …, under their
// ids in the scenario, so that the workers' histories merged (lockbench
// merge) are the run's. The zero Worker is the whole run.
//
// The workers meet through etcd, under PREFIX/workers/: each says it is
// ready once its clients are connected; worker 1, the coordinator, sets
// up the counter, then says start; each starts its clock on start. At the
// end each says done; worker 1 waits for every done, says finished (each
// other worker closes on it), reads the counter and deletes the prefix.
// Throughout, each commits probe writes that package clocks aligns the
// workers' clocks by. Every key a worker writes there is under its admin
// lease: its close (the lease's revoke) or a kill (its expiry) removes
// them.
type Worker struct {
	Index, Count int
	// Wait bounds how long the worker waits for the others at the start
	// (pods are scheduled, machines boot) and worker 1 for the others'
	// done; 0 means DefaultWorkerWait.
	Wait time.Duration
}

// DefaultWorkerWait is Worker.Wait's default.
const DefaultWorkerWait = 5 * time.Minute

// wait is w.Wait with its default.
func (w Worker) wait() time.Duration { return cmp.Or(w.Wait, DefaultWorkerWait) }

// probeEvery bounds the pause between a worker's probe writes, drawn
// uniformly below it: about twenty a second per worker, small commits
// beside the lock's hundreds. The pauses are random so that the workers'
// probes do not keep one phase: a pair's bound is only as tight as the
// time between two probes of different workers, and random pauses bring
// some pairs within a round trip of each other every few seconds.
const probeEvery = 100 * time.Millisecond

// whole reports whether w is the whole run (no --worker).
func (w Worker) whole() bool { return w.Count <= 1 }

// drives reports whether the worker drives client id.
func (w Worker) drives(id int) bool { return w.whole() || id%w.Count == w.Index-1 }

// coordinates reports whether the worker owns the run's shared state: the
// counter, the final read, the prefix's deletion.
func (w Worker) coordinates() bool { return w.whole() || w.Index == 1 }

// String is I/N, as the flag takes it.
func (w Worker) String() string { return strconv.Itoa(w.Index) + "/" + strconv.Itoa(w.Count) }

// CheckWorker refuses what several workers cannot split: member faults
// (the members are the cluster's, not a worker's), an arrival rate and
// several lock names.
// Run checks it, and so can a caller before it starts anything.
func CheckWorker(w Worker, sc scenarios.Scenario) error {
	switch {
	case w.whole():
		return nil
	case w.Index < 1 || w.Index > w.Count:
		return fmt.Errorf("worker %s: want I/N with 1 ≤ I ≤ N", w)
	case w.Count > sc.Clients:
		return fmt.Errorf("worker %s: scenario %s has %d clients, fewer than the %d workers (each drives at least one)", w, sc.Name, sc.Clients, w.Count)
	case sc.Needs().Members:
		return fmt.Errorf("worker %s: scenario %s injects member faults, which workers sharing an external cluster cannot do; workers take client faults only", w, sc.Name)
	case sc.Workload.Rate > 0:
		return fmt.Errorf("worker %s: scenario %s is open-loop (rate), which is not split across workers; run it from one process", w, sc.Name)
	case sc.Workload.LockCount() > 1:
		return fmt.Errorf("worker %s: scenario %s has %d lock names; workers share one name's queue only (holder and waiter:K are read from it): run it from one process", w, sc.Name, sc.Workload.LockCount())
	}
	return nil
}

// storeQueue is, for a worker, the lock's queue as etcd holds it: the
// keys under the name's prefix by create revision, the holder's first,
// each as the id of the client it belongs to if this worker drives that
// client (and it has not crashed), else elsewhere. Every worker reads the
// same queue, so holder and waiter:K name the same client in all of them
// and only its worker strikes (a worker knows only its own clients, so
// the queue must come from the store). Every key-per-waiter strategy
// keeps a key per waiter there, named by its lease; a try-lock (txn) has
// the holder's key only, so waiter:K finds no target with workers.
func (r *runner) storeQueue() []int {
	leases, err := r.meeting().Queue(r.life, r.cfg.Prefix+"locks/"+locks.DefaultName+"/")
	if err != nil {
		return nil
	}
	own := map[int64]int{}
	for _, c := range r.clients {
		c.mu.Lock()
		if (c.queue.state == waiting || c.queue.state == holding) && !c.faults.crashed {
			own[int64(c.waiterLease())] = c.id
			if g := c.queue.grant; g != nil {
				own[int64(g.Lease)] = c.id
			}
		}
		c.mu.Unlock()
	}
	out := make([]int, len(leases))
	for i, lease := range leases {
		id, ok := own[lease]
		if !ok || lease == 0 {
			id = r.elsewhere()
		}
		out[i] = id
	}
	return out
}

// elsewhere is the id that stands, in a worker's resolution of a target,
// for a client this worker does not drive (or cannot strike): one past
// the last client, which no worker drives.
func (r *runner) elsewhere() int { return r.cfg.Scenario.Clients }

// WorkerPrepKeys are where, under the run's prefix, workers write before
// the run starts: their ready (meet), the harness's permission pre-flight
// of each (PREFIX/workers/preflight/I) and worker 1's claim. A worker's
// check that the prefix is unused allows these, the other workers', and
// nothing else.
var WorkerPrepKeys = []string{"workers/ready/", "workers/preflight/", ClaimKey}

// ClaimKey is the key, under the run's prefix, by which a run on a shared
// cluster claims the prefix (backend.Claimer): worker 1 writes it before
// the start.
const ClaimKey = "claim"

// workerKey is a key of the workers' meeting place in the run's prefix.
func (r *runner) workerKey(what string) string {
	return r.cfg.Prefix + "workers/" + what
}

// meet says this worker is ready and waits for the start: worker 1 waits
// for every worker's ready (each of its own run: sameRun), sets up the
// counter (setup), says start and waits for every other worker's answer;
// another worker waits for the start (of its run) and answers it.
func (r *runner) meet(ctx context.Context, setup func(context.Context) error) error {
	w := r.cfg.Worker
	if w.whole() {
		return setup(ctx)
	}
	ready, err := r.putWorkerKey(ctx, "ready/"+strconv.Itoa(w.Index))
	if err != nil {
		return fmt.Errorf("worker %s: say ready: %w", w, err)
	}
	if !w.coordinates() {
		r.startRev = ready
		if err := r.awaitPuts(ctx, "start", ready, 1); err != nil {
			return err
		}
		vs, err := r.meeting().Values(ctx, r.workerKey("start"))
		if err != nil {
			return fmt.Errorf("worker %s: read start: %w", w, err)
		}
		if err := r.sameRun("start", vs); err != nil {
			return err
		}
		if _, err := r.putWorkerKey(ctx, "started/"+strconv.Itoa(w.Index)); err != nil {
			return fmt.Errorf("worker %s: answer the start: %w", w, err)
		}
		return nil
	}
	if err := r.awaitReady(ctx); err != nil {
		return err
	}
	if err := setup(ctx); err != nil {
		return err
	}
	rev, err := r.putWorkerKey(ctx, "start")
	if err != nil {
		return fmt.Errorf("worker %s: say start: %w", w, err)
	}
	r.startRev = rev
	// Every worker that said ready answers the start. A ready left by a
	// worker killed since lives on with its lease (up to the admin
	// lease's TTL) and gets no answer: the run must not go on without
	// that worker's clients, so it stops, and so do the others.
	actx, cancel := context.WithTimeout(ctx, min(w.wait(), startAnswerWait))
	defer cancel()
	if n, err := r.meeting().AwaitPuts(actx, r.workerKey("started/"), rev, w.Count-1); err != nil {
		r.putWorkerKey(context.WithoutCancel(ctx), "stop")
		return fmt.Errorf("worker %s: %d of the %d other workers that said ready answered the start within %s: one was killed since it said ready (its ready key outlives it until its lease expires)? start every worker again", w, n, w.Count-1, min(w.wait(), startAnswerWait))
	}
	return nil
}

// startAnswerWait bounds worker 1's wait for the others' answers to its
// start: each answers as soon as it sees the start.
const startAnswerWait = 10 * time.Second

// putWorkerKey writes a key of the meeting place, under what the admin
// keeps for the run, so that a killed run's keys expire, and returns the
// revision it was written at.
func (r *runner) putWorkerKey(ctx context.Context, what string) (int64, error) {
	return r.meeting().Put(ctx, r.workerKey(what), r.identity())
}

// identity is what every worker of one run runs, as its meeting keys'
// value: workers that differ in it are not one run, and must not meet.
func (r *runner) identity() string {
	sc := r.cfg.Scenario
	return fmt.Sprintf("lock %s, scenario %s (%.19s), seed %d, %d workers", r.cfg.Lock, sc.Name, sc.Hash(), r.cfg.Seed, r.cfg.Worker.Count)
}

// sameRun says why the meeting keys in vs (read under what: a key, or a
// prefix ending in "/") are not all of this worker's run, or nil.
func (r *runner) sameRun(what string, vs map[string]string) error {
	mine := r.identity()
	for _, k := range slices.Sorted(maps.Keys(vs)) {
		if !strings.HasSuffix(what, "/") && k != r.workerKey(what) {
			continue // a longer key the prefix read also found
		}
		if vs[k] != mine {
			return fmt.Errorf("worker %s: %s was written by a worker of another run (%s), not of this one (%s): give every worker the same --lock, --scenario, --seed and worker count, or another --prefix", r.cfg.Worker, strings.TrimPrefix(k, r.cfg.Prefix), vs[k], mine)
		}
	}
	return nil
}

// meeting is the admin connection as the workers' meeting place; connect
// refused workers on a backend without one.
func (r *runner) meeting() backend.Meeting {
	m, ok := r.admin.(backend.Meeting)
	if !ok {
		panic("runner: workers on a backend with no meeting place") // connect refuses them
	}
	return m
}

// awaitReady waits, up to the worker's wait, until the meeting place
// holds every worker's ready: read, since some may have been put before
// this worker's watch could start, and none goes before the start; then
// checks that every ready is of this run (sameRun).
func (r *runner) awaitReady(ctx context.Context) error {
	n := int64(r.cfg.Worker.Count)
	deadline := time.Now().Add(r.cfg.Worker.wait())
	for {
		vs, err := r.meeting().Values(ctx, r.workerKey("ready/"))
		got := int64(len(vs))
		if err == nil && got >= n {
			return r.sameRun("ready/", vs)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("worker %s: waited %s for the ready of %d workers (have %d, last error %v): are they all running with the same --endpoints and --prefix?", r.cfg.Worker, r.cfg.Worker.wait(), n, got, err)
		}
		Sleep(ctx, 10*time.Millisecond)
	}
}

// awaitPuts waits, up to the worker's wait, until n distinct keys of the
// meeting place under what (a key, or a prefix ending in "/") have been
// put since revision from. A watch from the revision sees each put even
// if the key is gone by then: a worker's done goes with its lease when it
// closes, and worker 1 may delete its finished (with the prefix) at once.
func (r *runner) awaitPuts(ctx context.Context, what string, from int64, n int) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Worker.wait())
	defer cancel()
	seen, err := r.meeting().AwaitPuts(ctx, r.workerKey(what), from, n)
	switch {
	case err == nil:
		return nil
	case ctx.Err() == nil:
		return fmt.Errorf("worker %s: watch for %s: %w", r.cfg.Worker, what, err)
	}
	return fmt.Errorf("worker %s: waited %s for %s of %d workers (have %d): are they all still running?", r.cfg.Worker, r.cfg.Worker.wait(), what, n, seen)
}

// leave says this worker is done and waits until every worker is: worker
// 1 for every done, then it says finished, which the others wait for. The
// counter's final value and the prefix belong to the whole run, and a
// worker's done goes with its lease when it closes, so none may close
// before worker 1 has seen every done. What it could not wait for is the
// run's Stopped reason.
//
// An interrupted worker (SIGINT) other than worker 1 waits for no one:
// it says done and goes; the others run on (its clients have let go of
// the lock). An interrupted worker 1 says stop, which ends the others'
// runs early (watchStop), and waits for their done as usual before it
// says finished: the prefix it then deletes holds none of their keys.
func (r *runner) leave(ctx context.Context) {
	w := r.cfg.Worker
	if w.whole() {
		return
	}
	interrupted := ctx.Err() != nil
	ctx = context.WithoutCancel(ctx)
	if _, err := r.putWorkerKey(ctx, "done/"+strconv.Itoa(w.Index)); err != nil {
		r.stop(fmt.Sprintf("worker %s: say done: %v", w, err))
		return
	}
	if !w.coordinates() {
		if interrupted {
			return
		}
		// From this worker's ready: a finished said early (worker 1
		// interrupted) is seen too.
		if err := r.awaitPuts(ctx, "finished", r.startRev, 1); err != nil {
			r.stop(err.Error())
		}
		return
	}
	if interrupted {
		if _, err := r.putWorkerKey(ctx, "stop"); err != nil {
			r.stop(fmt.Sprintf("worker %s: say stop: %v", w, err))
		}
	}
	if err := r.awaitPuts(ctx, "done/", r.startRev, w.Count); err != nil {
		r.stop(err.Error())
	}
	if _, err := r.putWorkerKey(ctx, "finished"); err != nil {
		r.stop(fmt.Sprintf("worker %s: say finished: %v", w, err))
	}
}

// watchStop, in a worker other than worker 1, ends the run early once
// worker 1 says stop (it was interrupted), until ctx ends or the function
// it returns is called, which waits for the watch to end.
func (r *runner) watchStop(ctx context.Context) (end func()) {
	w := r.cfg.Worker
	if w.coordinates() {
		return func() {}
	}
	return background(ctx, func(ctx context.Context) {
		if n, _ := r.meeting().AwaitPuts(ctx, r.workerKey("stop"), r.startRev, 1); n == 1 {
			r.stop(fmt.Sprintf("worker %s: worker 1 was interrupted, which ends every worker's run", w))
			r.stopRun()
		}
	})
}

// stop records why the run ended early, unless a reason is recorded.
func (r *runner) stop(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped == "" {
		r.stopped = why
	}
}

// prober is a worker's probe writes, each timed on the run's clock, for
// package clocks: its goroutine alone appends, and wait reads them once
// it has returned.
type prober struct {
	probes []clocks.Probe
	done   chan struct{}
}

// startProbes commits a probe write at random pauses below probeEvery
// until ctx ends; nothing when the run is not split.
func (r *runner) startProbes(ctx context.Context) *prober {
	p := &prober{done: make(chan struct{})}
	if r.cfg.Worker.whole() {
		close(p.done)
		return p
	}
	what := "probe/" + strconv.Itoa(r.cfg.Worker.Index)
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			sent := r.rec.Now()
			rev, err := r.putWorkerKey(ctx, what)
			if err == nil {
				p.probes = append(p.probes, clocks.Probe{Sent: sent, Received: r.rec.Now(), Revision: rev})
			}
			Sleep(ctx, rand.N(probeEvery))
		}
	}()
	return p
}

// wait waits for the probes to stop (ctx ended) and returns them.
func (p *prober) wait() []clocks.Probe {
	<-p.done
	return p.probes
}
