// Package report turns a checked history into figures people read: latency
// distributions (HdrHistogram), summary.json, tables, Go benchmark lines,
// a self-contained HTML report, and the comparison of two runs or suites
// against a threshold (for CI).
//
// Every function here is a pure function of its arguments except
// ReadSuiteFile and LoadBench, which read a file (package rundir writes
// and loads run folders). Everything here reads a checked history
// (check.Checked): report never pairs a history itself.
package report

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/verdict"
)

// Latency names: the keys of Summary.LatencyMS. Every summary has all four.
const (
	// LatAcquire is an acquire's invoke → its ok; in an open-loop run,
	// its intended start → its ok (AcquireStart).
	LatAcquire = "acquire"
	// LatHandoff is a holder's release invoke → the next grant of that lock.
	LatHandoff = "handoff"
	// LatHold is an acquire ok → the holder's release invoke.
	LatHold = "hold"
	// LatUnavailability is a fault's invoke → the first acquire ok after it.
	LatUnavailability = "unavailability"
	// LatLeaseOverrun is how long a crashed holder's lease kept the lock
	// past its TTL: the crash → the next grant of that lock, minus the TTL
	// (a leader change extends leases by up to an election timeout plus the
	// TTL). Only with Run.LeaseTTL set. It is negative when the lock came
	// free sooner than the TTL after the crash (the lease was granted before
	// the crash, so it expires less than a TTL after it): such values are
	// kept, not clamped to 0, because an early expiry is worth seeing.
	LatLeaseOverrun = "lease_overrun"
)

// LatencyNames lists the distributions of a summary in display order.
var LatencyNames = []string{LatAcquire, LatHandoff, LatHold, LatUnavailability, LatLeaseOverrun}

// Latency is a distribution in milliseconds. A distribution with no
// samples is all zeros.
type Latency struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
	// Mean is the arithmetic mean.
	Mean float64 `json:"mean,omitempty"`
	// CDF samples the distribution at fixed quantiles (0 = min, 1 = max),
	// enough to draw it; summaries written before it existed lack it.
	CDF []Quantile `json:"cdf,omitempty"`
	// Samples are every sample in ascending order (ms, at the histogram's
	// resolution) when there are at most SampleLimit of them: with few
	// samples, fixed quantiles joined by lines would suggest a continuum
	// that was never measured, so the report draws these as a step CDF.
	Samples []float64 `json:"samples,omitempty"`
}

// SampleLimit is the largest sample count for which Latency.Samples keeps
// every sample.
const SampleLimit = 64

// Quantile is one point of a CDF: the fraction Q of samples are ≤ MS.
type Quantile struct {
	Q  float64 `json:"q"`
	MS float64 `json:"ms"`
}

// cdfQuantiles are the points Latency.CDF samples.
var cdfQuantiles = []float64{0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9,
	0.95, 0.98, 0.99, 0.995, 0.999, 0.9999, 1}

// Points returns the CDF to draw: CDF when present, else one built from
// the fixed percentiles (older summaries), without points that would make
// it go backwards. Nil when there are no samples.
func (l Latency) Points() []Quantile {
	if l.Count == 0 {
		return nil
	}
	pts := l.CDF
	if len(pts) == 0 {
		pts = []Quantile{{0.5, l.P50}, {0.9, l.P90}, {0.99, l.P99}, {0.999, l.P999}, {1, l.Max}}
	}
	// Keep a drawable curve from hand-made or partial summaries: drop
	// points that are missing (0 past the first) or go backwards.
	out := make([]Quantile, 0, len(pts))
	for _, p := range pts {
		if n := len(out); n > 0 && (p.MS < out[n-1].MS || p.Q < out[n-1].Q || p.MS == 0 && out[n-1].MS >= 0) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// Summary is summary.json: the run's identity, its figures and the
// checker's verdict.
type Summary struct {
	// Run is the run's identity, as config.json has it.
	rundir.Run
	// Scenario and Clients are the scenario's name and client count
	// (config.json has the whole scenario).
	Scenario       string  `json:"scenario"`
	Clients        int     `json:"clients"`
	DurationS      float64 `json:"duration_s"`
	Events         int     `json:"events"`
	Acquisitions   int     `json:"acquisitions"`
	ThroughputPerS float64 `json:"throughput_per_s"`
	// LatencyMS holds the distributions named by LatencyNames.
	LatencyMS map[string]Latency `json:"latency_ms"`
	// Faults is the number of fault invokes; FaultsUnrecovered of them were
	// followed by no acquire ok (no unavailability sample).
	Faults            int `json:"faults"`
	FaultsUnrecovered int `json:"faults_unrecovered,omitempty"`
	// ViolationCount is the exact number of violations over all checks;
	// Violations lists them up to each check's cap.
	ViolationCount int `json:"violation_count"`
	// RPCsPerAcquire and WakeupsPerHandoffs are the herd check's headline
	// figures, absent when the history has no rpcs/wakeup events.
	RPCsPerAcquire     *float64                `json:"rpcs_per_acquire,omitempty"`
	WakeupsPerHandoffs *float64                `json:"wakeups_per_handoff,omitempty"`
	Violations         []check.Violation       `json:"violations"`
	Checks             map[string]check.Result `json:"checks"`
	Verdict            verdict.Verdict         `json:"verdict"`
	// Interrupted is set when a signal ended the run early; the figures
	// cover the part that ran.
	Interrupted bool `json:"interrupted,omitempty"`
	// Stopped says why the run stopped early, when not interrupted.
	Stopped string `json:"stopped,omitempty"`
	// Stuck names clients whose Lock, Unlock or critical section had not
	// returned long after the run ended: the verdict is then unknown.
	Stuck []string `json:"stuck,omitempty"`
	// Series is throughput and latency per interval of the run, with its
	// faults, for the reports' "over time" charts (absent in summaries
	// written before it existed).
	Series *TimeSeries `json:"series,omitempty"`
	// Saturation is the harness's own scheduling lag during the run, as its
	// probe measured it, and whether that makes the run saturated: the
	// harness overloaded, its verdicts no evidence about the lock
	// (docs/design.md §9). Absent in summaries written before it existed
	// and in histories checked without a run (lockbench check).
	Saturation *Saturation `json:"saturation,omitempty"`
	// EtcdOverload counts etcd's refusals of the run's requests as too
	// many, and whether they make the run etcd-saturated (etcdoverload.go);
	// absent when etcd refused none (added later, additive).
	EtcdOverload *EtcdOverload `json:"etcd_overload,omitempty"`
	// SuiteFloor is the commit floor the suite this run belonged to
	// measured just before its cells (suite.json only): it moves with the
	// machine's load, so compare can normalize each run by its own floor.
	SuiteFloor *Floor `json:"suite_floor,omitempty"`
	// Names is the figures by lock name, present only when the history has
	// more than one (locknames.go; added later, additive).
	Names *Names `json:"names,omitempty"`
	// OpenLoop splits an open-loop run's acquire latency (measured from
	// each arrival's intended start) into its parts (openloop.go); absent
	// for a closed-loop run.
	OpenLoop *OpenLoop `json:"open_loop,omitempty"`
}

// DefaultKeepAlive is locks.DefaultKeepAlive (a test in package harness
// keeps them equal; report does not import the lock strategies).
// A summary that names no policy (written before the policy was
// recorded, when every run was auto) is keyed as the default cell: a
// baseline that old must be refreshed before it is compared with a suite
// under the default (docs/leases.md).
const DefaultKeepAlive = "safe"

// OwnKeepAlive is locks.KeepAliveOwn: the label of a strategy that keeps
// its own lease, which runs once whatever the suite's policies (so it is
// not part of the key either).
const OwnKeepAlive = "own"

// Key names a summary's cell in a suite: lock/scenario, then
// "/keepalive=POLICY" for a policy other than the default and
// "/etcd=VERSION" for member processes (Etcd set), so that a suite that
// runs policies or binaries as a dimension has distinct keys, while a
// default run (embedded, default policy) keeps the key of summaries
// written before these fields existed. The binary is keyed by its release,
// not its path, so that suites from machines that keep etcd in different
// places compare (a suite refuses two binaries of one release).
func (s Summary) Key() string {
	k := s.Lock + "/" + s.Scenario
	if s.KeepAlive != "" && s.KeepAlive != DefaultKeepAlive && s.KeepAlive != OwnKeepAlive {
		k += "/keepalive=" + s.KeepAlive
	}
	if s.Etcd != "" && s.EtcdVersion != "" {
		k += "/etcd=" + s.EtcdVersion
	}
	return k
}

// EtcdLabel names the member processes' etcd for tables and reports:
// "3.4.23 (/usr/bin/etcd)", "3.7.3 (self)"; "" for the embedded cluster.
func (s Summary) EtcdLabel() string {
	switch {
	case s.Etcd == "":
		return ""
	case s.EtcdVersion == "":
		return s.Etcd
	}
	return s.EtcdVersion + " (" + s.Etcd + ")"
}

// EtcdLabels are the distinct EtcdLabels of cells in first-seen order:
// more than one means the cells ran on several binaries, and every label
// a reader sees must then say which.
func EtcdLabels(cells []Cell) []string {
	var out []string
	for _, c := range cells {
		if l := c.Summary.EtcdLabel(); !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// TotalViolations is the exact violation count, also for summaries written
// before ViolationCount existed.
func (s Summary) TotalViolations() int {
	if s.ViolationCount > 0 {
		return s.ViolationCount
	}
	n := 0
	for _, r := range s.Checks {
		n += r.Count
	}
	return max(n, len(s.Violations))
}

// Metric returns a check's metric (see check.Result.Metrics).
func (s Summary) Metric(checkName, metric string) (float64, bool) {
	r, ok := s.Checks[checkName]
	if !ok {
		return 0, false
	}
	v, ok := r.Metrics[metric]
	return v, ok
}

// WakeupsPerHandoff is the herd check's figure; ok is false when the run
// had no handoff.
func (s Summary) WakeupsPerHandoff() (float64, bool) {
	return s.Metric(verdict.Herd, "wakeups_per_handoff")
}

// RunInfo is what Summarize knows of a run besides its history: its
// identity and how it ended.
type RunInfo struct {
	rundir.Run
	Scenario string
	Clients  int
	// Elapsed is how long clients ran; 0 means "from the history's span".
	Elapsed     time.Duration
	Interrupted bool
	Stopped     string
	// Stuck names the clients whose call did not return in time after the
	// run ended (see runner.Outcome.Stuck); it makes the verdict unknown.
	Stuck []string
	// LeaseTTL is the clients' lease TTL, for lease_overrun (0: not known).
	LeaseTTL time.Duration
	// Saturation is what the harness's scheduler probe saw (nil: none ran).
	Saturation *Saturation
}

// Saturation is the harness's scheduler probe over a run: how late a
// goroutine that asked to wake every IntervalMS ran, and the verdict of
// the saturation criterion on it (docs/design.md §9).
type Saturation struct {
	IntervalMS float64 `json:"interval_ms"`
	Samples    int     `json:"samples"`
	LagP50MS   float64 `json:"lag_p50_ms"`
	LagP99MS   float64 `json:"lag_p99_ms"`
	LagMaxMS   float64 `json:"lag_max_ms"`
	// LagThresholdMS and StallThresholdMS are the criterion's bounds: a
	// p99 lag, or one lag, at or above them is a saturated run.
	LagThresholdMS   float64 `json:"lag_threshold_ms"`
	StallThresholdMS float64 `json:"stall_threshold_ms"`
	// Saturated is the criterion's verdict; Reason says which bound and
	// the figures.
	Saturated bool   `json:"saturated"`
	Reason    string `json:"reason,omitempty"`
}

// Saturated reports whether the run was saturated (its Saturation says so).
func (s Summary) Saturated() bool { return s.Saturation != nil && s.Saturation.Saturated }

// Summarize computes the figures of a run from its checked history. It
// reads nothing but its arguments.
//
// Operations are the checker's own (check.Checked.Ops), so the figures and
// the verdicts speak of the same acquires and holds.
// Distributions (see LatencyNames): acquire is each acquire invoke → its
// ok; hold is a certain hold from its grant to the holder's release invoke
// (a hold a crash or lease-lost ended is dropped); handoff is a holder's
// release invoke → the next grant of that lock by any process (the latest
// such release before each grant); unavailability is each fault invoke →
// the first grant of any lock after it.
func Summarize(run RunInfo, c check.Checked) Summary {
	ops, events, rep := c.Ops, c.Ops.Events, c.Report
	grants := ops.Grants()
	hs := map[string]hist{}
	for _, n := range LatencyNames {
		hs[n] = newHist()
	}
	recordAcquireAndHold(hs, events, grants, ops.Holds)
	recordHandoffs(hs[LatHandoff], grants, ops.Holds)
	unrecovered := recordUnavailability(hs[LatUnavailability], grants, ops.Faults)
	if run.LeaseTTL > 0 {
		hs[LatLeaseOverrun] = newOffsetHist(run.LeaseTTL)
		recordLeaseOverrun(hs[LatLeaseOverrun], grants, ops.Holds)
	}
	elapsed := run.Elapsed
	if elapsed == 0 {
		elapsed = time.Duration(ops.End)
	}
	s := Summary{
		Run: run.Run, Scenario: run.Scenario, Clients: run.Clients,
		DurationS:         elapsed.Seconds(),
		Events:            len(events),
		Acquisitions:      len(grants),
		LatencyMS:         make(map[string]Latency, len(hs)),
		Faults:            len(ops.Faults),
		FaultsUnrecovered: unrecovered,
		Interrupted:       run.Interrupted,
		Stopped:           run.Stopped,
		Stuck:             run.Stuck,
		Saturation:        run.Saturation,
	}
	for n, h := range hs {
		s.LatencyMS[n] = h.latency()
	}
	if elapsed > 0 {
		s.ThroughputPerS = float64(len(grants)) / elapsed.Seconds()
	}
	series := Series(ops)
	s.Series = &series
	s.Names = nameFigures(ops.Acquires, elapsed)
	s.OpenLoop = openLoopFigures(events, grants, elapsed)
	s.EtcdOverload = etcdOverload(events, run.Elapsed)
	addCheckReport(&s, rep)
	return s
}

// addCheckReport copies the checker's verdicts, violations and the herd
// check's headline figures into s.
func addCheckReport(s *Summary, rep check.Report) {
	s.Violations, s.Checks, s.Verdict = rep.Violations(), rep.Checks, rep.Verdict
	if len(s.Stuck) > 0 {
		s.Verdict = verdict.Worst(s.Verdict, verdict.Unknown)
	}
	for _, r := range rep.Checks {
		s.ViolationCount += r.Count
	}
	herd := rep.Checks[verdict.Herd].Metrics
	if v, ok := herd["rpcs_per_acquire"]; ok && herd["rpcs"] > 0 {
		s.RPCsPerAcquire = &v
	}
	if v, ok := herd["wakeups_per_handoff"]; ok && herd["wakeups"] > 0 {
		s.WakeupsPerHandoffs = &v
	}
	if s.Violations == nil {
		s.Violations = []check.Violation{}
	}
}

// recordAcquireAndHold records each granted acquire's wait (from its
// intended start in an open-loop run) and each hold its holder released.
func recordAcquireAndHold(hs map[string]hist, events []history.Event, grants []check.Op, holds []check.Hold) {
	for _, g := range grants {
		if g.Invoke >= 0 {
			hs[LatAcquire].record(g.To - AcquireStart(events, g))
		}
	}
	for _, h := range holds {
		if h.Certain && h.End == check.EndRelease {
			hs[LatHold].record(h.To - h.From)
		}
	}
}

// at is an event's place in time order: its time, then its line.
type at struct {
	t    int64
	line int
}

func (a at) before(b at) bool { return a.t < b.t || a.t == b.t && a.line < b.line }

// grantAt is where grant g happened.
func grantAt(g check.Op) at { return at{g.To, int(g.Done + 1)} }

// nextGrant is the index of the first grant after a, len(grants) if none.
func nextGrant(grants []check.Op, a at) int {
	i, _ := slices.BinarySearchFunc(grants, a, func(g check.Op, a at) int {
		if a.before(grantAt(g)) {
			return 1
		}
		return -1
	})
	return i
}

// recordHandoffs records every handoff gap (see handoffGaps).
func recordHandoffs(h hist, grants []check.Op, holds []check.Hold) {
	for _, g := range handoffGaps(grants, holds) {
		h.record(g.NS)
	}
}

// HandoffLatency is the handoff distribution of ops as Summarize computes
// it (LatHandoff), over the grants at from ≤ t < to only (times since the
// history's start), without the CDF: for a run timed over a steady window,
// whose warm-up's slower handoffs are left out.
func HandoffLatency(ops *check.Ops, from, to time.Duration) Latency {
	h := newHist()
	for _, g := range handoffGaps(ops.Grants(), ops.Holds) {
		if g.At >= int64(from) && g.At < int64(to) {
			h.record(g.NS)
		}
	}
	l := h.latency()
	l.CDF, l.Samples = nil, nil
	return l
}

// timed is a duration sample and when it was taken (ns since the start).
type timed struct {
	At, NS int64
}

// handoffGaps lists, for each grant of a lock (in grant order), the gap
// since the latest release invoke that ended a hold of that lock after the
// lock's previous grant; At is the grant's time. A grant no release
// preceded (the first, or one after a crash) has no gap.
//
// Every list is made at its size (counted first): grown by appends, they
// were most of the time and memory of a 10M-event history's summary.
func handoffGaps(grants []check.Op, holds []check.Hold) []timed {
	n := map[string]int{}
	for _, x := range holds {
		if x.Certain && x.End == check.EndRelease {
			n[x.Lock]++
		}
	}
	released := make(map[string][]at, len(n))
	for l, k := range n {
		released[l] = make([]at, 0, k)
	}
	for _, x := range holds {
		if x.Certain && x.End == check.EndRelease {
			released[x.Lock] = append(released[x.Lock], at{x.To, x.ToLine})
		}
	}
	for _, rs := range released {
		slices.SortFunc(rs, func(a, b at) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.line, b.line)) })
	}
	out := make([]timed, 0, len(grants))
	next := map[string]int{} // lock → its first release not yet used
	for _, g := range grants {
		rs, j := released[g.Lock], next[g.Lock]
		latest := -1
		for ; j < len(rs) && rs[j].before(grantAt(g)); j++ {
			latest = j
		}
		next[g.Lock] = j
		if latest >= 0 {
			out = append(out, timed{At: g.To, NS: g.To - rs[latest].t})
		}
	}
	return out
}

// recordUnavailability records each fault invoke → the first grant after
// it, and returns how many faults no grant followed.
func recordUnavailability(h hist, grants []check.Op, faults []check.Span) int {
	unrecovered := 0
	for _, f := range faults {
		i := nextGrant(grants, at{f.From, f.Start + 1})
		if i == len(grants) {
			unrecovered++
			continue
		}
		h.record(grants[i].To - f.From)
	}
	return unrecovered
}

// recordLeaseOverrun records, for each hold a crash ended, the crash →
// the next grant of its lock. h is an offset histogram (newOffsetHist) that
// subtracts the lease TTL when it reports, so the distribution is the
// overrun past the TTL, negative when the lock came free sooner.
func recordLeaseOverrun(h hist, grants []check.Op, holds []check.Hold) {
	byLock := map[string][]check.Op{} // only the locks a crash ended a hold of
	for _, x := range holds {
		if x.Certain && x.End == check.EndCrash {
			byLock[x.Lock] = nil
		}
	}
	if len(byLock) == 0 {
		return
	}
	for _, g := range grants {
		if gs, ok := byLock[g.Lock]; ok {
			byLock[g.Lock] = append(gs, g)
		}
	}
	for _, x := range holds {
		if !x.Certain || x.End != check.EndCrash {
			continue
		}
		gs := byLock[x.Lock]
		if i := nextGrant(gs, at{x.To, x.ToLine}); i < len(gs) {
			h.record(gs[i].To - x.To)
		}
	}
}

// hist records nanosecond durations at microsecond resolution, 3
// significant digits, up to an hour. HdrHistogram holds no negative
// values: a distribution that can go below zero (lease_overrun) records
// value + offset, which is never negative, and reports value − offset.
// It also keeps the first SampleLimit+1 samples, for Latency.Samples.
type hist struct {
	h *hdrhistogram.Histogram
	// offset is in µs, subtracted from every value reported.
	offset  int64
	samples *[]int64
}

func newHist() hist {
	return hist{h: hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3), samples: new([]int64)}
}

// newOffsetHist is a histogram whose samples are recorded as they are and
// reported minus off.
func newOffsetHist(off time.Duration) hist {
	h := newHist()
	h.offset = int64(off / time.Microsecond)
	return h
}

func (h hist) record(ns int64) {
	us := min(max(ns/int64(time.Microsecond), 1), h.h.HighestTrackableValue())
	_ = h.h.RecordValue(us) // in range by construction
	if len(*h.samples) <= SampleLimit {
		*h.samples = append(*h.samples, us)
	}
}

func (h hist) latency() Latency {
	ms := func(us int64) float64 { return float64(us-h.offset) / 1000 }
	if h.h.TotalCount() == 0 {
		return Latency{}
	}
	l := Latency{
		Count: h.h.TotalCount(),
		P50:   ms(h.h.ValueAtQuantile(50)),
		P90:   ms(h.h.ValueAtQuantile(90)),
		P99:   ms(h.h.ValueAtQuantile(99)),
		P999:  ms(h.h.ValueAtQuantile(99.9)),
		Max:   ms(h.h.Max()),
		Mean:  math.Round(h.h.Mean()-float64(h.offset)) / 1000,
	}
	for _, q := range cdfQuantiles {
		var v int64
		switch q {
		case 0:
			v = h.h.Min()
		case 1:
			v = h.h.Max()
		default:
			v = h.h.ValueAtQuantile(q * 100)
		}
		l.CDF = append(l.CDF, Quantile{Q: q, MS: ms(v)})
	}
	if n := len(*h.samples); n > 0 && n <= SampleLimit {
		for _, us := range slices.Sorted(slices.Values(*h.samples)) {
			l.Samples = append(l.Samples, ms(us))
		}
	}
	return l
}
