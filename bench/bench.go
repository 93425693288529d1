// Package bench is lockbench bench: the strategies' cells, run by
// package harness, measured against what no lock can beat on the same
// cluster — the serialized-commit floor and the ideal handoff — with the
// cost of recording, the lock-name ceiling and the open-loop rate sweep;
// its figures go to bench.json. It is apart from harness because a
// benchmark is a study of cells, not a way of running one.
package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/scenarios"
)

// Benchmark defaults; they double as the CLI's flag defaults.
const (
	// BenchScenario is the workload of every cell: clients loop acquire →
	// release (hold 0) on one lock.
	BenchScenario        = "contention"
	DefaultBenchDuration = 5 * time.Second
	DefaultFloorDuration = 3 * time.Second
	// DefaultRecordRuns is the number of recording on/off pairs of slices,
	// each slice DefaultRecordDuration long, all in one run of the target
	// cell: many short adjacent slices follow a shared machine's drift
	// better than a few long ones, and one run has no run-to-run spread.
	// Twice as many pairs did not narrow the cost's spread over repeated
	// runs (docs/measurements.md): the noise is the disk's slow drift, so
	// the target is judged with the cost's standard error instead.
	DefaultRecordRuns     = 10
	DefaultRecordDuration = 400 * time.Millisecond
	// DefaultTargetLock and DefaultTargetClients name the cell held to the
	// targets, and measured with recording on and off.
	DefaultTargetLock    = "queue"
	DefaultTargetClients = 8
	// MutexLock is the lock the ×mutex column divides by.
	MutexLock = "mutex"
)

// DefaultBenchClients are the client counts of a benchmark.
var DefaultBenchClients = []int{2, 8, 64}

// Targets: what a good lock reaches at the target cell, relative to etcd's
// own Mutex and to the ideal handoff (harness.MeasureIdeal), the cheapest handoff
// etcd allows; and what recording may cost.
const (
	TargetXMutex           = 5.0  // throughput ≥ 5 × mutex at the same clients
	TargetXIdeal           = 0.85 // throughput ≥ 0.85 × the ideal chain's rate
	TargetHandoffXIdeal    = 1.25 // handoff p50 ≤ 1.25 × the ideal step p50
	TargetRecordingCostPct = 3.0  // recording costs < 3 % of throughput
	// The gap to the ideal, split by the paired rounds' bare loop: the
	// lock's own Lock/Unlock loop ≥ 0.85 × the ideal, and the runner ≥
	// 0.97 × that loop, each judged on a median over at least
	// MinBareRounds rounds.
	TargetBareXIdeal  = 0.85
	TargetRunnerXBare = 0.97
	MinBareRounds     = 20
)

// floorKeyName is the key the floor is measured on, under the benchmark's
// prefix.
const floorKeyName = "floor"

// BenchSpec is a benchmark as the user asked for it.
type BenchSpec struct {
	Locks   []string
	Clients []int
	// Duration is each cell's run time; Hold each grant's hold (0).
	Duration time.Duration
	Hold     time.Duration
	// Ramp, when > 0, has each cell's clients join over it instead of at
	// once: client i's first acquire waits i × Ramp ÷ clients (the
	// scenario's stagger), as a fleet starts over minutes, not in one
	// instant that makes etcd refuse as too many requests.
	Ramp time.Duration
	// LeaseTTL is the clients' lease TTL (0: the scenario's, 5 s). With
	// thousands of clients it sizes the keepalive traffic: each lease is
	// refreshed every TTL/3 (auto) or TTL/4 (safe).
	LeaseTTL time.Duration
	// FloorDuration is how long the commit floor is measured.
	FloorDuration time.Duration
	// CellFloor, when > 0, measures a floor this long just before each
	// cell, and that cell's ×floor and handoff ÷ commit use it: on a
	// shared machine the floor drifts over minutes.
	CellFloor time.Duration
	// TargetLock at TargetClients is held to the targets and measured in
	// one run with recording on and off in RecordRuns pairs of slices (0:
	// not measured); the ideal handoff runs with TargetClients clients.
	TargetLock    string
	TargetClients int
	RecordRuns    int
	// RecordDuration is each recording slice's time (0: Duration).
	RecordDuration time.Duration
	// PairedRounds rounds of one ideal-handoff slice and one target-cell
	// slice, each PairedSlice long, measure the target cell against the
	// ideal with the machine's drift shared by both (0: not measured); the
	// target cell's ideal targets are then judged on them (benchpaired.go).
	PairedRounds int
	PairedSlice  time.Duration
	// LocksPerRun, when set, also runs every lock at every client count
	// over each of these many lock names, against the parallel write
	// ceiling measured with as many writers (benchnames.go).
	LocksPerRun []int
	Seed        int64
	KeepAlive   etcdlocks.KeepAlive
	// RPCTimeout and SharedConns are harness.RunSpec's, for every cell.
	RPCTimeout  time.Duration
	SharedConns int
	Cluster     cluster.Options
	// Dir is the benchmark's folder: bench.json and the cells' run folders.
	Dir string
	// Progress, when set, hears what is running.
	Progress func(status string)
	// Notice is harness.RunSpec.Notice, for every cell: a cell whose clients would
	// not fit the open-file limit on their own connections runs on shared
	// ones, and that changes its figures.
	Notice func(msg string)
	// Open, when set, makes the bench open-loop (benchrate.go): each lock
	// at an offered rate, or swept to its saturation rate, with a pool of
	// Clients[0] clients, instead of the closed-loop cells.
	Open *OpenSpec
}

// Validate checks everything before a cluster starts, so that bad input
// costs no minutes. A bad field is a *harness.FieldError naming it.
func (s BenchSpec) Validate() error {
	if len(s.Locks) == 0 {
		return errors.New("no lock strategies given")
	}
	if len(s.Clients) == 0 {
		return errors.New("no client counts given")
	}
	for _, n := range s.Clients {
		if n < 1 {
			return harness.FieldErr("Clients", n, "must be ≥1")
		}
	}
	switch {
	case s.Duration <= 0:
		return harness.FieldErr("Duration", s.Duration, "must be > 0")
	case s.Hold < 0:
		return harness.FieldErr("Hold", s.Hold, "must be ≥0")
	case s.Ramp < 0 || s.Ramp >= s.Duration:
		return harness.FieldErr("Ramp", s.Ramp, fmt.Sprintf("must be ≥0 and shorter than the duration (%s)", s.Duration))
	case s.LeaseTTL != 0 && (s.LeaseTTL < time.Second || s.LeaseTTL%time.Second != 0):
		return harness.FieldErr("LeaseTTL", s.LeaseTTL, "must be a whole number of seconds ≥1s (0: 5s)")
	case s.FloorDuration <= 0:
		return harness.FieldErr("FloorDuration", s.FloorDuration, "must be > 0")
	case s.CellFloor < 0:
		return harness.FieldErr("CellFloor", s.CellFloor, "must be ≥0")
	case s.RecordRuns < 0:
		return harness.FieldErr("RecordRuns", s.RecordRuns, "must be ≥0")
	case s.RecordDuration < 0:
		return harness.FieldErr("RecordDuration", s.RecordDuration, "must be ≥0")
	case s.PairedRounds < 0:
		return harness.FieldErr("PairedRounds", s.PairedRounds, "must be ≥0")
	case s.PairedSlice < 0 || s.PairedRounds > 0 && s.PairedSlice == 0:
		return harness.FieldErr("PairedSlice", s.PairedSlice, "must be > 0")
	case s.TargetClients < 1:
		return harness.FieldErr("TargetClients", s.TargetClients, "must be ≥1")
	case s.Dir == "":
		return errors.New("output folder is empty")
	}
	if _, err := locks.Lookup(s.TargetLock); err != nil {
		return &harness.FieldError{Field: "TargetLock", Err: err}
	}
	if err := s.validateLocksPerRun(); err != nil {
		return err
	}
	if s.Open != nil {
		if err := s.Open.validate(s); err != nil {
			return err
		}
	}
	for _, l := range s.Locks {
		for _, n := range s.Clients {
			if err := (harness.RunSpec{Lock: l, Scenario: s.scenario(n), KeepAlive: s.KeepAlive, SharedConns: s.SharedConns, Out: s.Dir}).Validate(); err != nil {
				return err
			}
		}
	}
	return nil
}

// idealClients is the ideal chain's client count: the target cell's, but
// a chain needs two.
func (s BenchSpec) idealClients() int { return max(s.TargetClients, 2) }

func (s BenchSpec) recordDuration() time.Duration {
	if s.RecordDuration > 0 {
		return s.RecordDuration
	}
	return s.Duration
}

// scenario is the contention scenario with the benchmark's clients,
// duration and hold.
func (s BenchSpec) scenario(clients int) scenarios.Scenario {
	sc, err := scenarios.Lookup(BenchScenario)
	if err != nil {
		panic(err) // built in
	}
	sc.Clients = clients
	sc.Duration = scenarios.Duration(s.Duration)
	sc.Workload.Hold = scenarios.Duration(s.Hold)
	sc.Workload.Think = 0
	if s.Ramp > 0 {
		sc.Workload.Stagger = scenarios.Duration(s.Ramp / time.Duration(clients))
	}
	if s.LeaseTTL > 0 {
		sc.LeaseTTL = scenarios.Duration(s.LeaseTTL)
	}
	return sc
}

// NewBenchDir names a benchmark's folder under parent by time.
func NewBenchDir(parent string) string {
	return filepath.Join(parent, "bench-"+time.Now().UTC().Format("20060102T150405.000Z"))
}

// RunBench measures the commit floor, the ideal handoff and the relays'
// cost, then every lock at every client count, then the target cell
// paired with the ideal, then the target cell with recording on and off,
// on one embedded cluster, and writes bench.json into spec.Dir. When ctx
// ends early, what ran is still written, marked interrupted. Cells that
// fail are recorded with their error and the benchmark carries on; the
// returned error then names the first.
func RunBench(ctx context.Context, spec BenchSpec) (b *report.Bench, err error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create bench folder: %w", err)
	}
	if spec.Open != nil {
		return runOpenBench(ctx, spec)
	}
	r := newBenchRun(ctx, spec)
	defer func() { err = r.finish(err) }()
	if err := r.floors(); err != nil {
		return r.b, err
	}
	if err := r.cells(); err != nil || ctx.Err() != nil {
		return r.b, err
	}
	if err := r.namesCells(); err != nil || ctx.Err() != nil {
		return r.b, err
	}
	if err := r.paired(); err != nil {
		return r.b, err
	}
	if err := r.recording(); err != nil {
		return r.b, err
	}
	if err := r.floorAtEnd(); err != nil {
		return r.b, err
	}
	r.deleteKeys()
	return r.b, r.firstErr
}

// benchRun is one RunBench under way: what it measured so far and the
// cluster it measures on, replaced when a cell leaves it unhealthy.
type benchRun struct {
	ctx   context.Context
	spec  BenchSpec
	b     *report.Bench
	start time.Time
	// ns is the benchmark's key prefix (floors, recording runs).
	ns    string
	c     cluster.Members
	admin *clientv3.Client
	// firstErr is the first failure of a cell; the benchmark carries on.
	firstErr error
}

func newBenchRun(ctx context.Context, spec BenchSpec) *benchRun {
	start := time.Now()
	b := &report.Bench{Schema: rundir.SchemaVersion, Lockbench: rundir.ThisBuild(), Host: rundir.ThisHost(),
		ID: filepath.Base(spec.Dir), Started: start.UTC(), GoVersion: runtime.Version(),
		Scenario: BenchScenario, DurationS: spec.Duration.Seconds(), HoldMS: ms(spec.Hold), Seed: spec.Seed,
		CellFloorS: spec.CellFloor.Seconds(), TargetLock: spec.TargetLock, TargetClients: spec.TargetClients,
	}
	return &benchRun{ctx: ctx, spec: spec, b: b, start: start, ns: "/lockbench/" + b.ID + "/"}
}

// finish computes the figures, writes bench.json and closes the cluster,
// in that order: a close that hangs must not take the results along. It
// returns err, or the first error of its own.
func (r *benchRun) finish(err error) error {
	if r.admin != nil {
		r.admin.Close()
	}
	r.b.ElapsedS = time.Since(r.start).Seconds()
	r.b.Interrupted = r.ctx.Err() != nil
	finishBench(r.b)
	if werr := rundir.WriteJSON(filepath.Join(r.spec.Dir, rundir.BenchFile), r.b); werr != nil && err == nil {
		err = werr
	}
	if cerr := harness.CloseCluster(r.c, harness.ClusterCloseWait); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// progress tells spec.Progress what is running, with the time so far.
func (r *benchRun) progress(format string, args ...any) {
	if r.spec.Progress != nil {
		r.spec.Progress(fmt.Sprintf(format, args...) + fmt.Sprintf(" — %s elapsed", time.Since(r.start).Round(time.Second)))
	}
}

// failed keeps the first failure, which RunBench returns at the end.
func (r *benchRun) failed(err error) {
	if r.firstErr == nil {
		r.firstErr = err
	}
}

// ensure (re)starts the cluster when there is none or a cell left it
// unhealthy, with the benchmark's own client.
func (r *benchRun) ensure() error {
	if r.c != nil && r.c.Healthy() {
		return nil
	}
	if err := r.dropCluster(); err != nil {
		return err
	}
	c, err := cluster.Open(r.ctx, r.spec.Cluster)
	if err != nil {
		return fmt.Errorf("start etcd cluster: %w", err)
	}
	r.c = c
	if r.admin, err = harness.NewAdmin(c); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	r.b.Cluster = harness.ClusterConfig(c)
	return nil
}

// dropCluster closes the client and the cluster, if any, so that ensure
// starts afresh. A close that fails or hangs is returned.
func (r *benchRun) dropCluster() error {
	if r.admin != nil {
		r.admin.Close()
		r.admin = nil
	}
	err := harness.CloseCluster(r.c, harness.ClusterCloseWait)
	r.c = nil
	return err
}

// floors measures the commit floor with one writer, then two.
func (r *benchRun) floors() error {
	if err := r.ensure(); err != nil {
		return err
	}
	var err error
	r.progress("floor: serialized Puts for %s", r.spec.FloorDuration)
	if r.b.Floor, err = harness.MeasureFloor(r.ctx, r.admin, r.ns+floorKeyName, r.spec.FloorDuration, 1); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	r.progress("floor: two writers for %s", r.spec.FloorDuration)
	if r.b.TwoWriters, err = harness.MeasureFloor(r.ctx, r.admin, r.ns+floorKeyName, r.spec.FloorDuration, 2); err != nil {
		return fmt.Errorf("floor with two writers: %w", err)
	}
	return r.references()
}

// references measures the ideal handoff chain on the cells' data path and
// what the relays cost per RPC.
func (r *benchRun) references() error {
	r.progress("ideal handoff: %d clients for %s", r.spec.idealClients(), r.spec.FloorDuration)
	var err error
	if r.b.Ideal, err = r.measureIdeal(r.ns+"ideal/", r.spec.FloorDuration); err != nil {
		return fmt.Errorf("ideal handoff: %w", err)
	}
	// Only the embedded cluster has front doors to measure; member
	// processes are reached directly.
	emb, ok := r.c.(*cluster.Cluster)
	if !ok {
		return nil
	}
	r.progress("relay cost: direct, front door, proxy for %s", r.spec.FloorDuration)
	if r.b.Relay, err = MeasureRelay(r.ctx, emb, r.ns+"relay", r.spec.FloorDuration); err != nil {
		return fmt.Errorf("relay cost: %w", err)
	}
	r.b.RelayCostUS = r.b.Relay.FrontDoorUS
	return nil
}

// measureIdeal runs the ideal handoff chain for d under prefix, with
// spec.idealClients() clients on the cells' data path.
func (r *benchRun) measureIdeal(prefix string, d time.Duration) (*report.Ideal, error) {
	base, err := harness.DirectConfig(r.c)
	if err != nil {
		return nil, err
	}
	return harness.MeasureIdeal(r.ctx, base, prefix, r.spec.idealClients(), d)
}

// cells runs every lock at every client count. A cell cut short by ctx is
// left out.
func (r *benchRun) cells() error {
	total, done := len(r.spec.Locks)*len(r.spec.Clients), 0
	for _, n := range r.spec.Clients {
		for _, lock := range r.spec.Locks {
			if r.ctx.Err() != nil {
				return nil
			}
			done++
			r.progress("cell %d/%d: %s × %d clients", done, total, lock, n)
			if err := r.ensure(); err != nil {
				return err
			}
			cell := r.cell(lock, n)
			if r.ctx.Err() != nil {
				return nil
			}
			r.b.Cells = append(r.b.Cells, cell)
		}
	}
	return nil
}

// cell runs lock at n clients (after its own floor, if asked); a failure
// is the cell's Error, and the benchmark's first error.
func (r *benchRun) cell(lock string, n int) report.BenchCell {
	return r.cellOn(lock, n, r.spec.scenario(n))
}

// cellOn is cell with the scenario sc.
func (r *benchRun) cellOn(lock string, n int, sc scenarios.Scenario) report.BenchCell {
	cell := report.BenchCell{Lock: lock, Clients: n}
	if r.spec.CellFloor > 0 {
		f, err := harness.MeasureFloor(r.ctx, r.admin, r.ns+floorKeyName, r.spec.CellFloor, 1)
		if err != nil {
			cell.Error = fmt.Sprintf("floor before the cell: %v", err)
			r.failed(fmt.Errorf("%s × %d clients: %s", lock, n, cell.Error))
			return cell
		}
		cell.Floor = f
	}
	resetPeakRSS()
	spec := harness.RunSpec{Lock: lock, Scenario: sc, Seed: r.spec.Seed, KeepAlive: r.spec.KeepAlive,
		RPCTimeout: r.spec.RPCTimeout, SharedConns: r.spec.SharedConns, Cluster: r.spec.Cluster, Out: r.spec.Dir, Notice: r.spec.Notice}
	var res *harness.Result
	var err error
	if harness.DeployerOf(lock) != nil {
		// Another backend's lock: on a deployment started for the cell
		// (its start is not measured); the floors are etcd's.
		res, err = harness.Run(r.ctx, spec)
	} else {
		res, err = harness.RunOn(r.ctx, r.c, spec)
	}
	cell.PeakRSSMB = peakRSSMB()
	if err != nil {
		cell.Error = err.Error()
		r.failed(fmt.Errorf("%s × %d clients: %w", lock, n, err))
	} else {
		fillCell(&cell, res.Summary)
		cell.Run, _ = filepath.Rel(r.spec.Dir, res.Dir)
	}
	if note := r.lockServiceNote(lock, "after the cell"); note != "" {
		cell.Note = note
		r.progress("%s × %d clients: %s", lock, n, cell.Note)
	}
	return cell
}

// lockServiceNote probes etcd's lock service after a run of lock (see
// harness.CheckLockService) and, where it is stuck, replaces the bench's cluster;
// it returns what to note of the run, after saying when ("" when sound).
func (r *benchRun) lockServiceNote(lock, when string) string {
	found, replace := harness.CheckLockService(r.ctx, r.c, lock)
	if found == "" {
		return ""
	}
	note := when + ": " + found
	if replace {
		// Such a member cannot stop: close what can be, and start afresh
		// for the next run.
		note += "; the cluster is replaced"
		if err := r.dropCluster(); err != nil {
			note += fmt.Sprintf(" (%v)", err)
		}
	}
	return note
}

// recording runs the target cell once with recording switched on and off
// in 2 × RecordRuns alternating slices of RecordDuration each: within one
// run the cluster, the connections and the machine's load are the same
// for both settings, which separate short runs never were.
func (r *benchRun) recording() error {
	spec := r.spec
	if spec.RecordRuns == 0 || r.ctx.Err() != nil {
		return nil
	}
	if err := r.ensure(); err != nil {
		return err
	}
	n, slice := 2*spec.RecordRuns, spec.recordDuration()
	rec := &report.Recording{Lock: spec.TargetLock, Clients: spec.TargetClients, Target: TargetRecordingCostPct,
		DurationS: round3((time.Duration(n) * slice).Seconds()), Slices: n, SliceS: slice.Seconds(),
		Method: "one run, recording switched on and off in alternating slices (on off off on ...); grants counted by the clients ÷ each slice's clock time"}
	r.b.Recording = rec
	r.progress("recording: %s × %d clients, %d slices of %s on/off in one run", spec.TargetLock, spec.TargetClients, n, slice)
	runs, perAcq, err := recordSlices(r.ctx, r.c, spec, r.ns+"recording/", n, slice)
	rec.Runs, rec.EventsPerAcq = runs, perAcq
	if err != nil && r.ctx.Err() == nil {
		r.failed(err)
	}
	rec.AppendNS = round1(MeasureAppendNS(200_000))
	return nil
}

// floorAtEnd measures the floor again, to show drift.
func (r *benchRun) floorAtEnd() error {
	if r.ctx.Err() != nil {
		return nil
	}
	if err := r.ensure(); err != nil {
		return err
	}
	r.progress("floor again")
	var err error
	if r.b.FloorEnd, err = harness.MeasureFloor(r.ctx, r.admin, r.ns+floorKeyName, r.spec.FloorDuration, 1); err != nil && r.ctx.Err() == nil {
		r.failed(fmt.Errorf("floor at the end: %w", err))
	}
	return nil
}

// deleteKeys removes the benchmark's own keys (the cells delete theirs).
func (r *benchRun) deleteKeys() {
	if r.admin == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	r.admin.Delete(ctx, r.ns, clientv3.WithPrefix())
}
