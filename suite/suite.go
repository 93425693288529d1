package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/scenarios"
)

// DefaultQuickDuration caps fault-free scenarios in a suite: their verdicts
// need seconds, not the 10 s a benchmark run takes. Twice the fault-free
// liveness bound (check.MinQuietBound) and the long-wait floor
// (check.MinLongWait), so a lock that idles or serves a client late for
// over a second fails there (mut-lazy-unlock, caught in contention, herd
// and herd-hold at this cap).
const DefaultQuickDuration = 2 * time.Second

// Spec is a matrix of strategies × scenarios × keepalive policies ×
// seeds × etcd binaries.
type Spec struct {
	Locks     []string
	Scenarios []scenarios.Scenario
	// Seeds runs every cell with Seeds seeds from FirstSeed (0: 1) on:
	// a rate measured over seeds 1..10 can be extended by 11..20 without
	// running the first ten again.
	Seeds     int
	FirstSeed int64
	// KeepAlives are the keepalive policies every cell runs under, one
	// after the other (none: etcdlocks.DefaultKeepAlive): how long a cut-off
	// holder believes is the policy's doing, and scenarios expect per
	// policy (verdict.KeepAlivePrefix).
	KeepAlives []etcdlocks.KeepAlive
	// EtcdBins, when set, are the --etcd-bin values ("self" or paths) the
	// whole matrix runs on, one binary after the other, each on its own
	// process cluster: a version matrix, whose cells record the binary and
	// its release and are keyed by the release (report.Summary.Key), so
	// old and new etcd releases run side by side. It overrides
	// Cluster.EtcdBin; none: the cluster Cluster asks for.
	EtcdBins []string
	// RPCTimeout is harness.RunSpec.RPCTimeout of every cell.
	RPCTimeout time.Duration
	Cluster    cluster.Options
	Out        string
	// QuickDuration caps the duration of scenarios without fault steps
	// (0: DefaultQuickDuration; negative: no cap).
	QuickDuration time.Duration
	// Progress, when set, hears about each cell as it starts.
	Progress func(done, total int, cell string)
	// Reps runs every seed of every cell this many times (0: once): the
	// samples a regression check compares, which differ only by the
	// machine's noise since the seed, and so the workload, is the same.
	Reps int
	// InjectDelay, test-only, delays every grant of the named strategies
	// (harness.RunSpec.InjectDelay): a known regression on demand.
	InjectDelay map[string]time.Duration
	// FloorDuration is how long the suite measures the commit floor on its
	// cluster before the first cell (0: DefaultFloor; < 0: not at all).
	FloorDuration time.Duration
	// Shard, when set, runs only that part of the matrix (AssignShards);
	// suite.json records it and the whole matrix, for lockbench merge.
	Shard ShardSpec
	// Parallel is how many cells run at a time (0: 1), each worker on its
	// own cluster: cells are gathered back in matrix order.
	Parallel int
	// harness.External, when set, is the cluster every cell runs on (harness.RunExternal),
	// each under its own prefix PARENT<run-id>/ (harness.External.Parent; a shard's
	// own, ShardSpec.Prefix, when it names none and Shard is set); Cluster
	// and EtcdBins are then unused, cells whose scenario needs member
	// faults are skipped with a note, and no commit floor is measured.
	External *harness.External
}

// DefaultFloor is how long a suite measures its commit floor: enough
// for a stable median commit latency, short next to any cell.
const DefaultFloor = time.Second

// Result is a finished suite.
type Result struct {
	Dir   string
	Cells []report.Cell
	// Mismatches counts the cells not as expected; Saturated those not as
	// expected on a saturated harness (report.Cell.Saturated), which are
	// not mismatches.
	Mismatches, Saturated int
	// Notes say what the suite found between cells, e.g. etcd's lock
	// service stuck after a cell (cluster.ErrLockServiceStuck), and the
	// cluster replaced.
	Notes []string
	// Header is suite.json without its cells: host, floor, scenario
	// hashes, expectations, and whether the suite was interrupted.
	Header report.Suite
	// Written is set once suite.json is written: a suite that stopped
	// early says whether its folder records what ran.
	Written bool
}

// Validate checks the whole matrix before anything starts.
func (s Spec) Validate() error {
	if len(s.Locks) == 0 || len(s.Scenarios) == 0 {
		return fmt.Errorf("suite has no cells: give at least one lock and one scenario")
	}
	if s.Seeds < 1 {
		return harness.FieldErr("Seeds", s.Seeds, "must be ≥1")
	}
	if s.FirstSeed < 0 || s.FirstSeed > math.MaxInt64-int64(s.Seeds) {
		return harness.FieldErr("FirstSeed", s.FirstSeed, "must be ≥1, and leave room for the seeds after it")
	}
	if s.Reps < 0 {
		return harness.FieldErr("Reps", s.Reps, "must be ≥1")
	}
	if s.Parallel < 0 {
		return harness.FieldErr("Parallel", s.Parallel, "must be ≥1")
	}
	if sh := s.Shard; sh.sharded() && (sh.Index < 1 || sh.Index > sh.Count) {
		return harness.FieldErr("Shard", fmt.Sprintf("%d/%d", sh.Index, sh.Count), "must be I/N with 1 ≤ I ≤ N")
	}
	for l, d := range s.InjectDelay {
		if !slices.Contains(s.Locks, l) {
			return harness.FieldErr("InjectDelay", l, "names a lock the suite does not run")
		}
		if d <= 0 {
			return harness.FieldErr("InjectDelay", d, "must be > 0")
		}
	}
	for _, l := range s.Locks {
		for _, sc := range s.Scenarios {
			for _, ka := range s.keepAlives() {
				if err := (harness.RunSpec{Lock: l, Scenario: sc, KeepAlive: ka, Out: s.Out}).ValidateInput(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// keepAlivesFor is the policies lock runs under: keepAlives, or only the
// first for a strategy that keeps its own lease (locks.Strategy.OwnLease:
// every policy would run the same code).
func (s Spec) keepAlivesFor(lock string) []etcdlocks.KeepAlive {
	if st, _ := locks.Lookup(lock); st.OwnLease {
		return s.keepAlives()[:1]
	}
	return s.keepAlives()
}

// keepAlives is KeepAlives, or the default policy alone.
func (s Spec) keepAlives() []etcdlocks.KeepAlive {
	if len(s.KeepAlives) == 0 {
		return []etcdlocks.KeepAlive{etcdlocks.DefaultKeepAlive}
	}
	return s.KeepAlives
}

// Run runs every cell (of its shard, Spec.Shard) on one cluster
// per worker (Parallel workers, each cluster restarted only when a cell
// leaves it unhealthy), on each binary of EtcdBins in turn, writes a run
// folder per cell and suite.json with the cells in matrix order, and
// compares each cell's verdicts with its scenario's expectations.
func Run(ctx context.Context, spec Spec) (res *Result, err error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.QuickDuration == 0 {
		spec.QuickDuration = DefaultQuickDuration
	}
	spec = spec.withShardPrefix()
	// Before the suite's folder: a bad binary, or an external cluster that
	// does not answer or lets the user not write, leaves nothing behind.
	bins, err := spec.binaries(ctx)
	if err != nil {
		return nil, err
	}
	if spec.External != nil {
		if err := spec.External.Ready(ctx); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	name := ""
	if spec.Shard.sharded() {
		// Named for the shard, so that a folder says which it holds.
		name = fmt.Sprintf("-shard%dof%d", spec.Shard.Index, spec.Shard.Count)
	}
	dir, err := makeSuiteDir(spec.Out, start, name)
	if err != nil {
		return nil, err
	}
	r := &suiteRun{spec: spec, dir: dir, bins: bins, res: &Result{Dir: dir, Header: spec.header(bins)}, ids: map[string]bool{}}
	r.res.Header.Started = start.UTC().Format(time.RFC3339)
	if spec.Shard.sharded() {
		// A shard may be empty (more shards than keys): it runs nothing.
		r.keys = map[string]bool{}
		for _, k := range spec.shardKeys(bins) {
			r.keys[k] = true
		}
	}
	for _, b := range bins {
		r.total += len(r.jobs(b))
	}
	var runErr, closeErr error
	for i, b := range bins {
		runErr, closeErr = r.runBinary(ctx, b)
		if runErr != nil || ctx.Err() != nil {
			break
		}
		if closeErr != nil && i < len(bins)-1 {
			r.res.Notes = append(r.res.Notes, fmt.Sprintf("close the etcd %s cluster: %v", b.label(), closeErr))
			closeErr = nil
		}
	}
	r.res.Header.WallS = time.Since(start).Seconds()
	if sh := r.res.Header.Shard; sh != nil {
		sh.WallS = r.res.Header.WallS
	}
	err = r.finish(ctx.Err() != nil, runErr)
	if closeErr != nil && err == nil {
		err = fmt.Errorf("close etcd cluster: %w", closeErr)
	}
	return r.res, err
}

// makeSuiteDir creates OUT/suite-<time><suffix>/ under a name no other
// suite has: suites started in the same millisecond (several at once,
// e.g. seeds split by hand) each get a folder of their own, "-2" and on
// after it, instead of writing their cells and suite.json into one.
func makeSuiteDir(out string, t time.Time, suffix string) (string, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("create suite folder: %w", err)
	}
	id := "suite-" + t.UTC().Format("20060102T150405.000Z") + suffix
	for n := 1; ; n++ {
		dir := filepath.Join(out, id)
		if n > 1 {
			dir = fmt.Sprintf("%s-%d", dir, n)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("create suite folder: %w", err)
		}
	}
}

// finish writes suite.json and the matrix report.html for the cells that
// ran, also when the suite stopped early: interrupted by a signal, or
// stopped by runErr (a cell the harness could not run, e.g. a full disk),
// in which case suite.json records the error and the cells not run, so
// the folder says what it holds. It returns runErr (with a note when
// suite.json could not be written either), else the write's error.
func (r *suiteRun) finish(interrupted bool, runErr error) error {
	slices.SortStableFunc(r.res.Cells, cellOrder(r.res.Header.Matrix))
	if interrupted || runErr != nil {
		r.res.markInterrupted(r.spec, r.bins, r.keys)
		r.res.Header.Interrupted = interrupted
	}
	if runErr != nil {
		r.res.Header.Error = runErr.Error()
	}
	werr := writeSuite(r.dir, r.res)
	r.res.Written = werr == nil
	switch {
	case runErr != nil && werr != nil:
		return fmt.Errorf("%w (and the suite's record of the %d cells that ran was not written: %v)", runErr, len(r.res.Cells), werr)
	case runErr != nil:
		return runErr
	}
	return werr
}

// suiteBin is one binary of a suite's version matrix: the cluster options
// that run it and what its cells record.
type suiteBin struct {
	opts cluster.Options
	// etcd is the --etcd-bin value and version its release, both "" for
	// the embedded cluster (report.Summary.Etcd, EtcdVersion).
	etcd, version string
}

// label names the binary in notes: "3.4.23 (/usr/bin/etcd)", "embedded".
func (b suiteBin) label() string {
	if l := (report.Summary{Run: rundir.Run{Etcd: b.etcd, EtcdVersion: b.version}}).EtcdLabel(); l != "" {
		return l
	}
	return cluster.KindEmbedded
}

// binaries resolves the suite's binaries (EtcdBins, else Cluster.EtcdBin,
// else the embedded cluster), asking each its release and refusing
// duplicates (cluster.ResolveBinaries), before anything starts.
func (s Spec) binaries(ctx context.Context) ([]suiteBin, error) {
	names := s.EtcdBins
	if len(names) == 0 && s.Cluster.EtcdBin != "" {
		names = []string{s.Cluster.EtcdBin}
	}
	if len(names) == 0 {
		return []suiteBin{{opts: s.Cluster}}, nil
	}
	resolved, err := cluster.ResolveBinaries(ctx, names)
	if err != nil {
		return nil, err
	}
	out := make([]suiteBin, len(names))
	for i, n := range names {
		opts := s.Cluster
		opts.EtcdBin = n
		out[i] = suiteBin{opts: opts, etcd: n, version: resolved[i].Version.String()}
	}
	return out, nil
}

// suiteRun is a suite under way: its cells so far.
type suiteRun struct {
	spec Spec
	dir  string
	bins []suiteBin
	res  *Result
	// keys are the cell keys of the suite's shard, nil for all.
	keys  map[string]bool
	total int
	// mu guards started, ids and the floor's fields of res while workers
	// run.
	mu      sync.Mutex
	started int
	ids     map[string]bool
}

// suiteJob is one run of the suite: a cell's seed and repetition on a
// binary.
type suiteJob struct {
	bin  suiteBin
	sc   scenarios.Scenario
	lock string
	run  suiteCell
}

// jobs are binary b's runs in the shard, in matrix order: a scenario
// for some backends only (scenarios.Scenario.Backends) has no cell of
// another's strategies.
func (r *suiteRun) jobs(b suiteBin) []suiteJob {
	var out []suiteJob
	for _, sc := range r.spec.Scenarios {
		sc = r.spec.capped(sc)
		for _, lock := range r.spec.Locks {
			if !sc.For(harness.BackendOf(lock)) {
				continue
			}
			for run := range r.spec.cells(lock) {
				key := report.Summary{Run: rundir.Run{Lock: lock, KeepAlive: string(etcdlocks.EffectiveKeepAlive(lock, run.keepAlive)), Etcd: b.etcd, EtcdVersion: b.version}, Scenario: sc.Name}.Key()
				if r.keys == nil || r.keys[key] {
					out = append(out, suiteJob{b, sc, lock, run})
				}
			}
		}
	}
	return out
}

// name is the job as progress and notes say it.
func (r *suiteRun) name(j suiteJob) string {
	return r.cellName(j, true)
}

// cellName is the job's cell, with its seed (and rep) when seeded: a
// note that holds for every seed of a cell leaves them out.
func (r *suiteRun) cellName(j suiteJob, seeded bool) string {
	name := fmt.Sprintf("%s × %s (keepalive %s)", j.lock, j.sc.Name, etcdlocks.EffectiveKeepAlive(j.lock, j.run.keepAlive))
	if seeded {
		name += fmt.Sprintf(" seed %d", j.run.seed)
		if max(r.spec.Reps, 1) > 1 {
			name += fmt.Sprintf(" rep %d", j.run.rep)
		}
	}
	if len(r.bins) > 1 {
		name += " on etcd " + j.bin.label()
	}
	return name
}

// newRunID is a run id no other run of the suite has: two workers may
// start two repetitions of one seed in the same millisecond.
func (r *suiteRun) newRunID(j suiteJob) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		id := harness.NewRunID(j.lock, j.sc.Name, j.run.seed)
		if !r.ids[id] {
			r.ids[id] = true
			return id
		}
		time.Sleep(time.Millisecond)
	}
}

// progress tells Spec.Progress that j starts.
func (r *suiteRun) progress(j suiteJob) {
	if r.spec.Progress == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spec.Progress(r.started, r.total, r.name(j))
	r.started++
}

// cellOutcome is what one job gave: its judged cell (nil when skipped or
// cut short before it ran), notes, or the error that stops the suite.
type cellOutcome struct {
	cell  *report.Cell
	notes []string
	err   error
}

// harness.Refused says why the suite's cluster for binary b, with what sc's
// faults need of it (harness.ClusterFor), cannot run sc's faults, or nil: an
// external cluster takes no member fault. Another backend's lock's cell
// runs on a deployment of its own (runDeployed), which says what it
// refuses.
func (r *suiteRun) refused(b suiteBin, lock string, sc scenarios.Scenario) error {
	if d := harness.DeployerOf(lock); d != nil {
		return harness.DeployerRefuses(d, lock, sc)
	}
	if r.spec.External != nil && sc.Needs().Members {
		return fmt.Errorf("scenario %s injects member faults (crash, partition, the peer faults), which an external cluster cannot take", sc.Name)
	}
	if r.spec.External != nil {
		if err := r.spec.External.RefusesProcess(lock); err != nil {
			return err
		}
	}
	return harness.Refused(harness.ClusterFor(b.opts, sc), sc)
}

// faultClusterNotes say, once per scenario, which of binary b's cells ran
// on a cluster of their own because their faults need more of it
// (harness.ClusterFor): the relays slow every commit, so their figures are not
// the plain cluster's.
func (r *suiteRun) faultClusterNotes(b suiteBin, jobs []suiteJob) []string {
	if r.spec.External != nil {
		return nil
	}
	var notes []string
	for _, sc := range r.spec.Scenarios {
		if !slices.ContainsFunc(jobs, func(j suiteJob) bool { return j.sc.Name == sc.Name }) {
			continue // not in this shard
		}
		opts := harness.ClusterFor(b.opts, sc)
		if harness.SameFaultOptions(opts, b.opts) || harness.Refused(opts, sc) != nil {
			continue
		}
		note := fmt.Sprintf("scenario %s ran on a cluster of its own: %s", sc.Name, harness.FaultOptionsNote(b.opts, opts))
		if sc.Needs().SnapshotCount {
			note += "; a fresh one for each cell (" + freshClusterWhy + ")"
		}
		notes = append(notes, note)
	}
	return notes
}

// suiteCell is one run of a strategy on a scenario.
type suiteCell struct {
	keepAlive etcdlocks.KeepAlive
	seed      int64
	rep       int // 1..Reps: a repetition of the same seed
}

// seeds yields the suite's seeds, in order.
func (s Spec) seeds() func(yield func(int64) bool) {
	first := max(s.FirstSeed, 1)
	return func(yield func(int64) bool) {
		for seed := first; seed < first+int64(s.Seeds); seed++ {
			if !yield(seed) {
				return
			}
		}
	}
}

// cells yields the runs of lock on one scenario: every keepalive policy
// it runs under, for each every seed, and each seed Reps times (samples
// that differ only by the machine's noise).
func (s Spec) cells(lock string) func(yield func(suiteCell) bool) {
	return func(yield func(suiteCell) bool) {
		for _, ka := range s.keepAlivesFor(lock) {
			for seed := range s.seeds() {
				for rep := 1; rep <= max(s.Reps, 1); rep++ {
					if !yield(suiteCell{ka, seed, rep}) {
						return
					}
				}
			}
		}
	}
}

func writeSuite(dir string, res *Result) error {
	s := res.Header
	// [] when no cell ran (an empty shard): "cells": null is no suite.
	s.Cells = []report.Summary{}
	for _, c := range res.Cells {
		sum := c.Summary
		sum.SuiteFloor = s.Floor
		s.Cells = append(s.Cells, sum)
	}
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.SuiteFile), s); err != nil {
		return err
	}
	return rundir.WriteFile(filepath.Join(dir, rundir.HTMLFile), func(w io.Writer) error { return report.WriteSuiteHTML(w, res.Header, res.Cells) })
}
