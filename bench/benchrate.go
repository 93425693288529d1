package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/scenarios"
)

// Open-loop benchmarks (bench --rate): each strategy under a fixed arrival
// rate, its acquire latency measured from each arrival's intended start
// (runner/arrivals.go), at one rate or swept to its saturation rate.

// OpenSpec is an open-loop benchmark: BenchSpec.Open.
type OpenSpec struct {
	// RatePerS is the offered rate of each strategy's one run (not Sweep).
	RatePerS float64
	// Sweep searches each strategy's saturation rate (SweepMethod), then
	// runs it at SweepFractions of it.
	Sweep bool
	// Arrivals is the arrival process ("": uniform).
	Arrivals string
}

// Open-loop defaults and the sweep's criteria (SweepMethod says them in
// words).
const (
	// DefaultRateClients is the pool of clients serving the arrivals when
	// the user names none: the target cell's count, enough that the pool
	// is not what limits a lock on etcd near its saturation.
	DefaultRateClients = DefaultTargetClients
	// SweepStartRate is the sweep's first offered rate; it doubles from
	// there while runs are sustained.
	SweepStartRate = 20.0
	// SweepMinRate ends a sweep whose runs are not sustained even this low.
	SweepMinRate = 1.0
	// SweepMaxProbes bounds the search's runs per strategy.
	SweepMaxProbes = 12
	// SweepResolution ends the bisection once the bracket is this narrow,
	// relative to its low end.
	SweepResolution = 0.1
	// SustainedShare: a run is sustained when it achieved at least this
	// share of its offered rate ...
	SustainedShare = 0.95
	// ... and its latency did not grow through the run: the median
	// acquire latency of the second half's grants ≤ GrowthFactor × the
	// first half's + GrowthSlackMS (a queue that grows from empty makes the
	// late median about three times the early one; the slack keeps
	// millisecond noise from counting). Medians: one stall of a loaded
	// machine moves a p99 of a few hundred grants, and did, in the first
	// sweep (docs/measurements.md).
	GrowthFactor  = 2.0
	GrowthSlackMS = 10.0
	// KneeFactor: in a sweep, a run is sustained only while its median
	// acquire latency ≤ KneeFactor × the first probe's (the light-load
	// latency, at SweepStartRate) + GrowthSlackMS: a queue that formed at
	// the start and stands (a lock at its knee, e.g. mutex waiting for
	// etcd's 100 ms watch resync on every contended handoff) keeps up
	// with the rate, but not at the latency the lock has below it.
	KneeFactor = 3.0
)

// SweepFractions are the shares of the saturation rate a sweep reports.
var SweepFractions = []float64{0.5, 0.8, 0.95}

// SweepMethod is how the sweep judges a run and finds the saturation
// rate, as bench.json and the table say it.
var SweepMethod = fmt.Sprintf("a run is sustained when it achieved ≥ %.2f × its offered rate, the median acquire latency (from the intended start) of its second half of grants ≤ %.0f × its first half's + %.0f ms (a queue growing from empty makes it ~3×), and its median ≤ %.0f × the first probe's (light load) + %.0f ms (no standing queue); the offered rate starts at %.0f/s and doubles while sustained, then is bisected between the highest sustained and the lowest not sustained until they are within %.0f %% (at most %d runs); the saturation rate is the highest sustained; then one run at each of %s of it",
	SustainedShare, GrowthFactor, GrowthSlackMS, KneeFactor, GrowthSlackMS, SweepStartRate, 100*SweepResolution, SweepMaxProbes, fractionsText())

// RateMethod is how bench --rate R judges its runs sustained: the
// sweep's criteria without the knee, which needs a light-load reference
// only a sweep measures.
var RateMethod = fmt.Sprintf("a run is sustained when it achieved ≥ %.2f × its offered rate and the median acquire latency (from the intended start) of its second half of grants ≤ %.0f × its first half's + %.0f ms: it kept up and its queue did not grow (a standing queue still counts as sustained; a sweep also holds the median to %.0f × the light-load one)",
	SustainedShare, GrowthFactor, GrowthSlackMS, KneeFactor)

func fractionsText() string {
	s := ""
	for i, f := range SweepFractions {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%.0f %%", 100*f)
	}
	return s
}

// arrivals is the arrival process, uniform by default.
func (o OpenSpec) arrivals() string {
	if o.Arrivals == "" {
		return scenarios.ArrivalsUniform
	}
	return o.Arrivals
}

// validate checks the open-loop part of a BenchSpec: one pool size, a rate
// or a sweep, an arrival process the scenarios know.
func (o OpenSpec) validate(s BenchSpec) error {
	switch {
	case len(s.Clients) != 1:
		return harness.FieldErr("Clients", strings.ReplaceAll(strings.Trim(fmt.Sprint(s.Clients), "[]"), " ", ","),
			"must be one client count with an offered rate (the pool of clients serving the arrivals)")
	case o.Arrivals != "" && o.Arrivals != scenarios.ArrivalsUniform && o.Arrivals != scenarios.ArrivalsPoisson:
		return harness.FieldErr("Arrivals", o.Arrivals, "valid arrivals are uniform, poisson")
	case o.Sweep && o.RatePerS != 0:
		return harness.FieldErr("Rate", o.RatePerS, "give a rate or a sweep, not both")
	case !o.Sweep && (o.RatePerS <= 0 || o.RatePerS > scenarios.MaxRate):
		return harness.FieldErr("Rate", o.RatePerS, fmt.Sprintf("must be > 0 and ≤ %.0f acquisitions/s, or sweep", scenarios.MaxRate))
	}
	sc := s.scenario(s.Clients[0])
	sc.Workload.Rate, sc.Workload.Arrivals = scenarios.Rate(max(o.RatePerS, SweepStartRate)), o.Arrivals
	if err := sc.Validate(); err != nil {
		return &harness.FieldError{Field: "Arrivals", Err: err}
	}
	return nil
}

// sweep is the search for a saturation rate, as a pure state machine:
// observe says whether the run at the current rate was sustained and
// returns the next rate to run, or done. Saturation is then lo.
type sweep struct {
	lo, hi, cur float64
	probes      int
}

func newSweep() *sweep { return &sweep{cur: SweepStartRate} }

func (s *sweep) observe(sustained bool) (next float64, done bool) {
	s.probes++
	if sustained {
		s.lo = s.cur
	} else {
		s.hi = s.cur
	}
	switch {
	case s.probes >= SweepMaxProbes:
		return 0, true
	case s.hi == 0: // all sustained so far: double
		if s.cur >= scenarios.MaxRate {
			return 0, true
		}
		s.cur = min(2*s.cur, scenarios.MaxRate)
	case s.lo == 0: // none sustained so far: halve
		if s.cur/2 < SweepMinRate {
			return 0, true
		}
		s.cur /= 2
	case s.hi-s.lo <= SweepResolution*s.lo:
		return 0, true
	default:
		s.cur = (s.lo + s.hi) / 2
	}
	return s.cur, false
}

// sustained reports whether a run kept up with its offered rate (see
// SustainedShare, GrowthFactor) and, given the light-load median refP50
// (> 0: in a sweep), stayed below the knee (KneeFactor).
func sustained(p report.RatePoint, refP50 float64) bool {
	return p.Error == "" && p.AchievedPerS >= SustainedShare*p.OfferedPerS &&
		p.LateP50MS <= GrowthFactor*p.EarlyP50MS+GrowthSlackMS &&
		(refP50 <= 0 || p.AcquireMS.P50 <= KneeFactor*refP50+GrowthSlackMS)
}

// runOpenBench is RunBench for an open-loop spec: the commit floor, each
// strategy's open-loop runs, the floor again; bench.json and bench.html
// are written whatever happened (what ran, marked interrupted when ctx
// ended it).
func runOpenBench(ctx context.Context, spec BenchSpec) (b *report.Bench, err error) {
	r := newBenchRun(ctx, spec)
	o := spec.Open
	ol := &report.OpenLoopBench{Arrivals: o.arrivals(), Clients: spec.Clients[0], RatePerS: o.RatePerS, Sweep: o.Sweep}
	ol.Method = RateMethod
	if o.Sweep {
		ol.Method = SweepMethod
	}
	r.b.OpenLoop = ol
	defer func() {
		err = r.finish(err)
		herr := rundir.WriteFile(filepath.Join(spec.Dir, BenchHTMLFile), func(w io.Writer) error { return report.WriteBenchHTML(w, r.b) })
		if herr != nil && err == nil {
			err = herr
		}
	}()
	if err := r.ensure(); err != nil {
		return r.b, err
	}
	r.progress("floor: serialized Puts for %s", spec.FloorDuration)
	if r.b.Floor, err = harness.MeasureFloor(ctx, r.admin, r.ns+floorKeyName, spec.FloorDuration, 1); err != nil {
		return r.b, fmt.Errorf("floor: %w", err)
	}
	for _, lock := range spec.Locks {
		if ctx.Err() != nil {
			break
		}
		st := r.openStrategy(lock)
		if ctx.Err() == nil || len(st.Points)+len(st.Probes) > 0 {
			ol.Strategies = append(ol.Strategies, st)
		}
	}
	if err := r.floorAtEnd(); err != nil {
		return r.b, err
	}
	r.deleteKeys()
	return r.b, r.firstErr
}

// BenchHTMLFile is an open-loop bench folder's page (docs/design.md §7).
const BenchHTMLFile = "bench.html"

// OpenBenchScenario names the scenario of an open-loop bench's runs: the
// contention scenario (BenchScenario) with a rate.
const OpenBenchScenario = BenchScenario + "-open"

// openStrategy runs lock open-loop: at the spec's rate, or swept.
func (r *benchRun) openStrategy(lock string) report.RateStrategy {
	st := report.RateStrategy{Lock: lock}
	o := r.spec.Open
	if !o.Sweep {
		p := r.ratePoint(lock, o.RatePerS, "")
		p.Sustained = sustained(p, 0)
		st.Points = []report.RatePoint{p}
		return st
	}
	sw := newSweep()
	for rate, done := sw.cur, false; !done && r.ctx.Err() == nil; {
		p := r.ratePoint(lock, rate, fmt.Sprintf("probe %d", sw.probes+1))
		if sw.probes == 0 && p.Error == "" {
			st.ReferenceP50MS = p.AcquireMS.P50
		}
		p.Sustained = sustained(p, st.ReferenceP50MS)
		st.Probes = append(st.Probes, p)
		rate, done = sw.observe(p.Sustained)
	}
	if r.ctx.Err() != nil {
		return st
	}
	st.SaturationPerS = round1(sw.lo)
	if sw.lo == 0 {
		st.Error = fmt.Sprintf("no offered rate was sustained, down to %.1f/s", sw.cur)
		return st
	}
	for _, f := range SweepFractions {
		if r.ctx.Err() != nil {
			break
		}
		p := r.ratePoint(lock, round1(f*sw.lo), fmt.Sprintf("%.0f %% of saturation", 100*f))
		p.Fraction, p.Sustained = f, sustained(p, st.ReferenceP50MS)
		st.Points = append(st.Points, p)
	}
	return st
}

// ratePoint runs lock at an offered rate for the spec's duration on the
// bench's cluster (replaced first if unhealthy) and takes the run's
// figures.
func (r *benchRun) ratePoint(lock string, rate float64, what string) report.RatePoint {
	p := report.RatePoint{OfferedPerS: rate}
	n := r.spec.Clients[0]
	if what != "" {
		what = " (" + what + ")"
	}
	r.progress("open loop: %s × %d clients at %.1f/s%s", lock, n, rate, what)
	if err := r.ensure(); err != nil {
		p.Error = err.Error()
		r.failed(fmt.Errorf("%s at %.1f/s: %w", lock, rate, err))
		return p
	}
	sc := r.spec.scenario(n)
	// Named apart from the closed-loop cells', so that a run folder or a
	// compare never keys an open-loop run as a contention cell.
	sc.Name = OpenBenchScenario
	sc.Workload.Rate, sc.Workload.Arrivals = scenarios.Rate(rate), r.spec.Open.Arrivals
	res, err := harness.RunOn(r.ctx, r.c, harness.RunSpec{Lock: lock, Scenario: sc, Seed: r.spec.Seed, KeepAlive: r.spec.KeepAlive,
		RPCTimeout: r.spec.RPCTimeout, SharedConns: r.spec.SharedConns, Cluster: r.spec.Cluster, Out: r.spec.Dir, Notice: r.spec.Notice})
	if err != nil {
		p.Error = err.Error()
		r.failed(fmt.Errorf("%s at %.1f/s: %w", lock, rate, err))
	} else {
		fillRatePoint(&p, res.Summary, r.spec.Duration)
		p.Run, _ = filepath.Rel(r.spec.Dir, res.Dir)
	}
	p.Note = r.lockServiceNote(lock, "after the run")
	return p
}

// fillRatePoint takes an open-loop run's figures from its summary. The
// achieved rate counts the grants of the whole intervals of the run's time
// series that end within d (the run's clock, not the wind-down after it).
func fillRatePoint(p *report.RatePoint, s report.Summary, d time.Duration) {
	p.Acquisitions = s.Acquisitions
	p.AchievedPerS = round1(achievedRate(s, d))
	p.AcquireMS = trimCDF(s.LatencyMS[report.LatAcquire])
	p.AcquireMS.Samples = nil
	if ol := s.OpenLoop; ol != nil {
		p.QueuedMS, p.ServiceMS, p.EarlyP50MS, p.LateP50MS = ol.QueuedMS, ol.ServiceMS, ol.EarlyP50MS, ol.LateP50MS
	}
	p.Violations, p.Verdict = s.TotalViolations(), string(s.Verdict)
	if s.Saturated() {
		p.Saturated = s.Saturation.Reason
	}
	if s.Interrupted {
		p.Error = "interrupted"
	}
}

// achievedRate is the grants per second within the first d of the run.
func achievedRate(s report.Summary, d time.Duration) float64 {
	ts := s.Series
	if ts == nil || ts.IntervalS <= 0 {
		if s.DurationS <= 0 {
			return 0
		}
		return float64(s.Acquisitions) / s.DurationS
	}
	whole := min(int(d.Seconds()/ts.IntervalS+1e-9), len(ts.Grants))
	if whole == 0 {
		return 0
	}
	n := 0
	for _, g := range ts.Grants[:whole] {
		n += g
	}
	return float64(n) / (float64(whole) * ts.IntervalS)
}
