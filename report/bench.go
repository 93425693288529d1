package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/internal/wholefile"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/stats"
	"github.com/lockbench/lockbench/verdict"
)

// WriteBenchLines writes the summaries in Go benchmark format, so that
// `benchstat old.txt new.txt` compares runs (and several runs of one cell,
// e.g. over seeds, give benchstat its samples): the configuration lines
// benchstat reads (goos, goarch, cpu of host; pkg), then one line per
// summary:
//
//	BenchmarkLock/lock=queue/scenario=contention/keepalive=auto 1 412000 ns/acquire 9800000 p99-ns/acquire 350000 ns/handoff 1200000 p99-ns/handoff 2431 acquires/s 1.05 wakeups/handoff 0 violations
//
// Every dimension of a cell is a key=value part of the name (lock,
// scenario, keepalive, and etcd when the members ran a release of their
// own), so cells that differ in one are never samples of one benchmark,
// and benchstat can make any of them its columns (-col /keepalive). The
// iteration count is always 1; ns/acquire and ns/handoff are p50s. A
// metric with no samples is left out rather than written as 0. Names have
// spaces and slashes replaced by underscores.
func WriteBenchLines(w io.Writer, host rundir.HostInfo, sums []Summary) error {
	bw := bufio.NewWriter(w)
	writeBenchHeader(bw, host)
	for _, s := range sums {
		writeLockLine(bw, lockBenchName(s), s)
	}
	return bw.Flush()
}

// benchPkg is the pkg: of lockbench's benchmark lines.
const benchPkg = "github.com/lockbench/lockbench"

// writeBenchHeader writes the configuration lines benchstat reads before
// the benchmarks: it labels its tables with them, and two files from
// different machines show it. A host not recorded (an older bench.json)
// leaves its lines out.
func writeBenchHeader(w *bufio.Writer, h rundir.HostInfo) {
	if h.OS != "" {
		fmt.Fprintf(w, "goos: %s\ngoarch: %s\n", h.OS, h.Arch)
	}
	if h.CPUModel != "" {
		fmt.Fprintf(w, "cpu: %s\n", h.CPUModel)
	}
	fmt.Fprintf(w, "pkg: %s\n", benchPkg)
}

// lockBenchName is a summary's benchmark name (WriteBenchLines), with
// extra key=value parts at its end.
func lockBenchName(s Summary, extra ...string) string {
	parts := []string{"BenchmarkLock", "lock=" + benchName(s.Lock), "scenario=" + benchName(s.Scenario)}
	if s.KeepAlive != "" {
		parts = append(parts, "keepalive="+benchName(s.KeepAlive))
	}
	if s.EtcdVersion != "" {
		parts = append(parts, "etcd="+benchName(s.EtcdVersion))
	}
	return strings.Join(append(parts, extra...), "/")
}

// writeLockLine writes the benchmark line of s named name.
func writeLockLine(w *bufio.Writer, name string, s Summary) {
	w.WriteString(name)
	w.WriteString(" 1")
	metric := func(v float64, unit string) {
		fmt.Fprintf(w, " %s %s", strconv.FormatFloat(v, 'f', -1, 64), unit)
	}
	nsOf := func(ms float64) float64 { return float64(nsOfMS(ms)) }
	if a := s.LatencyMS[LatAcquire]; a.Count > 0 {
		metric(nsOf(a.P50), "ns/acquire")
		metric(nsOf(a.P99), "p99-ns/acquire")
	}
	if h := s.LatencyMS[LatHandoff]; h.Count > 0 {
		metric(nsOf(h.P50), "ns/handoff")
		metric(nsOf(h.P99), "p99-ns/handoff")
	}
	metric(round(s.ThroughputPerS, 1), "acquires/s")
	if v, ok := s.WakeupsPerHandoff(); ok {
		metric(round(v, 3), "wakeups/handoff")
	}
	metric(float64(s.TotalViolations()), "violations")
	w.WriteByte('\n')
}

// benchName makes a name safe for one benchmark-line field.
func benchName(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == '/' {
			return '_'
		}
		return r
	}, s)
}

func round(v float64, digits int) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', digits, 64), 64)
	return f
}

// Bench is bench.json: a benchmark's figures and the machine and cluster
// they were measured on, kept here, beside the other reports, so that a
// saved benchmark can be drawn again without measuring anything.
type Bench struct {
	// Schema is rundir.SchemaVersion when written (0: an older file) and
	// Lockbench the build that wrote it (rundir.ThisBuild): a reader
	// knows which keys mean what, and which code measured.
	Schema    int       `json:"schema_version,omitempty"`
	Lockbench string    `json:"lockbench_version,omitempty"`
	ID        string    `json:"bench_id"`
	Started   time.Time `json:"started"`
	ElapsedS  float64   `json:"elapsed_s"`
	GoVersion string    `json:"go_version"`
	Scenario  string    `json:"scenario"`
	DurationS float64   `json:"duration_s"`
	HoldMS    float64   `json:"hold_ms"`
	Seed      int64     `json:"seed"`
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
	TwoWriters *Floor `json:"floor_two_writers,omitempty"`
	// Ideal is the ideal handoff chain (harness.MeasureIdeal): the limit a
	// lock's throughput and handoff latency are compared against.
	Ideal *Ideal `json:"ideal,omitempty"`
	// Relay is what the members' front doors and a client fault proxy
	// cost per RPC, measured in this run; RelayCostUS is its headline, the
	// front door's cost per commit RPC.
	Relay       *Relay      `json:"relay,omitempty"`
	RelayCostUS float64     `json:"relay_cost_us,omitempty"`
	Cells       []BenchCell `json:"cells"`
	// Paired is the target cell measured against the ideal handoff in
	// alternating slices after the cells; when it has figures, the
	// target cell's ideal targets are judged on it.
	Paired    *Paired    `json:"paired,omitempty"`
	Recording *Recording `json:"recording,omitempty"`
	// OpenLoop is bench --rate's open-loop runs (benchrate.go); when set,
	// the bench ran no closed-loop cells.
	OpenLoop *OpenLoopBench `json:"open_loop,omitempty"`
	Targets  []Target       `json:"targets"`
	// Interrupted is set when a signal ended the benchmark early.
	Interrupted bool `json:"interrupted,omitempty"`
	// Host and Cluster are the machine and the cluster the figures were
	// measured on, which only make sense beside them.
	Host    rundir.HostInfo      `json:"host"`
	Cluster rundir.ClusterConfig `json:"cluster"`
	// LocksPerRun are the cells over several lock names (bench
	// --locks-per-run; benchnames.go), beside Cells: added later, additive.
	LocksPerRun []NamesCell `json:"locks_per_run,omitempty"`
}

// LoadBench reads a bench folder's bench.json, to draw its table again;
// one that is not a regular file or is over wholefile.JSONLimit is
// refused before it is read.
func LoadBench(dir string) (*Bench, error) {
	path := filepath.Join(dir, rundir.BenchFile)
	raw, err := wholefile.Read(path, rundir.BenchFile, wholefile.JSONLimit)
	if err != nil {
		if wholefile.IsRefused(err) {
			return nil, err
		}
		return nil, fmt.Errorf("read bench folder: %w", err)
	}
	var b Bench
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &b, nil
}

// Floor is the commit floor, Puts in a loop (harness.MeasureFloor): with
// one writer, serialized commits, the rate no lock on etcd can beat.
type Floor struct {
	Writers     int     `json:"writers"`
	Commits     int     `json:"commits"`
	Errors      int     `json:"errors"`
	DurationS   float64 `json:"duration_s"`
	CommitsPerS float64 `json:"commits_per_s"`
	// PerWriterPerS is CommitsPerS ÷ Writers: one writer's rate.
	PerWriterPerS float64 `json:"per_writer_commits_per_s"`
	LatencyMS     Latency `json:"latency_ms"`
}

// Ideal is the ideal handoff: n clients pass a turn around a ring, each
// step one conditional commit seen by the next client through a watch it
// already holds, beside a join-like write of the passer. No lock can hand
// over faster on etcd, so it is the reference a lock's throughput
// (x_ideal) and handoff p50 (handoff_p50_x_ideal) are divided by.
type Ideal struct {
	Clients   int     `json:"clients"`
	Steps     int     `json:"steps"`
	Errors    int     `json:"errors"`
	DurationS float64 `json:"duration_s"`
	RatePerS  float64 `json:"rate_per_s"`
	// StepP50MS is StepMS.P50: a step runs from the passer's txn sent to
	// the next client's watch event, as a lock's handoff runs from the
	// release sent to the next grant.
	StepP50MS float64 `json:"step_p50_ms"`
	StepMS    Latency `json:"step_ms"`
}

// Paired is the target cell measured against the ideal handoff in one
// bench run, in Rounds rounds of two adjacent slices of SliceS each: one of
// MeasureIdeal, one of the lock (ideal first in even rounds, lock first in
// odd ones, so that a linear drift cancels). The commit rate of a shared
// machine drifts by ±15 % over seconds, so a cell's x_ideal against an
// ideal measured minutes earlier moves as much from drift alone; a ratio of
// two adjacent slices does not, and the median over rounds is robust to a
// load spike in one of them.
type Paired struct {
	Lock    string `json:"lock"`
	Clients int    `json:"clients"`
	// IdealClients is the ideal chain's client count (≥ 2).
	IdealClients int     `json:"ideal_clients"`
	Rounds       int     `json:"rounds"`
	SliceS       float64 `json:"slice_s"`
	Method       string  `json:"method"`
	// XIdeal* are over the rounds' X, HandoffXIdeal* over their H; rounds
	// with an error or no figure are left out (Used counts the others).
	Used                int     `json:"used"`
	XIdealMedian        float64 `json:"x_ideal_median"`
	XIdealMin           float64 `json:"x_ideal_min"`
	XIdealMax           float64 `json:"x_ideal_max"`
	HandoffXIdealMedian float64 `json:"handoff_x_ideal_median"`
	HandoffXIdealMin    float64 `json:"handoff_x_ideal_min"`
	HandoffXIdealMax    float64 `json:"handoff_x_ideal_max"`
	// XIdealSE and HandoffXIdealSE are the medians' standard errors
	// (stats.MedianStandardError): the targets on the medians are judged
	// with ± two of them, as recording's is (Target.Noise).
	XIdealSE        float64 `json:"x_ideal_se,omitempty"`
	HandoffXIdealSE float64 `json:"handoff_x_ideal_se,omitempty"`
	// BareXIdeal* are over the rounds' B (the bare loop ÷ the ideal: the
	// lock's own share of the gap), RunnerXBare* over their R (the lock
	// through the runner ÷ the bare loop: the runner's share), each with
	// its median's standard error; UsedBare counts the rounds with both.
	UsedBare          int         `json:"used_bare,omitempty"`
	BareXIdealMedian  float64     `json:"bare_x_ideal_median,omitempty"`
	BareXIdealMin     float64     `json:"bare_x_ideal_min,omitempty"`
	BareXIdealMax     float64     `json:"bare_x_ideal_max,omitempty"`
	BareXIdealSE      float64     `json:"bare_x_ideal_se,omitempty"`
	RunnerXBareMedian float64     `json:"runner_x_bare_median,omitempty"`
	RunnerXBareMin    float64     `json:"runner_x_bare_min,omitempty"`
	RunnerXBareMax    float64     `json:"runner_x_bare_max,omitempty"`
	RunnerXBareSE     float64     `json:"runner_x_bare_se,omitempty"`
	Runs              []PairedRun `json:"runs"`
}

// PairedRun is one round of the paired measurement.
type PairedRun struct {
	Round int `json:"round"`
	// Order is the order of the round's slices: "ideal, lock, bare" or
	// "bare, lock, ideal" (bench.json files from before the bare loop say
	// "ideal first" or "lock first").
	Order          string  `json:"order"`
	IdealRatePerS  float64 `json:"ideal_rate_per_s"`
	IdealStepP50MS float64 `json:"ideal_step_p50_ms"`
	// RatePerS is the lock's grants (counted by the clients) per second
	// of a steady window that starts after its first grant and a warm-up;
	// HandoffP50MS is the handoff p50 of the grants in that window.
	RatePerS     float64 `json:"rate_per_s"`
	Acquisitions int64   `json:"acquisitions"`
	ElapsedS     float64 `json:"elapsed_s"`
	HandoffP50MS float64 `json:"handoff_p50_ms"`
	// BareRatePerS is the same lock's grants per second in a bare
	// Lock/Unlock loop per client (no runner), over a window timed the
	// same way.
	BareRatePerS float64 `json:"bare_rate_per_s,omitempty"`
	// X is RatePerS ÷ IdealRatePerS, H is HandoffP50MS ÷ IdealStepP50MS,
	// B is BareRatePerS ÷ IdealRatePerS, R is RatePerS ÷ BareRatePerS.
	X     float64 `json:"x"`
	H     float64 `json:"h"`
	B     float64 `json:"b,omitempty"`
	R     float64 `json:"r,omitempty"`
	Error string  `json:"error,omitempty"`
}

// Relay is the cost per RPC of the user-space relays in front of the
// members, measured with the same requests interleaved one by one on
// three paths to one member: its own listener (direct), its front door,
// and a client fault relay (package relay) to its own
// listener. Interleaving puts a shared machine's drift on all three.
type Relay struct {
	Member int     `json:"member"`
	Rounds int     `json:"rounds"`
	PutMS  PathsMS `json:"put_ms"`
	GetMS  PathsMS `json:"serializable_get_ms"`
	// FrontDoorUS and ProxyUS are what the path adds to a Put (a commit,
	// as the floor): the median over rounds of its latency minus direct's
	// in the same round. The Get figures are the same for a read served by
	// the member alone, with no disk or raft noise.
	FrontDoorUS    float64 `json:"front_door_us"`
	ProxyUS        float64 `json:"proxy_us"`
	FrontDoorGetUS float64 `json:"front_door_get_us"`
	ProxyGetUS     float64 `json:"proxy_get_us"`
}

// PathsMS is one request's latency p50 and mean on each relay path.
type PathsMS struct {
	DirectP50     float64 `json:"direct_p50"`
	FrontDoorP50  float64 `json:"front_door_p50"`
	ProxyP50      float64 `json:"proxy_p50"`
	DirectMean    float64 `json:"direct_mean"`
	FrontDoorMean float64 `json:"front_door_mean"`
	ProxyMean     float64 `json:"proxy_mean"`
}

// BenchCell is one strategy at one client count: the row of the
// benchmark table.
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
	HandoffMS Latency `json:"handoff_ms"`
	AcquireMS Latency `json:"acquire_ms"`
	// HandoffOverCommit is handoff p50 ÷ the floor's commit p50.
	HandoffOverCommit float64 `json:"handoff_p50_over_commit_p50"`
	// XIdeal is throughput ÷ Bench.Ideal's rate; HandoffXIdeal is handoff
	// p50 ÷ the ideal step p50 (0: no ideal measured).
	XIdeal            float64 `json:"x_ideal,omitempty"`
	HandoffXIdeal     float64 `json:"handoff_p50_x_ideal,omitempty"`
	WakeupsPerHandoff float64 `json:"wakeups_per_handoff,omitempty"`
	Violations        int     `json:"violations"`
	Verdict           string  `json:"verdict"`
	// Floor is the floor measured just before the cell (cell floor on);
	// when present the cell's ratios use it instead of Bench.Floor.
	Floor *Floor `json:"floor,omitempty"`
	// PeakRSSMB is the process's peak resident set (VmHWM, etcd members
	// included) during the cell, where the OS lets it be reset.
	PeakRSSMB float64 `json:"peak_rss_mb,omitempty"`
	// Run is the cell's run folder, relative to the bench folder.
	Run     string `json:"run,omitempty"`
	Stopped string `json:"stopped,omitempty"`
	// Saturated, when set, says why the cell's run was saturated
	// (Summary.Saturation): its figures include the harness's own queueing,
	// and its violations are no evidence about the lock.
	Saturated string `json:"saturated,omitempty"`
	// EtcdSaturated, when set, says how often etcd refused the cell's
	// requests as too many (Summary.EtcdOverload): its figures are an
	// overloaded etcd's; its verdict stands.
	EtcdSaturated string `json:"etcd_saturated,omitempty"`
	// Note is what the cell left behind, e.g. etcd's lock service stuck.
	Note string `json:"note,omitempty"`
	// Error is why the cell has no figures.
	Error string `json:"error,omitempty"`
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
	// Slices is set when Runs are alternating slices of one run (recording
	// switched on and off inside it) rather than separate runs: the count
	// of slices, each SliceS long. CostPct is 100 × (1 − on ÷ off) of the
	// grants per second summed over the slices (negative: on was faster).
	Slices  int     `json:"slices,omitempty"`
	SliceS  float64 `json:"slice_s,omitempty"`
	CostPct float64 `json:"cost_pct"`
	// CostSEPct is the standard error of CostPct, estimated from the
	// spread of the pairs' own costs (100 × (1 − each pair's on ÷ off)):
	// the slices' noise, which on a shared disk is of the target's size,
	// so that a reader sees whether a cost near the target is resolved.
	CostSEPct float64 `json:"cost_se_pct,omitempty"`
}

// RecordingRun is one run of the recording comparison, kept so that the
// spread behind the median can be seen.
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

// Target is one goal and whether the benchmark met it, so that a reader
// sees at a glance whether a change helped.
type Target struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Op     string  `json:"op"` // ">=" or "<="
	Target float64 `json:"target"`
	// Noise, when set, is the figure's own ± (two standard errors). A
	// target is then missed (Met false) only when the whole interval
	// Value ± Noise is on the wrong side of Target, and Unresolved marks an
	// interval that straddles it: a figure whose noise is the target's
	// size must not fail a run by chance, nor pass it silently.
	Noise      float64 `json:"noise,omitempty"`
	Met        bool    `json:"met"`
	Unresolved bool    `json:"unresolved,omitempty"`
}

// PairedJudged reports whether the target cell's ideal targets are judged
// on the paired measurement: it ran on the target cell and at least one
// round gave a ratio. The cell's own ratios to the ideal measured once at
// the start are then shown as information only.
func (b *Bench) PairedJudged() bool {
	p := b.Paired
	return p != nil && p.Used > 0 && p.XIdealMedian > 0 && p.Lock == b.TargetLock && p.Clients == b.TargetClients
}

// HasViolations reports whether any cell found a violation, for the exit
// status of a benchmark (a fast lock that breaks exclusion is no result).
func (b *Bench) HasViolations() bool {
	for _, c := range b.Cells {
		if c.Saturated == "" && c.failed() {
			return true
		}
	}
	return b.openLoopFailures(false) > 0
}

// SaturatedFailures counts the cells that found a violation on a saturated
// harness: the bench's own outcome, not the locks' (docs/design.md §9).
func (b *Bench) SaturatedFailures() int {
	n := b.openLoopFailures(true)
	for _, c := range b.Cells {
		if c.Saturated != "" && c.failed() {
			n++
		}
	}
	return n
}

// failed reports whether the cell found a violation.
func (c BenchCell) failed() bool { return c.Violations > 0 || c.Verdict == string(verdict.Fail) }

// BenchTable prints the benchmark: one row per cell, then the floor, the
// recording comparison, the targets and what went wrong in cells. It reads
// only b, so a bench.json read back draws the same table.
func BenchTable(w io.Writer, b *Bench) error {
	if len(b.Cells) > 0 || b.OpenLoop == nil {
		if err := benchCellsTable(w, b); err != nil {
			return err
		}
	}
	if err := benchOpenLoopLines(w, b); err != nil {
		return err
	}
	if err := benchNamesTable(w, b); err != nil {
		return err
	}
	benchFloorLines(w, b)
	benchReferenceLines(w, b)
	benchPairedLine(w, b.Paired)
	benchRecordingLines(w, b.Recording)
	benchTargetLines(w, b)
	benchCellNotes(w, b)
	return nil
}

func benchCellsTable(w io.Writer, b *Bench) error {
	t := newTable(w, "L")
	t.Header("lock", "clients", "acq/s", "×ideal", "×floor", "×mutex", "handoff p50 ms", "handoff p99 ms", "handoff p50 ÷ ideal step", "handoff p50 ÷ commit p50")
	for _, c := range b.Cells {
		row := []any{c.Lock, strconv.Itoa(c.Clients), "error", "-", "-", "-", "-", "-", "-", "-"}
		if c.Error == "" {
			p50, p99 := "-", "-"
			if c.HandoffMS.Count > 0 {
				p50, p99 = ms(c.HandoffMS.P50), ms(c.HandoffMS.P99)
			}
			row = []any{c.Lock, strconv.Itoa(c.Clients), fmt.Sprintf("%.1f", c.ThroughputPerS), benchRatio(c.XIdeal),
				benchRatio(c.XFloor), benchRatio(c.XMutex), p50, p99, benchRatio(c.HandoffXIdeal), benchRatio(c.HandoffOverCommit)}
		}
		if err := t.Append(row...); err != nil {
			return err
		}
	}
	return t.Render()
}

func benchFloorLines(w io.Writer, b *Bench) {
	floorLine := func(label string, f *Floor) {
		if f != nil {
			fmt.Fprintf(w, "%s: %.0f commits/s, commit p50 %s ms, p99 %s ms (one client, Put on one key, %d commits in %.1fs, %d errors)\n",
				label, f.CommitsPerS, ms(f.LatencyMS.P50), ms(f.LatencyMS.P99), f.Commits, f.DurationS, f.Errors)
		}
	}
	floorLine("floor", b.Floor)
	if f := b.TwoWriters; f != nil {
		fmt.Fprintf(w, "floor, two writers: %.0f commits/s each (%.0f together), commit p50 %s ms, p99 %s ms", f.PerWriterPerS, f.CommitsPerS, ms(f.LatencyMS.P50), ms(f.LatencyMS.P99))
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
				b.CellFloorS, slices.Min(rates), slices.Max(rates), stats.Median(rates))
		}
	}
}

// benchReferenceLines prints the ideal handoff and the relays' cost.
func benchReferenceLines(w io.Writer, b *Bench) {
	if id := b.Ideal; id != nil {
		fmt.Fprintf(w, "ideal handoff: %.0f steps/s, step p50 %s ms, p99 %s ms (%d clients pass a turn, one conditional commit a step seen through a held watch, beside a join-like write; %d steps in %.1fs, %d errors)\n",
			id.RatePerS, ms(id.StepMS.P50), ms(id.StepMS.P99), id.Clients, id.Steps, id.DurationS, id.Errors)
	}
	if r := b.Relay; r != nil {
		fmt.Fprintf(w, "relay cost: front door %.0f µs per commit RPC (relay_cost_us; Put p50 %s direct, %s through it), fault proxy %.0f µs; serializable Get: front door %.0f µs, proxy %.0f µs (member %d, %d interleaved rounds)\n",
			r.FrontDoorUS, ms(r.PutMS.DirectP50), ms(r.PutMS.FrontDoorP50), r.ProxyUS, r.FrontDoorGetUS, r.ProxyGetUS, r.Member, r.Rounds)
	}
}

// benchPairedLine prints the paired measurement: the medians and their
// range, and each round's throughput ÷ ideal.
func benchPairedLine(w io.Writer, p *Paired) {
	if p == nil {
		return
	}
	var xs []string
	for _, run := range p.Runs {
		x := benchRatio(run.X)
		if run.Error != "" {
			x = "error"
		}
		xs = append(xs, x)
	}
	slicesOf := "one of the lock"
	if p.UsedBare > 0 {
		slicesOf = "one of the lock and one of its bare loop"
	}
	fmt.Fprintf(w, "paired with the ideal: %s × %d clients, %s of %.1fs slices (one of the ideal at %d clients and %s a round, in alternating order): throughput ÷ ideal median %.3f (%.3f–%.3f), handoff p50 ÷ ideal step median %.3f (%.3f–%.3f); %d with figures; per round: %s\n",
		p.Lock, p.Clients, countNoun(p.Rounds, "round"), p.SliceS, p.IdealClients, slicesOf, p.XIdealMedian, p.XIdealMin, p.XIdealMax,
		p.HandoffXIdealMedian, p.HandoffXIdealMin, p.HandoffXIdealMax, p.Used, strings.Join(xs, ", "))
	if p.UsedBare > 0 {
		fmt.Fprintf(w, "paired, the gap split: bare Lock/Unlock loop ÷ ideal median %.3f ± %.3f (%.3f–%.3f), the lock through the runner ÷ its bare loop median %.3f ± %.3f (%.3f–%.3f); ± two standard errors, over %d rounds with both\n",
			p.BareXIdealMedian, 2*p.BareXIdealSE, p.BareXIdealMin, p.BareXIdealMax, p.RunnerXBareMedian, 2*p.RunnerXBareSE, p.RunnerXBareMin, p.RunnerXBareMax, p.UsedBare)
	}
}

// costSE is recording's cost's noise, as ± two standard errors.
func costSE(r *Recording) string {
	if r.CostSEPct == 0 {
		return ""
	}
	return fmt.Sprintf(" ± %.2f (2 standard errors over %d pairs)", 2*r.CostSEPct, len(r.PairRatios))
}

func benchRecordingLines(w io.Writer, r *Recording) {
	if r == nil {
		return
	}
	var runs []string
	for _, run := range r.Runs {
		s := fmt.Sprintf("%s %.0f", onOff(run.Record), run.CountedPerS)
		if run.Error != "" {
			s = fmt.Sprintf("%s error", onOff(run.Record))
		}
		runs = append(runs, s)
	}
	if r.Slices > 0 {
		fmt.Fprintf(w, "recording: %s × %d clients, one run, %d slices of %.1fs switched on/off: on %.1f/s, off %.1f/s: cost %.2f%% of throughput%s (target < %.0f%%; median pair on/off %.3f; slices: %s; grants counted by the clients)\n",
			r.Lock, r.Clients, r.Slices, r.SliceS, r.OnPerS, r.OffPerS, r.CostPct, costSE(r), r.Target, r.Ratio, strings.Join(runs, ", "))
	} else {
		fmt.Fprintf(w, "recording: %s × %d clients, on %.1f/s, off %.1f/s: on/off %.3f (median of %d pairs; target ≥ %.2f; ratio of means %.3f; runs: %s; grants counted by the clients)\n",
			r.Lock, r.Clients, r.OnPerS, r.OffPerS, r.Ratio, len(r.PairRatios), r.Target, r.RatioOfMeans, strings.Join(runs, ", "))
	}
	if r.EventsPerAcq > 0 {
		fmt.Fprintf(w, "recording estimate: %.1f events per acquisition × %.0f ns per append = %.1f µs per acquisition: ≤ %.2f%% of throughput at %.0f/s\n",
			r.EventsPerAcq, r.AppendNS, r.EventsPerAcq*r.AppendNS/1000, 100*r.EstimatedCost, r.OffPerS)
	}
	if r.CPURatio > 0 {
		fmt.Fprintf(w, "recording CPU: %.0f µs per acquisition on, %.0f µs off: off/on %.3f (process CPU, etcd members included)\n",
			r.CPUPerAcqUSOn, r.CPUPerAcqUSOff, r.CPURatio)
	}
}

func benchTargetLines(w io.Writer, b *Bench) {
	for _, tg := range b.Targets {
		mark, noise := "met", ""
		switch {
		case !tg.Met:
			mark = "NOT met"
		case tg.Unresolved:
			mark = "not resolved (the noise straddles the target: not missed)"
		}
		if tg.Noise > 0 {
			noise = fmt.Sprintf(" ± %.3f", tg.Noise)
		}
		fmt.Fprintf(w, "target %s: %.3f%s (%s %.2f) %s\n", tg.Name, tg.Value, noise, tg.Op, tg.Target, mark)
	}
	for _, c := range b.Cells {
		if c.Lock != b.TargetLock || c.Clients != b.TargetClients {
			continue
		}
		if c.XTwoWriters > 0 {
			fmt.Fprintf(w, "%s at %d clients: throughput ÷ one writer's rate beside another: %.3f (no target; see floor, two writers)\n", c.Lock, c.Clients, c.XTwoWriters)
		}
		if b.PairedJudged() && c.XIdeal > 0 {
			fmt.Fprintf(w, "%s at %d clients: against the ideal measured once at the start: throughput ÷ ideal %.3f, handoff p50 ÷ ideal step %.3f (no target: drift; the paired rounds are judged)\n",
				c.Lock, c.Clients, c.XIdeal, c.HandoffXIdeal)
		}
	}
}

func benchCellNotes(w io.Writer, b *Bench) {
	for _, c := range b.Cells {
		switch {
		case c.Error != "":
			fmt.Fprintf(w, "%s × %d clients: error: %s\n", c.Lock, c.Clients, c.Error)
		case c.Saturated != "":
			fmt.Fprintf(w, "%s × %d clients: harness saturated, figures and verdict (%s) not evidence about the lock: %s\n", c.Lock, c.Clients, c.Verdict, c.Saturated)
		case c.Violations > 0:
			fmt.Fprintf(w, "%s × %d clients: %d violations (verdict %s), see %s\n", c.Lock, c.Clients, c.Violations, c.Verdict, c.Run)
		case c.Stopped != "":
			fmt.Fprintf(w, "%s × %d clients: stopped early: %s\n", c.Lock, c.Clients, c.Stopped)
		}
		if c.EtcdSaturated != "" {
			fmt.Fprintf(w, "%s × %d clients: etcd saturated: %s\n", c.Lock, c.Clients, c.EtcdSaturated)
		}
		if c.Note != "" {
			fmt.Fprintf(w, "%s × %d clients: %s\n", c.Lock, c.Clients, c.Note)
		}
	}
}

// WriteBenchResultLines writes the benchmark in Go benchmark format, for
// benchstat: the configuration lines of its host, the floor, each cell
// (as WriteBenchLines, named
// BenchmarkLock/lock=L/scenario=contention/clients=N), each paired round
// (BenchmarkPairedIdeal, one benchstat sample each) and each recording
// run, every dimension a key=value part of the name. The lines come from
// b alone, so a bench.json read back gives the same ones.
func WriteBenchResultLines(w io.Writer, b *Bench) error {
	bw := bufio.NewWriter(w)
	writeBenchHeader(bw, b.Host)
	floor := func(name string, f *Floor) {
		if f != nil {
			fmt.Fprintf(bw, "BenchmarkFloor/%s 1 %d ns/commit %d p99-ns/commit %s commits/s\n",
				name, nsOfMS(f.LatencyMS.P50), nsOfMS(f.LatencyMS.P99), strconv.FormatFloat(f.CommitsPerS, 'f', -1, 64))
		}
	}
	floor("put", b.Floor)
	floor("put-two-writers", b.TwoWriters)
	if id := b.Ideal; id != nil {
		fmt.Fprintf(bw, "BenchmarkIdealHandoff/clients=%d 1 %d ns/step %d p99-ns/step %s steps/s\n",
			id.Clients, nsOfMS(id.StepMS.P50), nsOfMS(id.StepMS.P99), strconv.FormatFloat(id.RatePerS, 'f', -1, 64))
	}
	for _, c := range b.Cells {
		if c.Error == "" {
			s := c.summary(b.Scenario)
			writeLockLine(bw, lockBenchName(s, fmt.Sprintf("clients=%d", c.Clients)), s)
		}
	}
	if p := b.Paired; p != nil {
		for _, run := range p.Runs {
			if run.Error == "" && run.X > 0 {
				fmt.Fprintf(bw, "BenchmarkPairedIdeal/lock=%s/scenario=%s/clients=%d 1 %s x-ideal %s handoff-x-ideal %s acquires/s %s ideal-steps/s\n",
					benchName(p.Lock), b.Scenario, p.Clients, fmtFloat(run.X), fmtFloat(run.H), fmtFloat(run.RatePerS), fmtFloat(run.IdealRatePerS))
			}
		}
	}
	writeOpenLoopLines(bw, b)
	if r := b.Recording; r != nil {
		for _, run := range r.Runs {
			if run.Error == "" {
				fmt.Fprintf(bw, "BenchmarkRecording/lock=%s/scenario=%s/clients=%d/record=%s 1 %s acquires/s\n",
					benchName(r.Lock), b.Scenario, r.Clients, onOff(run.Record), strconv.FormatFloat(run.CountedPerS, 'f', -1, 64))
			}
		}
	}
	return bw.Flush()
}

// summary is what WriteBenchLines needs of the cell, as a Summary.
func (c BenchCell) summary(scenario string) Summary {
	s := Summary{Run: rundir.Run{Lock: c.Lock}, Scenario: scenario,
		ThroughputPerS: c.ThroughputPerS, ViolationCount: c.Violations,
		LatencyMS: map[string]Latency{LatAcquire: c.AcquireMS, LatHandoff: c.HandoffMS}}
	if c.WakeupsPerHandoff > 0 {
		s.Checks = map[string]check.Result{verdict.Herd: {Metrics: map[string]float64{"wakeups_per_handoff": c.WakeupsPerHandoff}}}
	}
	return s
}

// onOff names a recording setting as the output spells it.
func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func benchRatio(v float64) string {
	if v <= 0 {
		return "-"
	}
	if v >= 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func nsOfMS(msv float64) int64 { return int64(msv*1e6 + 0.5) }
