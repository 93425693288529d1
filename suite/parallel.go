package suite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/harness"
)

// runBinary runs binary b's cells, Spec.Parallel at a time, each
// worker on its own cluster, and gathers them into the suite in matrix
// order. The first worker measures the commit floor on its first cluster
// while the others wait, so that no other cluster loads the machine then.
// It stops handing out cells at the first error (runErr, the earliest
// cell's) or when ctx ends, and returns once every worker has stopped and
// closed its cluster (closeErr: what closing them failed with).
func (r *suiteRun) runBinary(ctx context.Context, b suiteBin) (runErr, closeErr error) {
	jobs := r.jobs(b)
	if len(jobs) == 0 {
		return nil, nil
	}
	r.res.Notes = append(r.res.Notes, r.faultClusterNotes(b, jobs)...)
	outs := make([]cellOutcome, len(jobs))
	workers := make([]*suiteWorker, min(max(r.spec.Parallel, 1), len(jobs)))
	next, stop := make(chan int), make(chan struct{})
	var stopOnce sync.Once
	// A suite whose cells all run on deployments of their own (Redis,
	// ZooKeeper) starts no etcd cluster to measure the floor on: its
	// workers start together.
	etcdCells := slices.ContainsFunc(jobs, func(j suiteJob) bool { return harness.DeployerOf(j.lock) == nil })
	floor := newGate(r.res.Header.Floor != nil || r.spec.FloorDuration < 0 || r.spec.External != nil || !etcdCells)
	var wg sync.WaitGroup
	for i := range workers {
		w := &suiteWorker{r: r, measures: i == 0 && etcdCells, floor: floor}
		workers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			if w.measures {
				defer floor.open()
			} else if !floor.wait(ctx) {
				return
			}
			for j := range next {
				outs[j] = w.runCell(ctx, jobs[j])
				if outs[j].err != nil {
					stopOnce.Do(func() { close(stop) })
				}
			}
		}()
	}
feed:
	for j := range jobs {
		select {
		case next <- j:
		case <-stop:
			break feed
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	var closeErrs []error
	for _, w := range workers {
		closeErrs = append(closeErrs, w.closeCluster())
	}
	for _, o := range outs {
		for _, n := range o.notes {
			if !slices.Contains(r.res.Notes, n) { // a skip is said once for all its seeds
				r.res.Notes = append(r.res.Notes, n)
			}
		}
		if runErr == nil {
			runErr = o.err
		}
		if o.cell == nil {
			continue
		}
		switch {
		case o.cell.Saturated():
			r.res.Saturated++
		case !o.cell.Matches:
			r.res.Mismatches++
		}
		r.res.Cells = append(r.res.Cells, *o.cell)
	}
	return runErr, errors.Join(closeErrs...)
}

// gate is closed once: the first worker's floor measured (or not to be).
type gate struct {
	ch   chan struct{}
	once sync.Once
}

func newGate(open bool) *gate {
	g := &gate{ch: make(chan struct{})}
	if open {
		g.open()
	}
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// wait waits for the gate, false when ctx ended first.
func (g *gate) wait(ctx context.Context) bool {
	select {
	case <-g.ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// suiteWorker runs cells one after the other on its own cluster.
type suiteWorker struct {
	r *suiteRun
	c cluster.Members
	// opts are what c was started with: a cell whose faults need other
	// options (harness.ClusterFor) gets a cluster of its own, never c.
	opts cluster.Options
	// measures is set on the worker that measures the floor on its first
	// cluster, then opens floor for the others.
	measures bool
	floor    *gate
	// floorTried is set once the measuring worker has started its first
	// cluster, the one the floor is measured on.
	floorTried bool
}

// closeCluster closes the worker's cluster, if any.
func (w *suiteWorker) closeCluster() error {
	if w.c == nil {
		return nil
	}
	err := w.c.Close()
	w.c = nil
	return err
}

// runCell runs one job on the worker's cluster and judges the cell.
func (w *suiteWorker) runCell(ctx context.Context, j suiteJob) (out cellOutcome) {
	r := w.r
	if ctx.Err() != nil {
		return out
	}
	if rerr := r.refused(j.bin, j.lock, j.sc); rerr != nil {
		// A fault this cluster kind cannot do: skipped, said once for
		// every seed and rep.
		out.notes = append(out.notes, fmt.Sprintf("skipped %s: %v", r.cellName(j, false), rerr))
		return out
	}
	name := r.name(j)
	r.progress(j)
	cellSpec := harness.RunSpec{Lock: j.lock, Scenario: j.sc, Seed: j.run.seed, KeepAlive: j.run.keepAlive, RPCTimeout: r.spec.RPCTimeout, Cluster: j.bin.opts, Out: r.dir,
		InjectDelay: r.spec.InjectDelay[j.lock], RunID: r.newRunID(j), InSuite: true}
	res, err := w.run(ctx, j.bin, cellSpec)
	switch {
	case err != nil:
		out.err = fmt.Errorf("%s: %w", name, err)
		return out
	case res == nil:
		return out
	}
	ka := string(j.run.keepAlive)
	cell := harness.Judge(res.Summary, harness.ExpectationsFor(j.sc, j.lock, ka))
	cell.AnyReasons = harness.AnyReasons(j.sc, j.lock, ka, cell.ExpectedChecks)
	cell.Dir, _ = filepath.Rel(r.dir, res.Dir)
	if found, replace := harness.CheckLockService(ctx, w.c, j.lock); found != "" {
		note := fmt.Sprintf("after %s: %s", name, found)
		if replace {
			note += "; the cluster was replaced"
			if cerr := w.closeCluster(); cerr != nil {
				note += fmt.Sprintf(" (close: %v)", cerr)
			}
		}
		out.notes = append(out.notes, note)
	}
	if j.sc.Needs().SnapshotCount {
		// The next cell gets a fresh cluster: freshClusterWhy.
		if cerr := w.closeCluster(); cerr != nil {
			out.notes = append(out.notes, fmt.Sprintf("after %s: close its cluster: %v", name, cerr))
		}
	}
	out.cell = &cell
	return out
}

// freshClusterWhy is why a cell with snapshot-catchup never shares its
// cluster with the next cell.
const freshClusterWhy = "etcd holds its log for 30 s after it sends a snapshot (releaseDelayAfterSnapshot), so a second catch-up on the same cluster within 30 s gets no snapshot and cuts its follower again and again"

// run runs one cell: on the external cluster, or on the worker's cluster
// of binary b with what the cell's faults need (harness.ClusterFor), started
// when there is none, the last cell left it unhealthy, it was started
// with other options, or the cell catches a member up by snapshot. The
// measuring worker's first start measures the suite's commit floor, on
// a cluster of b's own options, before its first cell of any backend, so
// that the other workers wait only for the floor. A nil result with a nil
// error is a cluster start that ctx cut short.
func (w *suiteWorker) run(ctx context.Context, b suiteBin, spec harness.RunSpec) (*harness.Result, error) {
	r := w.r
	if w.floorDue() && r.spec.External == nil {
		if ok, err := w.start(ctx, b, b.opts); !ok {
			return nil, err
		}
	}
	if d := harness.DeployerOf(spec.Lock); d != nil {
		return harness.RunDeployed(ctx, d, spec) // a deployment of its own, every cell
	}
	if r.spec.External != nil {
		return harness.RunExternal(ctx, *r.spec.External, spec)
	}
	spec.Cluster = harness.ClusterFor(b.opts, spec.Scenario)
	// A catch-up needs a cluster that sent no snapshot within 30 s
	// (freshClusterWhy): a replaced member is sent one too.
	if w.c != nil && (!w.c.Healthy() || !harness.SameFaultOptions(w.opts, spec.Cluster) || spec.Scenario.Needs().SnapshotCount) {
		w.closeCluster()
	}
	if w.c == nil {
		if ok, err := w.start(ctx, b, spec.Cluster); !ok {
			return nil, err
		}
	}
	return harness.RunOn(ctx, w.c, spec)
}

// start starts the worker's cluster of binary b with opts; the
// measuring worker's first start measures the suite's commit floor on
// it. It is false, with a nil error when ctx cut it short.
func (w *suiteWorker) start(ctx context.Context, b suiteBin, opts cluster.Options) (bool, error) {
	r := w.r
	c, err := cluster.Open(ctx, opts)
	if err != nil {
		if ctx.Err() != nil {
			return false, nil
		}
		return false, fmt.Errorf("start etcd cluster (%s): %w", b.label(), err)
	}
	w.c, w.opts = c, opts
	if w.floorDue() {
		r.mu.Lock()
		r.res.measureFloor(ctx, c, r.spec.FloorDuration)
		r.mu.Unlock()
		w.floorTried = true
	}
	if w.measures {
		w.floor.open()
	}
	return true, nil
}

// floorDue says whether this worker's next cluster start is the one the
// suite's commit floor is measured on.
func (w *suiteWorker) floorDue() bool {
	if !w.measures || w.floorTried {
		return false
	}
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	return w.r.res.Header.Floor == nil && w.r.spec.FloorDuration >= 0
}
