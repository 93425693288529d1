package report

import (
	"fmt"
	"math"

	"github.com/lockbench/lockbench/stats"
	"github.com/lockbench/lockbench/verdict"
)

// The per-cell tests of Compare: timings by Mann–Whitney on the runs'
// figures, verdicts by assertion or by Fisher's test on failure rates.

// normalizer divides figures by a side's commit floor when the suites ran
// on different hosts (on), so that a faster CI machine is not a speed-up.
type normalizer struct {
	on     bool
	floors [2]*Floor
}

// normalization decides how figures compare, and says so in c.Notes.
func (c *Comparison) normalization(base, next Suite, mode string) normalizer {
	switch {
	case mode == NormalizeNever:
		return normalizer{}
	case mode == NormalizeAlways && base.Floor != nil && next.Floor != nil:
		c.Normalized = true
		c.Notes = append(c.Notes, "figures normalized by each run's suite floor (--normalize always): throughput ÷ commits/s, latencies ÷ commit p50")
		return normalizer{on: true, floors: [2]*Floor{base.Floor, next.Floor}}
	case base.Host == nil || next.Host == nil:
		c.Notes = append(c.Notes, "figures compared as measured: "+lacking(base, next, "a host", func(s Suite) bool { return s.Host != nil }))
		return normalizer{}
	case *base.Host == *next.Host:
		return normalizer{}
	case base.Floor == nil || next.Floor == nil || base.Floor.CommitsPerS <= 0 || next.Floor.CommitsPerS <= 0 ||
		base.Floor.LatencyMS.P50 <= 0 || next.Floor.LatencyMS.P50 <= 0:
		c.Notes = append(c.Notes, fmt.Sprintf("different hosts (base: %s; new: %s) and a side has no commit floor: figures compared as measured, expect drift",
			base.Host, next.Host))
		return normalizer{}
	}
	c.Normalized = true
	c.Notes = append(c.Notes, fmt.Sprintf("different hosts (base: %s, floor %.0f commits/s, %s ms; new: %s, floor %.0f commits/s, %s ms): "+
		"throughput ÷ the floor's commits/s and latencies ÷ its commit p50 are compared",
		base.Host, base.Floor.CommitsPerS, FormatMS(base.Floor.LatencyMS.P50),
		next.Host, next.Floor.CommitsPerS, FormatMS(next.Floor.LatencyMS.P50)))
	return normalizer{on: true, floors: [2]*Floor{base.Floor, next.Floor}}
}

// metric is one figure of a run that compare tests or shows.
type metric struct {
	name string
	lat  string // latency distribution, "" for throughput
	tail bool   // shown, never gated
	get  func(Summary) (float64, bool)
}

func latencyMetric(name, dist string, tail bool, q func(Latency) float64) metric {
	return metric{name: name, lat: dist, tail: tail, get: func(s Summary) (float64, bool) {
		l := s.LatencyMS[dist]
		return q(l), l.Count > 0
	}}
}

var metrics = []metric{
	// A run that granted nothing has throughput 0: a real sample (a stall).
	{name: "throughput", get: func(s Summary) (float64, bool) { return s.ThroughputPerS, true }},
	latencyMetric("acquire p50", LatAcquire, false, func(l Latency) float64 { return l.P50 }),
	latencyMetric("handoff p50", LatHandoff, false, func(l Latency) float64 { return l.P50 }),
	latencyMetric("acquire p99", LatAcquire, true, func(l Latency) float64 { return l.P99 }),
	latencyMetric("handoff p99", LatHandoff, true, func(l Latency) float64 { return l.P99 }),
}

// samples are a side's values of m, raw and as compared (normalized or
// not); interrupted runs are left out.
func (m metric) samples(ss []Summary, norm normalizer, side int) (raw, cmp []float64) {
	for _, s := range ss {
		v, ok := m.get(s)
		if !ok || s.Interrupted {
			continue
		}
		raw = append(raw, v)
		if norm.on {
			f := norm.floors[side]
			if s.SuiteFloor != nil && s.SuiteFloor.CommitsPerS > 0 && s.SuiteFloor.LatencyMS.P50 > 0 {
				f = s.SuiteFloor
			}
			if m.lat == "" {
				v /= f.CommitsPerS
			} else {
				v /= f.LatencyMS.P50
			}
		}
		cmp = append(cmp, v)
	}
	return raw, cmp
}

func (m metric) format(v float64, norm bool) string {
	switch {
	case norm && m.lat == "":
		return fmt.Sprintf("%.3f×floor", v)
	case norm:
		return fmt.Sprintf("%.2f×commit", v)
	case m.lat == "":
		return fmt.Sprintf("%.1f/s", v)
	}
	return FormatMS(v) + " ms"
}

// compareTimings tests one cell's metrics. noPower is set when a gated
// metric had too few samples a side to test.
func compareTimings(key string, b, n []Summary, norm normalizer, o CompareOptions) (out []pending, noPower bool) {
	for _, m := range metrics {
		rb, cb := m.samples(b, norm, 0)
		rn, cn := m.samples(n, norm, 1)
		if len(cb) == 0 || len(cn) == 0 {
			continue
		}
		mb, mn := stats.Median(cb), stats.Median(cn)
		if mb <= 0 {
			continue
		}
		effect := mn/mb - 1
		if m.lat == "" {
			effect = -effect // worse is positive: a drop in throughput
		}
		bigRaw := m.lat == "" || math.Abs(stats.Median(rn)-stats.Median(rb)) >= o.MinDeltaMS
		big := math.Abs(effect) > o.Threshold && bigRaw
		ch := Change{Cell: key, What: m.name, Base: fmt.Sprintf("%s (n=%d)", m.format(mb, norm.on), len(cb)),
			New: fmt.Sprintf("%s (n=%d)", m.format(mn, norm.on), len(cn)), Delta: pct(mn/mb - 1)}
		p := pending{change: ch, p: math.NaN(), show: big, n: [2]int{len(cb), len(cn)}}
		switch {
		case m.tail:
			p.change.Note = "tail, not gated"
		case len(cb) < o.MinSamples || len(cn) < o.MinSamples:
			p.change.Note = "no power"
			noPower = true
		default:
			_, pv := stats.MannWhitney(cb, cn)
			p.p, p.change.P = pv, &pv
			p.worse, p.better = big && effect > 0, big && effect < 0
		}
		out = append(out, p)
	}
	return out, noPower
}

// expectedFor is the cell's asserted checks: the new suite's (the code
// under test says what it promises), else the base's.
func expectedFor(key string, base, next Suite) map[string]verdict.Verdict {
	if e, ok := next.Expected[key]; ok {
		return e
	}
	return base.Expected[key]
}

// safetyChecks are the checks whose failure means the lock let two
// holders in or let a non-holder act (exclusion, resource, fencing,
// symmetry): what compare must never wave through for want of samples.
var safetyChecks = map[string]bool{verdict.Exclusion: true, verdict.Resource: true, verdict.Fencing: true, verdict.Symmetry: true}

// NoteUnassertedSafety is the note of a regression found by a safety
// check that failed in the new runs and never in the base's, in a cell
// with no expectations (a bare summary.json): compare cannot know whether
// the check is asserted, and a gate that cannot tell must not pass.
const NoteUnassertedSafety = "safety check, no expectations to say it can race"

// compareChecks judges one cell's check verdicts. A check the cell's
// expectations assert is deterministic: any new run that misses its
// expected verdict is a regression. Any other check can race (its
// expectation is "any", or it is not judged): it regresses only when its
// failure rate (verdict not pass) rises significantly, by a one-sided
// Fisher test under Holm's correction over such checks. Checks that never
// failed on either side cannot reach significance and are left out of the
// family (Tarone), so they do not dilute it. When the cell has no
// expectations at all (expect nil: neither side recorded any, as in a
// bare summary.json), a safety check (safetyChecks) that fails in a new
// run and in no base run is a regression: nothing says it may race.
func compareChecks(key string, b, n []Summary, expect map[string]verdict.Verdict) []pending {
	var out []pending
	if sb, sn := stuckRuns(b), stuckRuns(n); sn > 0 { // a hung call: never expected
		out = append(out, pending{p: math.NaN(), show: true, change: Change{Cell: key, What: "stuck runs",
			Base: fmt.Sprintf("%d of %d", sb, len(b)), New: fmt.Sprintf("%d of %d", sn, len(n)), Note: "asserted", Regression: true}})
	}
	for _, name := range checkNames(checksOf(b, n)) {
		if want, asserted := expect[name]; asserted {
			bb, bn := missCount(b, name, func(v verdict.Verdict) bool { return v != want })
			nb, nn := missCount(n, name, func(v verdict.Verdict) bool { return v != want })
			if nb > 0 {
				out = append(out, pending{p: math.NaN(), show: true, change: Change{Cell: key, What: name + " verdict",
					Base: fmt.Sprintf("%d of %d not %s", bb, bn, want), New: fmt.Sprintf("%d of %d not %s", nb, nn, want),
					Note: "asserted", Regression: true}})
			}
			continue
		}
		fb, nb := missCount(b, name, func(v verdict.Verdict) bool { return v != verdict.Pass })
		fn, nn := missCount(n, name, func(v verdict.Verdict) bool { return v != verdict.Pass })
		if fb == 0 && fn == 0 {
			continue
		}
		if expect == nil && safetyChecks[name] {
			// No expectations to say this check can race here (a bare
			// summary.json, an older suite.json): a safety failure the base
			// never had must not pass as "one sample is no evidence".
			xb, _ := missCount(b, name, func(v verdict.Verdict) bool { return v == verdict.Fail })
			if xn, _ := missCount(n, name, func(v verdict.Verdict) bool { return v == verdict.Fail }); xn > 0 && xb == 0 {
				out = append(out, pending{p: math.NaN(), show: true, change: Change{Cell: key, What: name + " failures",
					Base: fmt.Sprintf("%d of %d", fb, nb), New: fmt.Sprintf("%d of %d", fn, nn),
					Note: NoteUnassertedSafety, Regression: true}})
				continue
			}
		}
		pv := stats.FisherGreater(fb, nb, fn, nn)
		out = append(out, pending{p: pv, worse: fn*nb > fb*nn, show: fn*nb != fb*nn, change: Change{Cell: key, What: name + " failures",
			Base: fmt.Sprintf("%d of %d", fb, nb), New: fmt.Sprintf("%d of %d", fn, nn), P: &pv, Note: "can race: rate test"}})
	}
	return out
}

func stuckRuns(ss []Summary) int {
	n := 0
	for _, s := range ss {
		if len(s.Stuck) > 0 {
			n++
		}
	}
	return n
}

func checksOf(sides ...[]Summary) map[string]bool {
	m := map[string]bool{}
	for _, ss := range sides {
		for _, s := range ss {
			for name := range s.Checks {
				m[name] = true
			}
		}
	}
	return m
}

// missCount counts the runs whose verdict of check name is bad, out of
// the runs that have that check.
func missCount(ss []Summary, name string, bad func(verdict.Verdict) bool) (misses, runs int) {
	for _, s := range ss {
		if r, ok := s.Checks[name]; ok && !s.Interrupted {
			runs++
			if bad(r.Verdict) {
				misses++
			}
		}
	}
	return misses, runs
}
