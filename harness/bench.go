package harness

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockbench/lockbench/cluster"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/scenario"
	"github.com/lockbench/lockbench/verdict"
)

// BenchFile is the benchmark's result, in its folder beside one run folder
// per cell.
const BenchFile = "bench.json"

// Benchmark defaults; they double as the CLI's flag defaults.
const (
	// BenchScenario is the workload of every cell: clients loop acquire →
	// release (hold 0) on one lock.
	BenchScenario        = "contention"
	DefaultBenchDuration = 5 * time.Second
	DefaultFloorDuration = 3 * time.Second
	// DefaultRecordRuns is the number of recording on/off pairs, each run
	// DefaultRecordDuration long: many short adjacent pairs follow a
	// shared machine's drift better than a few long ones.
	DefaultRecordRuns     = 5
	DefaultRecordDuration = 2 * time.Second
	// DefaultTargetLock and DefaultTargetClients name the cell held to the
	// targets, and measured with recording on and off.
	DefaultTargetLock    = "queue"
	DefaultTargetClients = 8
	// MutexLock is the lock the ×mutex column divides by.
	MutexLock = "mutex"
)

// DefaultBenchClients are the client counts of a benchmark.
var DefaultBenchClients = []int{2, 8, 64}

// Targets (issue 7): what a good lock reaches at the target cell, relative
// to the commit floor and to etcd's own Mutex.
const (
	TargetXFloor          = 0.5  // throughput ≥ 0.5 × serialized commits/s
	TargetHandoffOverP50  = 3.0  // handoff p50 ≤ 3 × commit p50
	TargetXMutex          = 5.0  // throughput ≥ 5 × mutex at the same clients
	TargetRecordingOnOff  = 0.95 // recording costs < 5 % of throughput
	floorKeyName          = "floor"
	rssResetUnsupportedMB = 0
)

// BenchSpec is a benchmark as the user asked for it.
type BenchSpec struct {
	Locks   []string
	Clients []int
	// Duration is each cell's run time; Hold each grant's hold (0).
	Duration time.Duration
	Hold     time.Duration
	// FloorDuration is how long the commit floor is measured.
	FloorDuration time.Duration
	// CellFloor, when > 0, measures a floor this long just before each
	// cell, and that cell's ×floor and handoff ÷ commit use it: on a
	// shared machine the floor drifts over minutes.
	CellFloor time.Duration
	// TargetLock at TargetClients is held to the targets and measured
	// RecordRuns times with recording on and off (0: not measured).
	TargetLock    string
	TargetClients int
	RecordRuns    int
	// RecordDuration is each recording run's time (0: Duration).
	RecordDuration time.Duration
	Seed           int64
	KeepAlive      locks.KeepAlive
	// RPCTimeout and SharedConns are RunSpec's, for every cell.
	RPCTimeout  time.Duration
	SharedConns int
	Cluster     cluster.Options
	// Dir is the benchmark's folder: bench.json and the cells' run folders.
	Dir string
	// Progress, when set, hears what is running.
	Progress func(status string)
}

// Validate checks everything before a cluster starts.
func (s BenchSpec) Validate() error {
	if len(s.Locks) == 0 {
		return errors.New("no lock strategies given")
	}
	if len(s.Clients) == 0 {
		return errors.New("no client counts given")
	}
	for _, n := range s.Clients {
		if n < 1 {
			return fmt.Errorf("--clients %d: must be ≥1", n)
		}
	}
	switch {
	case s.Duration <= 0:
		return fmt.Errorf("--duration %s: must be > 0", s.Duration)
	case s.Hold < 0:
		return fmt.Errorf("--hold %s: must be ≥0", s.Hold)
	case s.FloorDuration <= 0:
		return fmt.Errorf("--floor-duration %s: must be > 0", s.FloorDuration)
	case s.CellFloor < 0:
		return fmt.Errorf("--cell-floor %s: must be ≥0", s.CellFloor)
	case s.RecordRuns < 0:
		return fmt.Errorf("--record-runs %d: must be ≥0", s.RecordRuns)
	case s.RecordDuration < 0:
		return fmt.Errorf("--record-duration %s: must be ≥0", s.RecordDuration)
	case s.TargetClients < 1:
		return fmt.Errorf("--target-clients %d: must be ≥1", s.TargetClients)
	case s.Dir == "":
		return errors.New("output folder is empty")
	}
	if _, err := locks.Lookup(s.TargetLock); err != nil {
		return fmt.Errorf("--target-lock: %w", err)
	}
	for _, l := range s.Locks {
		for _, n := range s.Clients {
			if err := (RunSpec{Lock: l, Scenario: s.scenario(n), KeepAlive: s.KeepAlive, SharedConns: s.SharedConns, Out: s.Dir}).Validate(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s BenchSpec) recordDuration() time.Duration {
	if s.RecordDuration > 0 {
		return s.RecordDuration
	}
	return s.Duration
}

// scenario is the contention scenario with the benchmark's clients,
// duration and hold.
func (s BenchSpec) scenario(clients int) scenario.Scenario {
	sc, err := scenario.Lookup(BenchScenario)
	if err != nil {
		panic(err) // built in
	}
	sc.Clients = clients
	sc.Duration = scenario.Duration(s.Duration)
	sc.Workload.Hold = scenario.Duration(s.Hold)
	sc.Workload.Think = 0
	return sc
}

// Bench is bench.json.
type Bench struct {
	ID        string        `json:"bench_id"`
	Started   time.Time     `json:"started"`
	ElapsedS  float64       `json:"elapsed_s"`
	GoVersion string        `json:"go_version"`
	Host      HostInfo      `json:"host"`
	Cluster   ClusterConfig `json:"cluster"`
	Scenario  string        `json:"scenario"`
	DurationS float64       `json:"duration_s"`
	HoldMS    float64       `json:"hold_ms"`
	Seed      int64         `json:"seed"`
	// TargetLock at TargetClients is the cell held to the targets.
	TargetLock    string `json:"target_lock"`
	TargetClients int    `json:"target_clients"`
	// CellFloorS is the length of the floor measured before each cell (0:
	// none; ratios use Floor).
	CellFloorS float64 `json:"cell_floor_s,omitempty"`
	// Floor is the commit floor measured first; FloorEnd the same at the
	// end, to show drift on a shared machine.
	Floor    *Floor `json:"floor"`
	FloorEnd *Floor `json:"floor_end,omitempty"`
	// TwoWriters is the floor with two writers, measured after Floor: a
	// lock writes twice per acquisition (join, release), and under
	// contention a release is committed while another client's join is in
	// flight; a handoff chain cannot go faster than its per-writer rate.
	TwoWriters *Floor      `json:"floor_two_writers,omitempty"`
	Cells      []BenchCell `json:"cells"`
	Recording  *Recording  `json:"recording,omitempty"`
	Targets    []Target    `json:"targets"`
	// Interrupted is set when a signal ended the benchmark early.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Floor is Puts in a loop (MeasureFloor): with one writer, serialized
// commits.
type Floor struct {
	Writers     int     `json:"writers"`
	Commits     int     `json:"commits"`
	Errors      int     `json:"errors"`
	DurationS   float64 `json:"duration_s"`
	CommitsPerS float64 `json:"commits_per_s"`
	// PerWriterPerS is CommitsPerS ÷ Writers: one writer's rate.
	PerWriterPerS float64        `json:"per_writer_commits_per_s"`
	LatencyMS     report.Latency `json:"latency_ms"`
}

// BenchCell is one strategy at one client count.
type BenchCell struct {
	Lock           string  `json:"lock"`
	Clients        int     `json:"clients"`
	Acquisitions   int     `json:"acquisitions"`
	ThroughputPerS float64 `json:"throughput_per_s"`
	// XFloor is throughput ÷ the floor's commits/s; XMutex ÷ mutex's
	// throughput at the same client count (0: no mutex cell).
	XFloor float64 `json:"x_floor"`
	XMutex float64 `json:"x_mutex,omitempty"`
	// XTwoWriters is throughput ÷ Bench.TwoWriters' per-writer rate.
	XTwoWriters float64 `json:"x_two_writers,omitempty"`
	// HandoffMS is release invoke → next grant; AcquireMS invoke → grant.
	HandoffMS report.Latency `json:"handoff_ms"`
	AcquireMS report.Latency `json:"acquire_ms"`
	// HandoffOverCommit is handoff p50 ÷ the floor's commit p50.
	HandoffOverCommit float64 `json:"handoff_p50_over_commit_p50"`
	WakeupsPerHandoff float64 `json:"wakeups_per_handoff,omitempty"`
	Violations        int     `json:"violations"`
	Verdict           string  `json:"verdict"`
	// Floor is the floor measured just before the cell (--cell-floor);
	// when present the cell's ratios use it instead of Bench.Floor.
	Floor *Floor `json:"floor,omitempty"`
	// PeakRSSMB is the process's peak resident set (VmHWM, etcd members
	// included) during the cell, where the OS lets it be reset.
	PeakRSSMB float64 `json:"peak_rss_mb,omitempty"`
	// Run is the cell's run folder, relative to the bench folder.
	Run     string `json:"run,omitempty"`
	Stopped string `json:"stopped,omitempty"`
	// Note is what the cell left behind, e.g. etcd's lock service stuck.
	Note string `json:"note,omitempty"`
	// Error is why the cell has no figures.
	Error string `json:"error,omitempty"`

	summary report.Summary
}

// Recording is the target cell's throughput with the history kept and
// without. Both are counted the same way, by the clients' grant counter
// (runner.Outcome.Acquisitions) over the run's clock, so the run
// without a history needs none. Runs alternate on off, off on, ...
type Recording struct {
	Lock      string         `json:"lock"`
	Clients   int            `json:"clients"`
	DurationS float64        `json:"duration_s"`
	Method    string         `json:"method"`
	Runs      []RecordingRun `json:"runs"`
	OnPerS    float64        `json:"on_per_s"`
	OffPerS   float64        `json:"off_per_s"`
	// PairRatios are on ÷ off of each adjacent pair of runs; Ratio is
	// their median (robust to a load spike on a shared machine), and
	// RatioOfMeans is OnPerS ÷ OffPerS.
	PairRatios   []float64 `json:"pair_ratios"`
	Ratio        float64   `json:"ratio"`
	RatioOfMeans float64   `json:"ratio_of_means"`
	// CPUPerAcqUS is the process's CPU time (clients and etcd members)
	// per acquisition, median over runs: less noisy than throughput on a
	// loaded machine. CPURatio is off ÷ on (≥ 0.95: recording costs under
	// 5 % of the CPU). Zero where /proc/self/stat is missing.
	CPUPerAcqUSOn  float64 `json:"cpu_per_acq_us_on,omitempty"`
	CPUPerAcqUSOff float64 `json:"cpu_per_acq_us_off,omitempty"`
	CPURatio       float64 `json:"cpu_ratio,omitempty"`
	// AppendNS is one history append measured in this process (one
	// goroutine, a realistic event); EventsPerAcq the events a run with
	// recording on kept per acquisition. EstimatedCost is their product
	// times OffPerS: the share of each second the appends would take if
	// every one were on the handoff chain (an upper bound, free of the
	// machine's noise that the measured ratio suffers).
	AppendNS      float64 `json:"append_ns,omitempty"`
	EventsPerAcq  float64 `json:"events_per_acquisition,omitempty"`
	EstimatedCost float64 `json:"estimated_cost,omitempty"`
	Target        float64 `json:"target"`
}

// RecordingRun is one run of the recording comparison.
type RecordingRun struct {
	Record bool `json:"record"`
	// CountedPerS is Acquisitions per second of the run's clock.
	CountedPerS float64 `json:"counted_per_s"`
	// CPUPerAcqUS is process CPU time per acquisition, over the whole run
	// (connecting and closing the clients included).
	CPUPerAcqUS  float64 `json:"cpu_per_acq_us,omitempty"`
	Acquisitions int64   `json:"acquisitions"`
	Events       int     `json:"events"`
	ElapsedS     float64 `json:"elapsed_s"`
	Error        string  `json:"error,omitempty"`
}

// Target is one goal and whether the benchmark met it.
type Target struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Op     string  `json:"op"` // ">=" or "<="
	Target float64 `json:"target"`
	Met    bool    `json:"met"`
}

// NewBenchDir names a benchmark's folder under parent by time.
func NewBenchDir(parent string) string {
	return filepath.Join(parent, "bench-"+time.Now().UTC().Format("20060102T150405.000Z"))
}

// RunBench measures the commit floor, then every lock at every client
// count, then the target cell with recording on and off, on one embedded
// cluster, and writes bench.json into spec.Dir. When ctx ends early, what
// ran is still written, marked interrupted. Cells that fail are recorded
// with their error and the benchmark carries on; the returned error then
// names the first.
func RunBench(ctx context.Context, spec BenchSpec) (b *Bench, err error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create bench folder: %w", err)
	}
	start := time.Now()
	b = &Bench{
		ID: filepath.Base(spec.Dir), Started: start.UTC(), GoVersion: runtime.Version(),
		Host:     HostInfo{CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH},
		Scenario: BenchScenario, DurationS: spec.Duration.Seconds(), HoldMS: ms(spec.Hold), Seed: spec.Seed,
		CellFloorS: spec.CellFloor.Seconds(), TargetLock: spec.TargetLock, TargetClients: spec.TargetClients,
	}
	progress := func(format string, args ...any) {
		if spec.Progress != nil {
			spec.Progress(fmt.Sprintf(format, args...) + fmt.Sprintf(" — %s elapsed", time.Since(start).Round(time.Second)))
		}
	}
	var c *cluster.Cluster
	var admin *clientv3.Client
	defer func() {
		if admin != nil {
			admin.Close()
		}
		// The results are written before the cluster is closed: a close
		// that hangs must not take them along.
		b.ElapsedS = time.Since(start).Seconds()
		b.Interrupted = ctx.Err() != nil
		b.finish(spec)
		if werr := report.WriteJSON(filepath.Join(spec.Dir, BenchFile), b); werr != nil && err == nil {
			err = werr
		}
		if cerr := closeCluster(c, clusterCloseWait); cerr != nil && err == nil {
			err = cerr
		}
	}()
	// ensure (re)starts the cluster when a cell left it unhealthy.
	ensure := func() error {
		if c != nil && c.Healthy() {
			return nil
		}
		if admin != nil {
			admin.Close()
			admin = nil
		}
		err := closeCluster(c, clusterCloseWait)
		c = nil
		if err != nil {
			return err
		}
		if c, err = cluster.Start(ctx, spec.Cluster); err != nil {
			return fmt.Errorf("start etcd cluster: %w", err)
		}
		if admin, err = newAdmin(c); err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		b.Cluster = ClusterConfig{
			Members: len(c.Members()), TickMS: c.Tick().Milliseconds(), ElectionMS: c.Election().Milliseconds(),
			UnsafeNoFsync: c.UnsafeNoFsync(), Endpoints: c.Endpoints(), TLS: c.TLS(),
		}
		return nil
	}
	ns := "/lockbench/" + b.ID + "/"

	// 1. The floor: one client, one key, Put after Put.
	if err := ensure(); err != nil {
		return b, err
	}
	progress("floor: serialized Puts for %s", spec.FloorDuration)
	if b.Floor, err = MeasureFloor(ctx, admin, ns+floorKeyName, spec.FloorDuration, 1); err != nil {
		return b, fmt.Errorf("floor: %w", err)
	}
	progress("floor: two writers for %s", spec.FloorDuration)
	if b.TwoWriters, err = MeasureFloor(ctx, admin, ns+floorKeyName, spec.FloorDuration, 2); err != nil {
		return b, fmt.Errorf("floor with two writers: %w", err)
	}

	// 2. Every lock at every client count.
	var firstErr error
	total, done := len(spec.Locks)*len(spec.Clients), 0
	for _, n := range spec.Clients {
		for _, lock := range spec.Locks {
			if ctx.Err() != nil {
				return b, nil
			}
			progress("cell %d/%d: %s × %d clients", done+1, total, lock, n)
			done++
			if err := ensure(); err != nil {
				return b, err
			}
			cell := BenchCell{Lock: lock, Clients: n}
			if spec.CellFloor > 0 {
				f, err := MeasureFloor(ctx, admin, ns+floorKeyName, spec.CellFloor, 1)
				if ctx.Err() != nil {
					return b, nil
				}
				if err != nil {
					cell.Error = fmt.Sprintf("floor before the cell: %v", err)
					if firstErr == nil {
						firstErr = fmt.Errorf("%s × %d clients: %s", lock, n, cell.Error)
					}
					b.Cells = append(b.Cells, cell)
					continue
				}
				cell.Floor = f
			}
			resetPeakRSS()
			r, err := RunOn(ctx, c, RunSpec{Lock: lock, Scenario: spec.scenario(n), Seed: spec.Seed, KeepAlive: spec.KeepAlive, RPCTimeout: spec.RPCTimeout, SharedConns: spec.SharedConns, Cluster: spec.Cluster, Out: spec.Dir})
			cell.PeakRSSMB = peakRSSMB()
			if err != nil {
				if ctx.Err() != nil {
					return b, nil
				}
				cell.Error = err.Error()
				if firstErr == nil {
					firstErr = fmt.Errorf("%s × %d clients: %w", lock, n, err)
				}
			} else {
				cell.fill(r)
				cell.Run, _ = filepath.Rel(spec.Dir, r.Dir)
			}
			if found, replace := checkLockService(ctx, c, lock); found != "" {
				cell.Note = "after the cell: " + found
				if replace {
					// Such a member cannot stop: close what can be, and
					// start afresh for the next cell.
					cell.Note += "; the cluster is replaced"
					admin.Close()
					admin = nil
					if cerr := closeCluster(c, clusterCloseWait); cerr != nil {
						cell.Note += fmt.Sprintf(" (%v)", cerr)
					}
					c = nil
				}
				progress("%s × %d clients: %s", lock, n, cell.Note)
			}
			b.Cells = append(b.Cells, cell)
		}
	}

	// 3. Recording on and off, alternating (on off, off on, ...) so that
	// drift of a shared machine falls on both.
	if spec.RecordRuns > 0 && ctx.Err() == nil {
		rec := &Recording{Lock: spec.TargetLock, Clients: spec.TargetClients, Target: TargetRecordingOnOff, DurationS: spec.recordDuration().Seconds(),
			Method: "grants counted by the clients (recording on or off) ÷ the run's clock time"}
		b.Recording = rec
		for i := 0; i < spec.RecordRuns && ctx.Err() == nil; i++ {
			order := []bool{true, false}
			if i%2 == 1 {
				order = []bool{false, true}
			}
			for _, on := range order {
				if ctx.Err() != nil {
					break
				}
				progress("recording %s: %s × %d clients, run %d/%d", onOff(on), spec.TargetLock, spec.TargetClients, i+1, spec.RecordRuns)
				if err := ensure(); err != nil {
					return b, err
				}
				run := recordingRun(ctx, c, spec, on, fmt.Sprintf("%srecording-%d-%s/", ns, i, onOff(on)))
				if ctx.Err() != nil {
					break
				}
				rec.Runs = append(rec.Runs, run)
				if run.Error != "" && firstErr == nil {
					firstErr = fmt.Errorf("recording %s: %s", onOff(on), run.Error)
				}
			}
		}
		rec.AppendNS = round1(MeasureAppendNS(200_000))
	}

	// 4. The floor again, for drift.
	if ctx.Err() == nil {
		if err := ensure(); err != nil {
			return b, err
		}
		progress("floor again")
		if b.FloorEnd, err = MeasureFloor(ctx, admin, ns+floorKeyName, spec.FloorDuration, 1); err != nil && ctx.Err() == nil && firstErr == nil {
			firstErr = fmt.Errorf("floor at the end: %w", err)
		}
	}
	if admin != nil {
		dctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		admin.Delete(dctx, ns, clientv3.WithPrefix())
		cancel()
	}
	return b, firstErr
}

const opTimeout = 5 * time.Second

// clusterCloseWait bounds closing the cluster. A member's Close can hang
// for good after an rpc cell: its v3lock Lock handlers stay blocked on the
// member's deadlocked in-process watch stream (see cluster.Close),
// GracefulStop waits for them while holding the gRPC server's lock, and
// the Stop that should follow it waits for that lock.
const clusterCloseWait = 30 * time.Second

// closeCluster closes c, giving up after wait: the cluster is then left
// running (the process is about to exit) and its data folder stays.
func closeCluster(c *cluster.Cluster, wait time.Duration) error {
	if c == nil {
		return nil
	}
	dir := c.DataDir()
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("close etcd cluster: %w", err)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("close etcd cluster: still closing after %s, left behind (data folder %s)", wait, dir)
	}
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func newAdmin(c *cluster.Cluster) (*clientv3.Client, error) {
	tlsCfg, err := c.ClientTLSConfig()
	if err != nil {
		return nil, err
	}
	return clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), TLS: tlsCfg, DialTimeout: DefaultDialTimeout, Logger: zap.NewNop()})
}

// fill takes a cell's figures from its run.
func (cell *BenchCell) fill(r *Result) {
	s := r.Summary
	cell.summary = s
	cell.Acquisitions = s.Acquisitions
	cell.ThroughputPerS = s.ThroughputPerS
	cell.HandoffMS = trimCDF(s.LatencyMS[report.LatHandoff])
	cell.AcquireMS = trimCDF(s.LatencyMS[report.LatAcquire])
	cell.WakeupsPerHandoff, _ = s.WakeupsPerHandoff()
	cell.Violations = s.TotalViolations()
	cell.Verdict = string(s.Verdict)
	cell.Stopped = s.Stopped
	if s.Interrupted {
		cell.Stopped = "interrupted"
	}
}

// trimCDF drops the CDF: summary.json in the run folder has it.
func trimCDF(l report.Latency) report.Latency {
	l.CDF = nil
	return l
}

// finish computes the ratios and the targets from what ran.
func (b *Bench) finish(spec BenchSpec) {
	mutex := map[int]float64{}
	for _, c := range b.Cells {
		if c.Lock == MutexLock && c.Error == "" {
			mutex[c.Clients] = c.ThroughputPerS
		}
	}
	for i := range b.Cells {
		c := &b.Cells[i]
		if c.Error != "" {
			continue
		}
		c.XFloor, c.XMutex, c.XTwoWriters, c.HandoffOverCommit = 0, 0, 0, 0
		floor := b.Floor
		if c.Floor != nil {
			floor = c.Floor
		}
		if floor != nil && floor.CommitsPerS > 0 {
			c.XFloor = round3(c.ThroughputPerS / floor.CommitsPerS)
		}
		if m := mutex[c.Clients]; m > 0 {
			c.XMutex = round3(c.ThroughputPerS / m)
		}
		if tw := b.TwoWriters; tw != nil && tw.PerWriterPerS > 0 {
			c.XTwoWriters = round3(c.ThroughputPerS / tw.PerWriterPerS)
		}
		if floor != nil && floor.LatencyMS.P50 > 0 && c.HandoffMS.Count > 0 {
			c.HandoffOverCommit = round3(c.HandoffMS.P50 / floor.LatencyMS.P50)
		}
	}
	if r := b.Recording; r != nil {
		r.finish()
	}
	b.Targets = nil
	for _, c := range b.Cells {
		if c.Lock != spec.TargetLock || c.Clients != spec.TargetClients || c.Error != "" {
			continue
		}
		name := fmt.Sprintf("%s at %d clients", c.Lock, c.Clients)
		if c.XFloor > 0 {
			b.Targets = append(b.Targets, newTarget(name+": throughput ÷ floor commits/s", c.XFloor, ">=", TargetXFloor))
		}
		if c.HandoffOverCommit > 0 {
			b.Targets = append(b.Targets, newTarget(name+": handoff p50 ÷ commit p50", c.HandoffOverCommit, "<=", TargetHandoffOverP50))
		}
		if c.XMutex > 0 && c.Lock != MutexLock {
			b.Targets = append(b.Targets, newTarget(name+": throughput ÷ mutex", c.XMutex, ">=", TargetXMutex))
		}
	}
	if r := b.Recording; r != nil && r.Ratio > 0 {
		b.Targets = append(b.Targets, newTarget("recording on ÷ off throughput", r.Ratio, ">=", TargetRecordingOnOff))
	}
}

// finish computes the recording figures from the runs.
func (r *Recording) finish() {
	var on, off, cpuOn, cpuOff []float64
	r.PairRatios = nil
	for i, run := range r.Runs {
		if run.Error != "" || run.CountedPerS <= 0 {
			continue
		}
		if run.Record {
			on = append(on, run.CountedPerS)
		} else {
			off = append(off, run.CountedPerS)
		}
		if run.CPUPerAcqUS > 0 {
			if run.Record {
				cpuOn = append(cpuOn, run.CPUPerAcqUS)
			} else {
				cpuOff = append(cpuOff, run.CPUPerAcqUS)
			}
		}
		// Runs come in pairs: 0-1, 2-3, ...
		if i%2 == 1 {
			prev := r.Runs[i-1]
			if prev.Error == "" && prev.CountedPerS > 0 && prev.Record != run.Record {
				onR, offR := run.CountedPerS, prev.CountedPerS
				if prev.Record {
					onR, offR = offR, onR
				}
				r.PairRatios = append(r.PairRatios, round3(onR/offR))
			}
		}
	}
	r.OnPerS, r.OffPerS, r.Ratio, r.RatioOfMeans = round1(mean(on)), round1(mean(off)), 0, 0
	if len(on) > 0 && len(off) > 0 {
		r.RatioOfMeans = round3(mean(on) / mean(off))
	}
	r.Ratio = round3(median(r.PairRatios))
	var events, acqs int64
	for _, run := range r.Runs {
		if run.Error == "" && run.Record {
			events += int64(run.Events)
			acqs += run.Acquisitions
		}
	}
	r.EventsPerAcq, r.EstimatedCost = 0, 0
	if acqs > 0 {
		r.EventsPerAcq = round3(float64(events) / float64(acqs))
		r.EstimatedCost = math.Round(r.AppendNS*r.EventsPerAcq*r.OffPerS/1e9*1e6) / 1e6
	}
	r.CPUPerAcqUSOn, r.CPUPerAcqUSOff, r.CPURatio = round1(median(cpuOn)), round1(median(cpuOff)), 0
	if r.CPUPerAcqUSOn > 0 && r.CPUPerAcqUSOff > 0 {
		r.CPURatio = round3(median(cpuOff) / median(cpuOn))
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

func newTarget(name string, v float64, op string, t float64) Target {
	met := v >= t
	if op == "<=" {
		met = v <= t
	}
	return Target{Name: name, Value: v, Op: op, Target: t, Met: met}
}

// MeasureFloor Puts in a loop for d from writers goroutines on one client,
// each on its own key (key, key/1, key/2, ...), each Put waiting for the
// last: with one writer the rate of serialized commits and their latency;
// with two, what one write costs while another is in flight, as a lock's
// release is while some client joins the queue. An error stops it only
// when no Put succeeded.
func MeasureFloor(ctx context.Context, cli *clientv3.Client, key string, d time.Duration, writers int) (*Floor, error) {
	keys := []string{key}
	for i := 1; i < writers; i++ {
		keys = append(keys, key+"/"+strconv.Itoa(i))
	}
	// One Put each first, untimed: the connection and the keys exist.
	for _, k := range keys {
		wctx, cancel := context.WithTimeout(ctx, opTimeout)
		_, err := cli.Put(wctx, k, "0")
		cancel()
		if err != nil {
			return nil, err
		}
	}
	type result struct {
		lat     []time.Duration
		errs    int
		lastErr error
	}
	results := make([]result, len(keys))
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	t0 := time.Now()
	var wg sync.WaitGroup
	for w, k := range keys {
		wg.Go(func() {
			r := &results[w]
			for i := 1; rctx.Err() == nil; i++ {
				s := time.Now()
				_, err := cli.Put(rctx, k, strconv.Itoa(i))
				switch {
				case err == nil:
					r.lat = append(r.lat, time.Since(s))
				case rctx.Err() == nil:
					r.errs++
					r.lastErr = err
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(t0)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var (
		lat     []time.Duration
		errs    int
		lastErr error
	)
	for _, r := range results {
		lat = append(lat, r.lat...)
		errs += r.errs
		lastErr = cmp.Or(r.lastErr, lastErr)
	}
	if len(lat) == 0 {
		return nil, fmt.Errorf("no Put succeeded in %s: %v", d, lastErr)
	}
	perS := float64(len(lat)) / el.Seconds()
	return &Floor{Writers: len(keys), Commits: len(lat), Errors: errs, DurationS: round3(el.Seconds()),
		CommitsPerS: round1(perS), PerWriterPerS: round1(perS / float64(len(keys))), LatencyMS: latencyOf(lat)}, nil
}

// latencyOf is the distribution of ds in milliseconds (exact quantiles).
func latencyOf(ds []time.Duration) report.Latency {
	if len(ds) == 0 {
		return report.Latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return round3(ms(s[min(max(i, 0), len(s)-1)]))
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return report.Latency{Count: int64(len(s)), P50: q(0.5), P90: q(0.9), P99: q(0.99), P999: q(0.999),
		Max: round3(ms(s[len(s)-1])), Mean: round3(ms(sum / time.Duration(len(s))))}
}

// recordingRun runs the target cell once, keeping the history or not.
func recordingRun(ctx context.Context, c *cluster.Cluster, spec BenchSpec, on bool, prefix string) RecordingRun {
	run := RecordingRun{Record: on}
	tlsCfg, err := c.ClientTLSConfig()
	if err != nil {
		run.Error = err.Error()
		return run
	}
	sc := spec.scenario(spec.TargetClients)
	sc.Duration = scenario.Duration(spec.recordDuration())
	cpu0 := processCPU()
	out, err := runner.Run(ctx, runner.Config{
		Scenario: sc, Lock: spec.TargetLock, Seed: spec.Seed, Prefix: prefix,
		Endpoints: c.Endpoints(), Cluster: c, ClientConfig: clientv3.Config{TLS: tlsCfg},
		KeepAlive: spec.KeepAlive, RPCTimeout: spec.RPCTimeout, SharedConns: spec.SharedConns, NoRecord: !on,
	})
	cpu := processCPU() - cpu0
	if err != nil {
		run.Error = err.Error()
		return run
	}
	run.ElapsedS = round3(out.Elapsed.Seconds())
	run.Events = len(out.Events)
	run.Acquisitions = out.Acquisitions
	if out.Elapsed <= 0 || out.Acquisitions == 0 {
		run.Error = "no acquisition in the run"
		return run
	}
	run.CountedPerS = round1(float64(out.Acquisitions) / out.Elapsed.Seconds())
	if cpu0 > 0 {
		run.CPUPerAcqUS = round1(float64(cpu) / float64(time.Microsecond) / float64(out.Acquisitions))
	}
	return run
}

// MeasureAppendNS is the mean time of one history append, over n appends
// of a realistic event from one goroutine into a fresh recorder.
func MeasureAppendNS(n int) float64 {
	r := history.NewRecorder(n + 1)
	e := history.Event{Process: 3, Type: history.OK, F: history.FAcquire, Lock: locks.DefaultName, Token: 412,
		Key: "/lockbench/run/lock/0123456789abcdef", Lease: "694d7c4b2e1a0f07"}
	t0 := time.Now()
	for range n {
		r.Append(e)
	}
	return float64(time.Since(t0)) / float64(n)
}

// processCPU is the process's user + system CPU time from /proc/self/stat
// (utime and stime, in USER_HZ = 100 ticks/s); 0 where it cannot be read.
func processCPU() time.Duration {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	return parseStatCPU(string(b))
}

func parseStatCPU(stat string) time.Duration {
	// The command name (field 2) may hold spaces and parentheses: fields
	// are counted after its last ")". utime and stime are fields 14, 15.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// Peak resident set: VmHWM of /proc/self/status, reset by writing 5 to
// /proc/self/clear_refs (Linux ≥ 4.0). Elsewhere both do nothing.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return rssResetUnsupportedMB
	}
	return parseVmHWM(string(b))
}

// parseVmHWM reads "VmHWM:  123456 kB" from a /proc status file, in MB.
func parseVmHWM(status string) float64 {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseFloat(f[0], 64)
				if err == nil {
					return round1(kb / 1024)
				}
			}
		}
	}
	return 0
}

// BenchTable prints the benchmark: one row per cell, then the floor, the
// recording comparison and the targets.
func BenchTable(w io.Writer, b *Bench) error {
	t := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{Global: tw.AlignRight, PerColumn: []tw.Align{tw.AlignLeft}}))
	t.Header("lock", "clients", "acq/s", "×floor", "×mutex", "handoff p50 ms", "handoff p99 ms", "handoff p50 ÷ commit p50")
	for _, c := range b.Cells {
		row := []any{c.Lock, strconv.Itoa(c.Clients), "error", "-", "-", "-", "-", "-"}
		if c.Error == "" {
			p50, p99 := "-", "-"
			if c.HandoffMS.Count > 0 {
				p50, p99 = fmtMS(c.HandoffMS.P50), fmtMS(c.HandoffMS.P99)
			}
			row = []any{c.Lock, strconv.Itoa(c.Clients), fmt.Sprintf("%.1f", c.ThroughputPerS),
				ratio(c.XFloor), ratio(c.XMutex), p50, p99, ratio(c.HandoffOverCommit)}
		}
		if err := t.Append(row...); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	floorLine := func(label string, f *Floor) {
		if f != nil {
			fmt.Fprintf(w, "%s: %.0f commits/s, commit p50 %s ms, p99 %s ms (one client, Put on one key, %d commits in %.1fs, %d errors)\n",
				label, f.CommitsPerS, fmtMS(f.LatencyMS.P50), fmtMS(f.LatencyMS.P99), f.Commits, f.DurationS, f.Errors)
		}
	}
	floorLine("floor", b.Floor)
	if f := b.TwoWriters; f != nil {
		fmt.Fprintf(w, "floor, two writers: %.0f commits/s each (%.0f together), commit p50 %s ms, p99 %s ms", f.PerWriterPerS, f.CommitsPerS, fmtMS(f.LatencyMS.P50), fmtMS(f.LatencyMS.P99))
		if b.Floor != nil && b.Floor.CommitsPerS > 0 {
			fmt.Fprintf(w, " = %.2f× one writer's rate", f.PerWriterPerS/b.Floor.CommitsPerS)
		}
		fmt.Fprintf(w, " (a lock writes twice per acquisition, so its release commits beside a join: a handoff chain's ceiling)\n")
	}
	floorLine("floor at the end", b.FloorEnd)
	if b.CellFloorS > 0 {
		var rates []float64
		for _, c := range b.Cells {
			if c.Floor != nil {
				rates = append(rates, c.Floor.CommitsPerS)
			}
		}
		if len(rates) > 0 {
			fmt.Fprintf(w, "×floor and ÷ commit p50 use a %.1fs floor measured just before each cell: %.0f–%.0f commits/s (median %.0f)\n",
				b.CellFloorS, slices.Min(rates), slices.Max(rates), median(rates))
		}
	}
	if r := b.Recording; r != nil {
		var runs []string
		for _, run := range r.Runs {
			s := fmt.Sprintf("%s %.0f", onOff(run.Record), run.CountedPerS)
			if run.Error != "" {
				s = fmt.Sprintf("%s error", onOff(run.Record))
			}
			runs = append(runs, s)
		}
		fmt.Fprintf(w, "recording: %s × %d clients, on %.1f/s, off %.1f/s: on/off %.3f (median of %d pairs; target ≥ %.2f; ratio of means %.3f; runs: %s; grants counted by the clients)\n",
			r.Lock, r.Clients, r.OnPerS, r.OffPerS, r.Ratio, len(r.PairRatios), r.Target, r.RatioOfMeans, strings.Join(runs, ", "))
		if r.EventsPerAcq > 0 {
			fmt.Fprintf(w, "recording estimate: %.1f events per acquisition × %.0f ns per append = %.1f µs per acquisition: ≤ %.2f%% of throughput at %.0f/s\n",
				r.EventsPerAcq, r.AppendNS, r.EventsPerAcq*r.AppendNS/1000, 100*r.EstimatedCost, r.OffPerS)
		}
		if r.CPURatio > 0 {
			fmt.Fprintf(w, "recording CPU: %.0f µs per acquisition on, %.0f µs off: off/on %.3f (process CPU, etcd members included)\n",
				r.CPUPerAcqUSOn, r.CPUPerAcqUSOff, r.CPURatio)
		}
	}
	for _, tg := range b.Targets {
		mark := "met"
		if !tg.Met {
			mark = "NOT met"
		}
		fmt.Fprintf(w, "target %s: %.3f (%s %.2f) %s\n", tg.Name, tg.Value, tg.Op, tg.Target, mark)
	}
	for _, c := range b.Cells {
		if c.Lock == b.TargetLock && c.Clients == b.TargetClients && c.XTwoWriters > 0 {
			fmt.Fprintf(w, "%s at %d clients: throughput ÷ one writer's rate beside another: %.3f (no target; see floor, two writers)\n", c.Lock, c.Clients, c.XTwoWriters)
		}
	}
	for _, c := range b.Cells {
		switch {
		case c.Error != "":
			fmt.Fprintf(w, "%s × %d clients: error: %s\n", c.Lock, c.Clients, c.Error)
		case c.Violations > 0:
			fmt.Fprintf(w, "%s × %d clients: %d violations (verdict %s), see %s\n", c.Lock, c.Clients, c.Violations, c.Verdict, c.Run)
		case c.Stopped != "":
			fmt.Fprintf(w, "%s × %d clients: stopped early: %s\n", c.Lock, c.Clients, c.Stopped)
		}
		if c.Note != "" {
			fmt.Fprintf(w, "%s × %d clients: %s\n", c.Lock, c.Clients, c.Note)
		}
	}
	return nil
}

func ratio(v float64) string {
	if v <= 0 {
		return "-"
	}
	if v >= 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func fmtMS(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// WriteBenchLines writes the benchmark in Go benchmark format, for
// benchstat: the floor, each cell (report.WriteBenchLines, named
// BenchmarkLock/<lock>/contention/clients=N) and each recording run.
func WriteBenchLines(w io.Writer, b *Bench) error {
	bw := bufio.NewWriter(w)
	floor := func(name string, f *Floor) {
		if f != nil {
			fmt.Fprintf(bw, "BenchmarkFloor/%s 1 %d ns/commit %d p99-ns/commit %s commits/s\n",
				name, nsOf(f.LatencyMS.P50), nsOf(f.LatencyMS.P99), strconv.FormatFloat(f.CommitsPerS, 'f', -1, 64))
		}
	}
	floor("put", b.Floor)
	floor("put-two-writers", b.TwoWriters)
	var sums []report.Summary
	for _, c := range b.Cells {
		if c.Error != "" {
			continue
		}
		s := c.summary
		if s.Lock == "" { // read back from bench.json: rebuild what the line needs
			s = report.Summary{Lock: c.Lock, ThroughputPerS: c.ThroughputPerS, ViolationCount: c.Violations,
				LatencyMS: map[string]report.Latency{report.LatAcquire: c.AcquireMS, report.LatHandoff: c.HandoffMS}}
		}
		s.Scenario = fmt.Sprintf("%s/clients=%d", b.Scenario, c.Clients)
		sums = append(sums, s)
	}
	if err := report.WriteBenchLines(bw, sums); err != nil {
		return err
	}
	if r := b.Recording; r != nil {
		for _, run := range r.Runs {
			if run.Error == "" {
				fmt.Fprintf(bw, "BenchmarkRecording/%s/%s/clients=%d/record=%s 1 %s acquires/s\n",
					r.Lock, b.Scenario, r.Clients, onOff(run.Record), strconv.FormatFloat(run.CountedPerS, 'f', -1, 64))
			}
		}
	}
	return bw.Flush()
}

func nsOf(msv float64) int64 { return int64(msv*1e6 + 0.5) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// HasViolations reports whether any cell found a violation.
func (b *Bench) HasViolations() bool {
	for _, c := range b.Cells {
		if c.Violations > 0 || c.Verdict == string(verdict.Fail) {
			return true
		}
	}
	return false
}
