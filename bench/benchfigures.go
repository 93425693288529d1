package bench

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/stats"
)

// The benchmark's derived figures: a cell's from its run's summary, then
// the ratios, the recording comparison and the targets from what ran.

// fillCell takes a cell's figures from its run's summary.
func fillCell(cell *report.BenchCell, s report.Summary) {
	cell.Acquisitions = s.Acquisitions
	cell.ThroughputPerS = s.ThroughputPerS
	cell.HandoffMS = trimCDF(s.LatencyMS[report.LatHandoff])
	cell.AcquireMS = trimCDF(s.LatencyMS[report.LatAcquire])
	cell.WakeupsPerHandoff, _ = s.WakeupsPerHandoff()
	cell.Violations = s.TotalViolations()
	cell.Verdict = string(s.Verdict)
	cell.Stopped = s.Stopped
	if s.Saturated() {
		cell.Saturated = s.Saturation.Reason
	}
	if s.EtcdSaturated() {
		cell.EtcdSaturated = s.EtcdOverload.Reason
	}
	if s.Interrupted {
		cell.Stopped = "interrupted"
	}
}

// trimCDF drops the CDF: summary.json in the run folder has it.
func trimCDF(l report.Latency) report.Latency {
	l.CDF = nil
	return l
}

// finishBench computes the ratios and the targets from what ran.
func finishBench(b *report.Bench) {
	mutex := map[int]float64{}
	for _, c := range b.Cells {
		if c.Lock == MutexLock && c.Error == "" {
			mutex[c.Clients] = c.ThroughputPerS
		}
	}
	for i := range b.Cells {
		if b.Cells[i].Error == "" {
			cellRatios(&b.Cells[i], b, mutex[b.Cells[i].Clients])
		}
	}
	if r := b.Recording; r != nil {
		finishRecording(r)
	}
	if p := b.Paired; p != nil {
		finishPaired(p)
	}
	b.Targets = benchTargets(b)
}

// benchTargets are the target cell's targets and recording's. Its ratios
// to the one-writer floor are figures, not targets: a lock writes twice per
// acquisition, so a two-write handoff chain cannot reach half the
// one-writer rate on a disk where a second writer slows the first
// (docs/measurements.md, "Bench"); the ideal handoff is the limit. The two
// against the ideal handoff are judged on the paired medians when the
// paired measurement has figures (report.Bench.PairedJudged): the ideal
// measured once at the start drifts away from a cell measured minutes
// later by as much as the targets' margins (benchpaired.go). The cell's
// own ratios to that ideal are then shown, not judged.
func benchTargets(b *report.Bench) []report.Target {
	var out []report.Target
	paired := b.PairedJudged()
	for _, c := range b.Cells {
		if c.Lock != b.TargetLock || c.Clients != b.TargetClients || c.Error != "" {
			continue
		}
		name := fmt.Sprintf("%s at %d clients", c.Lock, c.Clients)
		if c.XIdeal > 0 && !paired {
			out = append(out, newTarget(name+": throughput ÷ ideal handoff rate", c.XIdeal, 0, ">=", TargetXIdeal))
		}
		if c.HandoffXIdeal > 0 && !paired {
			out = append(out, newTarget(name+": handoff p50 ÷ ideal step p50", c.HandoffXIdeal, 0, "<=", TargetHandoffXIdeal))
		}
		if c.XMutex > 0 && c.Lock != MutexLock {
			out = append(out, newTarget(name+": throughput ÷ mutex", c.XMutex, 0, ">=", TargetXMutex))
		}
	}
	if p := b.Paired; paired {
		name := fmt.Sprintf("%s at %d clients", p.Lock, p.Clients)
		of := fmt.Sprintf(" (median of %d paired rounds)", p.Used)
		if p.Used == 1 {
			of = " (1 paired round)"
		}
		out = append(out, newTarget(name+": throughput ÷ ideal handoff rate"+of, p.XIdealMedian, 2*p.XIdealSE, ">=", TargetXIdeal))
		if p.HandoffXIdealMedian > 0 {
			out = append(out, newTarget(name+": handoff p50 ÷ ideal step p50"+of, p.HandoffXIdealMedian, 2*p.HandoffXIdealSE, "<=", TargetHandoffXIdeal))
		}
		out = append(out, bareTargets(name, p)...)
	}
	if r := b.Recording; r != nil && r.OnPerS > 0 && r.OffPerS > 0 {
		out = append(out, newTarget("recording cost, % of throughput", r.CostPct, 2*r.CostSEPct, "<=", TargetRecordingCostPct))
		// The measured cost's noise is the target's size; the estimate
		// (each append's measured time × appends per acquisition × rate)
		// is steady, and misses when the appends themselves grow slow.
		if r.EstimatedCost > 0 {
			out = append(out, newTarget("recording estimate (appends on the handoff chain), % of throughput", round3(100*r.EstimatedCost), 0, "<=", TargetRecordingCostPct))
		}
	}
	return out
}

// bareTargets are the two targets the bare loop splits the gap to the
// ideal into: the lock's (bare ÷ ideal ≥ TargetBareXIdeal) and the
// runner's (runner ÷ bare ≥ TargetRunnerXBare), each on its median ± two
// standard errors. Over fewer than MinBareRounds rounds neither is
// resolved: the rounds' spread (±15 % drift on a shared machine) leaves a
// median of a few rounds within the targets' margins by chance.
func bareTargets(name string, p *report.Paired) []report.Target {
	if p.UsedBare == 0 {
		return nil
	}
	of := fmt.Sprintf(" (median of %d paired rounds)", p.UsedBare)
	out := []report.Target{
		newTarget(name+": bare Lock/Unlock loop ÷ ideal handoff rate"+of, p.BareXIdealMedian, 2*p.BareXIdealSE, ">=", TargetBareXIdeal),
		newTarget(name+": the runner's throughput ÷ the bare loop's"+of, p.RunnerXBareMedian, 2*p.RunnerXBareSE, ">=", TargetRunnerXBare),
	}
	if p.UsedBare < MinBareRounds {
		for i := range out {
			out[i].Name += fmt.Sprintf(", fewer than the %d rounds it is judged on", MinBareRounds)
			out[i].Met, out[i].Unresolved = true, true
		}
	}
	return out
}

// finishPaired computes each round's ratios, X and H, and their median,
// min and max over the rounds that have them.
func finishPaired(p *report.Paired) {
	var xs, hs []float64
	for i := range p.Runs {
		run := &p.Runs[i]
		run.X, run.H = 0, 0
		if run.Error != "" {
			continue
		}
		if run.IdealRatePerS > 0 && run.RatePerS > 0 {
			run.X = round3(run.RatePerS / run.IdealRatePerS)
			xs = append(xs, run.X)
		}
		if run.IdealStepP50MS > 0 && run.HandoffP50MS > 0 {
			run.H = round3(run.HandoffP50MS / run.IdealStepP50MS)
			hs = append(hs, run.H)
		}
	}
	p.Used = len(xs)
	p.XIdealMedian, p.XIdealMin, p.XIdealMax = spread(xs)
	p.HandoffXIdealMedian, p.HandoffXIdealMin, p.HandoffXIdealMax = spread(hs)
	p.XIdealSE, p.HandoffXIdealSE = round3(stats.MedianStandardError(xs)), round3(stats.MedianStandardError(hs))
	finishBare(p)
}

// finishBare computes each round's bare-loop ratios, B and R, and their
// medians, ranges and standard errors over the rounds that have both.
func finishBare(p *report.Paired) {
	var bs, rs []float64
	for i := range p.Runs {
		run := &p.Runs[i]
		run.B, run.R = 0, 0
		if run.Error != "" || run.BareRatePerS <= 0 || run.IdealRatePerS <= 0 || run.RatePerS <= 0 {
			continue
		}
		run.B, run.R = round3(run.BareRatePerS/run.IdealRatePerS), round3(run.RatePerS/run.BareRatePerS)
		bs, rs = append(bs, run.B), append(rs, run.R)
	}
	p.UsedBare = len(bs)
	p.BareXIdealMedian, p.BareXIdealMin, p.BareXIdealMax = spread(bs)
	p.RunnerXBareMedian, p.RunnerXBareMin, p.RunnerXBareMax = spread(rs)
	p.BareXIdealSE, p.RunnerXBareSE = round3(stats.MedianStandardError(bs)), round3(stats.MedianStandardError(rs))
}

// medianOrZero is stats.Median with 0 for none: bench.json stores 0 for
// a figure it has no sample of, and JSON cannot carry NaN.
func medianOrZero(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return stats.Median(xs)
}

// spread is the median, min and max of xs (zeros for none).
func spread(xs []float64) (median, lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	return round3(medianOrZero(xs)), slices.Min(xs), slices.Max(xs)
}

// cellRatios sets a cell's ratios to the floor (its own when it has one),
// to two writers' rate and to mutex's throughput (0: no mutex cell).
func cellRatios(c *report.BenchCell, b *report.Bench, mutex float64) {
	c.XFloor, c.XMutex, c.XTwoWriters, c.HandoffOverCommit = 0, 0, 0, 0
	floor := b.Floor
	if c.Floor != nil {
		floor = c.Floor
	}
	if floor != nil && floor.CommitsPerS > 0 {
		c.XFloor = round3(c.ThroughputPerS / floor.CommitsPerS)
	}
	if mutex > 0 {
		c.XMutex = round3(c.ThroughputPerS / mutex)
	}
	if tw := b.TwoWriters; tw != nil && tw.PerWriterPerS > 0 {
		c.XTwoWriters = round3(c.ThroughputPerS / tw.PerWriterPerS)
	}
	if floor != nil && floor.LatencyMS.P50 > 0 && c.HandoffMS.Count > 0 {
		c.HandoffOverCommit = round3(c.HandoffMS.P50 / floor.LatencyMS.P50)
	}
	c.XIdeal, c.HandoffXIdeal = 0, 0
	if id := b.Ideal; id != nil && id.RatePerS > 0 {
		c.XIdeal = round3(c.ThroughputPerS / id.RatePerS)
		if id.StepP50MS > 0 && c.HandoffMS.Count > 0 {
			c.HandoffXIdeal = round3(c.HandoffMS.P50 / id.StepP50MS)
		}
	}
}

// finishRecording computes the recording figures from the runs.
func finishRecording(r *report.Recording) {
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
			if ratio, ok := pairRatio(r.Runs[i-1], run); ok {
				r.PairRatios = append(r.PairRatios, round3(ratio))
			}
		}
	}
	r.OnPerS, r.OffPerS, r.Ratio, r.RatioOfMeans, r.CostPct = round1(mean(on)), round1(mean(off)), 0, 0, 0
	if len(on) > 0 && len(off) > 0 {
		r.RatioOfMeans = round3(mean(on) / mean(off))
	}
	if onR, offR := totalRate(r.Runs, true), totalRate(r.Runs, false); onR > 0 && offR > 0 {
		r.CostPct = round3(100 * (1 - onR/offR))
	}
	r.Ratio = round3(medianOrZero(r.PairRatios))
	r.CostSEPct = 0
	if len(r.PairRatios) >= 2 && r.Slices > 0 {
		var costs []float64
		for _, x := range r.PairRatios {
			costs = append(costs, 100*(1-x))
		}
		r.CostSEPct = round3(stats.StandardError(costs))
	}
	recordingEstimate(r)
	r.CPUPerAcqUSOn, r.CPUPerAcqUSOff, r.CPURatio = round1(medianOrZero(cpuOn)), round1(medianOrZero(cpuOff)), 0
	if r.CPUPerAcqUSOn > 0 && r.CPUPerAcqUSOff > 0 {
		r.CPURatio = round3(medianOrZero(cpuOff) / medianOrZero(cpuOn))
	}
}

// pairRatio is on ÷ off of two adjacent runs, when both counted and one
// of each.
func pairRatio(prev, run report.RecordingRun) (float64, bool) {
	if prev.Error != "" || prev.CountedPerS <= 0 || prev.Record == run.Record {
		return 0, false
	}
	onR, offR := run.CountedPerS, prev.CountedPerS
	if prev.Record {
		onR, offR = offR, onR
	}
	return onR / offR, true
}

// totalRate is the grants per second of the runs (or slices) with
// recording on, or off, summed: grants ÷ time.
func totalRate(runs []report.RecordingRun, on bool) float64 {
	var g int64
	var s float64
	for _, run := range runs {
		if run.Error == "" && run.Record == on && run.ElapsedS > 0 {
			g += run.Acquisitions
			s += run.ElapsedS
		}
	}
	if s == 0 {
		return 0
	}
	return float64(g) / s
}

// recordingEstimate sets the events per acquisition (from the runs, when
// they counted their events; sliced runs set it themselves) and the
// estimated share of throughput the appends cost.
func recordingEstimate(r *report.Recording) {
	var events, acqs int64
	for _, run := range r.Runs {
		if run.Error == "" && run.Record {
			events += int64(run.Events)
			acqs += run.Acquisitions
		}
	}
	if acqs > 0 && events > 0 {
		r.EventsPerAcq = round3(float64(events) / float64(acqs))
	}
	r.EstimatedCost = 0
	if r.EventsPerAcq > 0 {
		r.EstimatedCost = math.Round(r.AppendNS*r.EventsPerAcq*r.OffPerS/1e9*1e6) / 1e6
	}
}

// newTarget judges v against t. With noise > 0 (v's ± two standard
// errors) it is missed only when all of v ± noise is on the wrong side of
// t, and unresolved when that interval straddles t.
func newTarget(name string, v, noise float64, op string, t float64) report.Target {
	lo, hi := v-noise, v+noise
	met, unresolved := hi >= t, lo < t && t <= hi
	if op == "<=" {
		met, unresolved = lo <= t, lo <= t && t < hi
	}
	return report.Target{Name: name, Value: v, Noise: noise, Op: op, Target: t, Met: met, Unresolved: unresolved}
}

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

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func round1(v float64) float64 { return math.Round(v*10) / 10 }
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
