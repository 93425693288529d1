package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
)

func TestBenchSpecValidate(t *testing.T) {
	ok := BenchSpec{Locks: []string{"queue"}, Clients: []int{2}, Duration: time.Second, FloorDuration: time.Second,
		TargetLock: "queue", TargetClients: 8, Dir: "x"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid spec: %v", err)
	}
	for _, tc := range []struct {
		change func(*BenchSpec)
		want   string
	}{
		{func(s *BenchSpec) { s.Locks = nil }, "no lock"},
		{func(s *BenchSpec) { s.Locks = []string{"nope"} }, `unknown lock "nope"`},
		{func(s *BenchSpec) { s.Clients = nil }, "no client counts"},
		{func(s *BenchSpec) { s.Clients = []int{0} }, "clients 0: must be ≥1"},
		{func(s *BenchSpec) { s.Duration = 0 }, "duration 0s: must be > 0"},
		{func(s *BenchSpec) { s.Hold = -1 }, "hold -1ns: must be ≥0"},
		{func(s *BenchSpec) { s.FloorDuration = 0 }, "floor duration 0s"},
		{func(s *BenchSpec) { s.CellFloor = -1 }, "cell floor -1ns"},
		{func(s *BenchSpec) { s.RecordRuns = -1 }, "record runs -1"},
		{func(s *BenchSpec) { s.RecordDuration = -1 }, "record duration -1ns"},
		{func(s *BenchSpec) { s.PairedRounds = -1 }, "paired rounds -1: must be ≥0"},
		{func(s *BenchSpec) { s.PairedRounds = 2 }, "paired slice 0s: must be > 0"},
		{func(s *BenchSpec) { s.PairedSlice = -1 }, "paired slice -1ns: must be > 0"},
		{func(s *BenchSpec) { s.TargetLock = "nope" }, `target lock: unknown lock "nope"`},
		{func(s *BenchSpec) { s.TargetClients = 0 }, "target clients 0"},
		{func(s *BenchSpec) { s.KeepAlive = "sometimes" }, "sometimes"},
		{func(s *BenchSpec) { s.Dir = "" }, "output folder"},
		{func(s *BenchSpec) { s.Ramp = s.Duration }, "ramp 1s: must be ≥0 and shorter than the duration"},
		{func(s *BenchSpec) { s.LeaseTTL = 1500 * time.Millisecond }, "lease ttl 1.5s"},
	} {
		s := ok
		tc.change(&s)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "--") {
			t.Errorf("want an error mentioning %q (and no flag), got %v", tc.want, err)
		}
	}
	sc := ok.scenario(64)
	if sc.Name != BenchScenario || sc.Clients != 64 || sc.Duration.D() != time.Second || sc.Workload.Hold != 0 {
		t.Errorf("scenario: %+v", sc)
	}
	ramped := ok
	ramped.Ramp, ramped.LeaseTTL = 640*time.Millisecond, 60*time.Second
	if sc := ramped.scenario(64); sc.Workload.Stagger.D() != 10*time.Millisecond || sc.TTL() != time.Minute {
		t.Errorf("ramp 640ms over 64 clients, lease TTL 60s: stagger %s, TTL %s, want 10ms and 1m0s", sc.Workload.Stagger, sc.TTL())
	}
}

func lat(p50, p99 float64) report.Latency { return report.Latency{Count: 10, P50: p50, P99: p99} }

// TestBenchFinish: ratios to the floor and to mutex, and the targets.
func TestBenchFinish(t *testing.T) {
	b := &report.Bench{
		TargetLock: "queue", TargetClients: 8,
		Floor:      &report.Floor{CommitsPerS: 2000, LatencyMS: report.Latency{Count: 1, P50: 0.5}},
		TwoWriters: &report.Floor{Writers: 2, CommitsPerS: 1600, PerWriterPerS: 800},
		Ideal:      &report.Ideal{RatePerS: 1000, StepP50MS: 1},
		Cells: []report.BenchCell{
			{Lock: "queue", Clients: 8, ThroughputPerS: 1200, HandoffMS: lat(1.2, 3)},
			{Lock: "mutex", Clients: 8, ThroughputPerS: 100, HandoffMS: lat(90, 110)},
			{Lock: "queue", Clients: 2, ThroughputPerS: 500, HandoffMS: lat(1, 2)},
			{Lock: "txn", Clients: 8, Error: "boom"},
			// Its own floor, measured just before it.
			{Lock: "txn", Clients: 2, ThroughputPerS: 500, HandoffMS: lat(1, 2),
				Floor: &report.Floor{CommitsPerS: 1000, LatencyMS: report.Latency{Count: 1, P50: 1}}},
		},
		Recording: &report.Recording{AppendNS: 500, Runs: []report.RecordingRun{
			{Record: true, CountedPerS: 960, Events: 4000, Acquisitions: 1000}, {Record: false, CountedPerS: 1000},
			{Record: false, CountedPerS: 1000}, {Record: true, CountedPerS: 980, Events: 6000, Acquisitions: 1000},
			{Record: false, Error: "x"},
		}},
	}
	finishBench(b)
	q := b.Cells[0]
	if q.XIdeal != 1.2 || q.HandoffXIdeal != 1.2 {
		t.Errorf("queue 8: ×ideal %v, handoff ÷ ideal step %v", q.XIdeal, q.HandoffXIdeal)
	}
	if q.XFloor != 0.6 || q.XMutex != 12 || q.HandoffOverCommit != 2.4 || q.XTwoWriters != 1.5 {
		t.Errorf("queue 8: ×floor %v ×mutex %v handoff/commit %v ×two writers %v", q.XFloor, q.XMutex, q.HandoffOverCommit, q.XTwoWriters)
	}
	if m := b.Cells[1]; m.XMutex != 1 {
		t.Errorf("mutex ×mutex %v", m.XMutex)
	}
	if q2 := b.Cells[2]; q2.XMutex != 0 || q2.XFloor != 0.25 {
		t.Errorf("queue 2 (no mutex cell): %+v", q2)
	}
	if c := b.Cells[4]; c.XFloor != 0.5 || c.HandoffOverCommit != 1 {
		t.Errorf("cell with its own floor: %+v", c)
	}
	// 5 events × 500 ns = 2.5 µs per acquisition, at 1000/s: 0.25 %.
	if r := b.Recording; r.EventsPerAcq != 5 || r.EstimatedCost != 0.0025 {
		t.Errorf("estimate: %v events/acq, cost %v", r.EventsPerAcq, r.EstimatedCost)
	}
	if r := b.Recording; r.OnPerS != 970 || r.OffPerS != 1000 || r.Ratio != 0.97 || r.RatioOfMeans != 0.97 || len(r.PairRatios) != 2 || r.PairRatios[0] != 0.96 || r.PairRatios[1] != 0.98 {
		t.Errorf("recording %+v", r)
	}
	if r := b.Recording; r.CostSEPct != 0 {
		t.Errorf("separate runs have a cost's standard error: %v", r.CostSEPct)
	}
	// Slices of one run: the pairs' costs, 4 % and 2 %, spread by 1 point.
	b.Recording.Slices = 5
	finishBench(b)
	if r := b.Recording; r.CostSEPct != 1 {
		t.Errorf("cost's standard error %v, want 1", r.CostSEPct)
	}
	want := map[string]bool{
		"queue at 8 clients: throughput ÷ mutex":                             true,
		"queue at 8 clients: throughput ÷ ideal handoff rate":                true,
		"queue at 8 clients: handoff p50 ÷ ideal step p50":                   true,
		"recording cost, % of throughput":                                    true,
		"recording estimate (appends on the handoff chain), % of throughput": true,
	}
	if len(b.Targets) != len(want) {
		t.Fatalf("targets %+v", b.Targets)
	}
	for _, tg := range b.Targets {
		if met, ok := want[tg.Name]; !ok || tg.Met != met {
			t.Errorf("target %+v", tg)
		}
	}
	// A slow queue misses them; its ratios to the floor (0.15, 10) are
	// figures, not targets.
	b.Cells[0].ThroughputPerS, b.Cells[0].HandoffMS = 300, lat(5, 9)
	finishBench(b)
	if len(b.Targets) != len(want) {
		t.Fatalf("targets of a slow queue %+v", b.Targets)
	}
	for _, tg := range b.Targets[:3] {
		if tg.Met {
			t.Errorf("target met by a slow queue: %+v", tg)
		}
	}
	// Appends that grew slow (50 µs each, 5 an acquisition, at 1000/s:
	// 25 %) miss the estimate's target whatever the slices measured.
	b.Recording.AppendNS = 50_000
	finishBench(b)
	if tg := b.Targets[len(b.Targets)-1]; !strings.HasPrefix(tg.Name, "recording estimate") || tg.Met || tg.Value != 25 {
		t.Errorf("slow appends: %+v", tg)
	}
}

// TestBenchPairedBare: the bare loop's ratios per round (B = bare ÷
// ideal, R = runner ÷ bare), their medians and standard errors, and the
// two targets they are judged on: met, missed or not resolved with their
// noise, and never resolved on fewer than MinBareRounds rounds.
func TestBenchPairedBare(t *testing.T) {
	rounds := func(n int, bare, runner float64) []report.PairedRun {
		var out []report.PairedRun
		for i := range n {
			// ±2 % around the wanted ratios, alternating: a spread to
			// estimate the noise from.
			j, k := 1+0.02*float64(i%3-1), 1+0.02*float64(i%5-2)/2
			out = append(out, report.PairedRun{Round: i, IdealRatePerS: 1000, IdealStepP50MS: 1,
				BareRatePerS: 1000 * bare * j, RatePerS: 1000 * bare * j * runner * k, HandoffP50MS: 1.1})
		}
		return out
	}
	tests := []struct {
		name         string
		runs         []report.PairedRun
		bare, runner string // met, missed, unresolved
		few          bool
	}{
		{"both met", rounds(20, 0.9, 0.99), "met", "met", false},
		{"the lock short", rounds(20, 0.7, 0.99), "missed", "met", false},
		{"the runner short", rounds(20, 0.9, 0.9), "met", "missed", false},
		{"on the line", rounds(20, 0.85, 0.97), "unresolved", "unresolved", false},
		{"too few rounds", rounds(4, 0.9, 0.99), "unresolved", "unresolved", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &report.Bench{Scenario: BenchScenario, TargetLock: "queue", TargetClients: 8,
				Paired: &report.Paired{Lock: "queue", Clients: 8, IdealClients: 8, Rounds: len(tt.runs), SliceS: 1.5, Runs: tt.runs}}
			finishBench(b)
			if p := b.Paired; p.UsedBare != len(tt.runs) || p.Runs[0].B == 0 || p.Runs[0].R == 0 || p.BareXIdealSE == 0 || p.RunnerXBareSE == 0 {
				t.Fatalf("paired %+v", p)
			}
			got := map[string]string{}
			for _, tg := range b.Targets {
				mark := "missed"
				switch {
				case tg.Unresolved:
					mark = "unresolved"
				case tg.Met:
					mark = "met"
				}
				switch {
				case strings.Contains(tg.Name, "bare Lock/Unlock loop ÷ ideal"):
					got["bare"] = mark
				case strings.Contains(tg.Name, "the runner's throughput ÷ the bare loop's"):
					got["runner"] = mark
				default:
					continue
				}
				if few := strings.Contains(tg.Name, "fewer than the 20 rounds"); few != tt.few {
					t.Errorf("%q: says fewer rounds %v, want %v", tg.Name, few, tt.few)
				}
			}
			if got["bare"] != tt.bare || got["runner"] != tt.runner {
				t.Errorf("bare target %s, runner target %s; want %s, %s (targets %+v)", got["bare"], got["runner"], tt.bare, tt.runner, b.Targets)
			}
		})
	}
}

// TestBenchPaired: the paired rounds' ratios, their median and range, the
// targets they replace, and how the table and the lines show them.
func TestBenchPaired(t *testing.T) {
	b := &report.Bench{
		Scenario: BenchScenario, TargetLock: "queue", TargetClients: 8,
		Ideal: &report.Ideal{RatePerS: 1000, StepP50MS: 1},
		Cells: []report.BenchCell{{Lock: "queue", Clients: 8, ThroughputPerS: 700, HandoffMS: lat(1.4, 3)}},
		Paired: &report.Paired{Lock: "queue", Clients: 8, IdealClients: 8, Rounds: 4, SliceS: 1.5, Runs: []report.PairedRun{
			{Round: 0, Order: "ideal first", IdealRatePerS: 800, IdealStepP50MS: 1, RatePerS: 720, HandoffP50MS: 1.1},
			{Round: 1, Order: "lock first", IdealRatePerS: 1000, IdealStepP50MS: 0.8, RatePerS: 800, HandoffP50MS: 1.2},
			{Round: 2, Order: "ideal first", IdealRatePerS: 900, RatePerS: 900, Error: "lock slice: boom"},
			{Round: 3, Order: "lock first", IdealRatePerS: 700, IdealStepP50MS: 1.25, RatePerS: 630, HandoffP50MS: 1.25},
		}},
	}
	finishBench(b)
	p := b.Paired
	if p.Used != 3 || p.XIdealMedian != 0.9 || p.XIdealMin != 0.8 || p.XIdealMax != 0.9 ||
		p.HandoffXIdealMedian != 1.1 || p.HandoffXIdealMin != 1 || p.HandoffXIdealMax != 1.5 {
		t.Errorf("paired %+v", p)
	}
	if r := p.Runs[2]; r.X != 0 || r.H != 0 {
		t.Errorf("a round with an error has ratios: %+v", r)
	}
	// The cell alone misses 0.85 against the ideal of the start (0.7); the
	// paired median (0.9) does not, and is what is judged: with its noise
	// (0.8, 0.9, 0.9: median standard error 0.042) it is not resolved.
	targets := map[string]report.Target{}
	for _, tg := range b.Targets {
		targets[tg.Name] = tg
	}
	x, okX := targets["queue at 8 clients: throughput ÷ ideal handoff rate (median of 3 paired rounds)"]
	h, okH := targets["queue at 8 clients: handoff p50 ÷ ideal step p50 (median of 3 paired rounds)"]
	if !okX || !x.Met || x.Value != 0.9 || x.Noise != 0.084 || !x.Unresolved || !okH || !h.Met || h.Value != 1.1 {
		t.Errorf("paired targets: %+v", b.Targets)
	}
	for name := range targets {
		if strings.Contains(name, "ideal") && !strings.Contains(name, "paired") {
			t.Errorf("single-ideal target %q judged beside the paired ones", name)
		}
	}
	if c := b.Cells[0]; c.XIdeal != 0.7 || c.HandoffXIdeal != 1.4 {
		t.Errorf("the cell's own ratios changed: %+v", c)
	}
	var out bytes.Buffer
	if err := report.BenchTable(&out, b); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"paired with the ideal: queue × 8 clients, 4 rounds of 1.5s slices (one of the ideal at 8 clients and one of the lock a round, in alternating order): throughput ÷ ideal median 0.900 (0.800–0.900), handoff p50 ÷ ideal step median 1.100 (1.000–1.500); 3 with figures; per round: 0.90, 0.80, error, 0.90",
		"queue at 8 clients: against the ideal measured once at the start: throughput ÷ ideal 0.700, handoff p50 ÷ ideal step 1.400 (no target",
		"target queue at 8 clients: throughput ÷ ideal handoff rate (median of 3 paired rounds): 0.900 ± 0.084 (>= 0.85) not resolved",
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, out.String())
		}
	}
	out.Reset()
	if err := report.WriteBenchResultLines(&out, b); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "BenchmarkPairedIdeal/lock=queue/scenario=contention/clients=8 1 "); n != 3 ||
		!strings.Contains(out.String(), "clients=8 1 0.8 x-ideal 1.5 handoff-x-ideal 800 acquires/s 1000 ideal-steps/s") {
		t.Errorf("%d paired lines:\n%s", n, out.String())
	}

	// Without the paired rounds, or when none gave a ratio, the cell's own
	// ratios are judged, as before.
	for _, change := range []func(){func() { b.Paired = nil }, func() {
		b.Paired = &report.Paired{Lock: "queue", Clients: 8, Rounds: 1, Runs: []report.PairedRun{{Error: "x"}}}
	}} {
		change()
		finishBench(b)
		var names []string
		for _, tg := range b.Targets {
			names = append(names, tg.Name)
		}
		got := strings.Join(names, "; ")
		if strings.Contains(got, "paired") || !strings.Contains(got, "queue at 8 clients: throughput ÷ ideal handoff rate") ||
			!strings.Contains(got, "queue at 8 clients: handoff p50 ÷ ideal step p50") {
			t.Errorf("targets without paired figures: %s", got)
		}
	}
}

func TestMeasureAppendNS(t *testing.T) {
	if ns := MeasureAppendNS(1000); ns <= 0 || ns > float64(time.Millisecond) {
		t.Errorf("append %v ns", ns)
	}
}

func TestLatencyOf(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	l := harness.LatencyOf(ds)
	if l.Count != 100 || l.P50 != 50 || l.P90 != 90 || l.P99 != 99 || l.Max != 100 || l.Mean != 50.5 {
		t.Errorf("%+v", l)
	}
	if ds[0] != 100*time.Millisecond {
		t.Error("harness.LatencyOf sorted its argument")
	}
	if l := harness.LatencyOf(nil); l.Count != 0 || l.P50 != 0 {
		t.Error("empty")
	}
}

// TestBenchTableAndLines: the figures RunBench derives, as the table and
// the benchmark lines show them.
func TestBenchTableAndLines(t *testing.T) {
	b := &report.Bench{
		Scenario: BenchScenario, TargetLock: "queue", TargetClients: 8,
		Floor:      &report.Floor{Writers: 1, Commits: 6000, DurationS: 3, CommitsPerS: 2000, PerWriterPerS: 2000, LatencyMS: report.Latency{Count: 6000, P50: 0.5, P99: 1.5}},
		TwoWriters: &report.Floor{Writers: 2, Commits: 4800, DurationS: 3, CommitsPerS: 1600, PerWriterPerS: 800, LatencyMS: report.Latency{Count: 4800, P50: 1.25, P99: 3}},
		Cells: []report.BenchCell{
			{Lock: "queue", Clients: 8, ThroughputPerS: 1200, HandoffMS: lat(1.2, 3), AcquireMS: lat(6, 9)},
			{Lock: "queue", Clients: 64, ThroughputPerS: 1100, HandoffMS: lat(1.3, 4), AcquireMS: lat(50, 90)},
			{Lock: "mutex", Clients: 8, ThroughputPerS: 100, HandoffMS: lat(90, 110), AcquireMS: lat(95, 120), Violations: 2, Verdict: "fail", Run: "r1"},
			{Lock: "txn", Clients: 8, Error: "dial timeout"},
		},
		Recording: &report.Recording{Lock: "queue", Clients: 8, Runs: []report.RecordingRun{{Record: true, CountedPerS: 990}, {Record: false, CountedPerS: 1000}}},
	}
	finishBench(b)
	var out bytes.Buffer
	if err := report.BenchTable(&out, b); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"×floor", "×mutex", "handoff p50 ÷ commit p50", "│ queue │       8 │ 1200.0 │      - │   0.60 │   12.0 │",
		"floor: 2000 commits/s, commit p50 0.50 ms",
		"floor, two writers: 800 commits/s each (1600 together), commit p50 1.25 ms, p99 3.00 ms = 0.40× one writer's rate",
		"queue at 8 clients: throughput ÷ one writer's rate beside another: 1.500", "recording: queue × 8 clients, on 990.0/s, off 1000.0/s: on/off 0.990",
		"target queue at 8 clients: throughput ÷ mutex: 12.000 (>= 5.00) met", "txn × 8 clients: error: dial timeout", "mutex × 8 clients: 2 violations"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, out.String())
		}
	}
	if !b.HasViolations() {
		t.Error("HasViolations false with a failing cell")
	}
	out.Reset()
	if err := report.WriteBenchResultLines(&out, b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"pkg: github.com/lockbench/lockbench",
		"BenchmarkFloor/put 1 500000 ns/commit 1500000 p99-ns/commit 2000 commits/s",
		"BenchmarkFloor/put-two-writers 1 1250000 ns/commit 3000000 p99-ns/commit 1600 commits/s",
		"BenchmarkLock/lock=queue/scenario=contention/clients=8 1 ",
		"BenchmarkLock/lock=queue/scenario=contention/clients=64 1 ",
		"BenchmarkLock/lock=mutex/scenario=contention/clients=8 1 ",
		"BenchmarkRecording/lock=queue/scenario=contention/clients=8/record=on 1 990 acquires/s",
		"BenchmarkRecording/lock=queue/scenario=contention/clients=8/record=off 1 1000 acquires/s",
	}
	if len(lines) != len(want) {
		t.Fatalf("lines:\n%s", out.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], w)
		}
	}
	if !strings.Contains(lines[4], "1100 acquires/s") || !strings.Contains(lines[5], "2 violations") {
		t.Errorf("cell lines:\n%s", out.String())
	}
}

// TestRunBench runs a tiny benchmark end to end on a real cluster.
func TestRunBench(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	dir := filepath.Join(t.TempDir(), "bench")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress []string
	b, err := RunBench(ctx, BenchSpec{
		Locks: []string{"queue", "mutex", "rpc"}, Clients: []int{2}, Duration: 500 * time.Millisecond,
		FloorDuration: 300 * time.Millisecond, CellFloor: 100 * time.Millisecond, TargetLock: "queue", TargetClients: 2, RecordRuns: 1, RecordDuration: 400 * time.Millisecond,
		PairedRounds: 2, PairedSlice: 300 * time.Millisecond, Seed: 1, Dir: dir, Progress: func(s string) { progress = append(progress, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.Floor == nil || b.Floor.Commits == 0 || b.Floor.LatencyMS.P50 <= 0 || b.FloorEnd == nil {
		t.Fatalf("floor %+v, at the end %+v", b.Floor, b.FloorEnd)
	}
	if f := b.TwoWriters; f == nil || f.Writers != 2 || f.Commits == 0 || f.PerWriterPerS <= 0 || f.PerWriterPerS >= f.CommitsPerS {
		t.Fatalf("floor with two writers %+v", f)
	}
	if len(b.Cells) != 3 {
		t.Fatalf("cells %+v", b.Cells)
	}
	for _, c := range b.Cells {
		if c.Error != "" || c.Acquisitions == 0 || c.XFloor <= 0 || c.XMutex <= 0 || c.XTwoWriters <= 0 || c.Note != "" || c.Verdict != "pass" || c.Floor == nil {
			t.Errorf("cell %+v", c)
		}
		if _, err := os.Stat(filepath.Join(dir, c.Run, rundir.SummaryFile)); err != nil {
			t.Errorf("cell run folder: %v", err)
		}
		// A fault-free cell dials the members directly, and says so: its
		// config.json holds what it dialed, not the bench's front doors.
		var cfg rundir.Config
		if data, err := os.ReadFile(filepath.Join(dir, c.Run, rundir.ConfigFile)); err != nil || json.Unmarshal(data, &cfg) != nil {
			t.Errorf("cell config.json: %v", err)
		} else if eps := cfg.Cluster.Endpoints; len(eps) != 3 || slices.Equal(eps, b.Cluster.Endpoints) {
			t.Errorf("cell %s/%d recorded endpoints %v; the bench's front doors are %v", c.Lock, c.Clients, eps, b.Cluster.Endpoints)
		}
		if _, err := os.Stat("/proc/self/status"); err == nil && c.PeakRSSMB <= 0 {
			t.Errorf("no peak RSS on Linux: %+v", c)
		}
	}
	if id := b.Ideal; id == nil || id.Steps == 0 || id.RatePerS <= 0 || id.StepP50MS <= 0 || id.Errors != 0 || id.Clients != 2 {
		t.Errorf("ideal handoff %+v", id)
	}
	if rl := b.Relay; rl == nil || rl.Rounds == 0 || rl.PutMS.DirectP50 <= 0 || rl.PutMS.FrontDoorP50 <= 0 || rl.GetMS.ProxyP50 <= 0 || b.RelayCostUS != rl.FrontDoorUS {
		t.Errorf("relay %+v, relay_cost_us %v", rl, b.RelayCostUS)
	}
	for _, c := range b.Cells {
		if c.XIdeal <= 0 || c.HandoffXIdeal <= 0 {
			t.Errorf("cell without ideal ratios: %+v", c)
		}
	}
	r := b.Recording
	if r == nil || r.Slices != 2 || len(r.Runs) != 2 || r.Ratio <= 0 || r.AppendNS <= 0 || r.EventsPerAcq < 4 {
		t.Fatalf("recording %+v", r)
	}
	for i, run := range r.Runs {
		if run.Error != "" || run.CountedPerS <= 0 || run.Acquisitions <= 0 || run.Record != (i == 0) {
			t.Errorf("recording slice %d: %+v", i, run)
		}
	}
	p := b.Paired
	if p == nil || p.Rounds != 2 || len(p.Runs) != 2 || p.Used != 2 || p.IdealClients != 2 || p.XIdealMedian <= 0 || p.HandoffXIdealMedian <= 0 {
		t.Fatalf("paired %+v", p)
	}
	for i, run := range p.Runs {
		if run.Error != "" || run.RatePerS <= 0 || run.X <= 0 || run.H <= 0 || run.IdealRatePerS <= 0 || run.HandoffP50MS <= 0 ||
			run.BareRatePerS <= 0 || run.B <= 0 || run.R <= 0 ||
			run.ElapsedS < 0.3 || run.Order != map[bool]string{true: "ideal, lock, bare", false: "bare, lock, ideal"}[i == 0] {
			t.Errorf("paired round %d: %+v", i, run)
		}
	}
	var pairedTargets int
	for _, tg := range b.Targets {
		if strings.Contains(tg.Name, "ideal") && !strings.Contains(tg.Name, "(median of 2 paired rounds)") {
			t.Errorf("an ideal target not on the paired rounds: %+v", tg)
		}
		if strings.Contains(tg.Name, "paired rounds") {
			pairedTargets++
		}
		if strings.Contains(tg.Name, "bare") && !tg.Unresolved {
			t.Errorf("a bare-loop target resolved on 2 rounds: %+v", tg)
		}
	}
	if pairedTargets != 4 {
		t.Errorf("%d paired targets: %+v", pairedTargets, b.Targets)
	}
	if !slices.ContainsFunc(progress, func(s string) bool { return strings.HasPrefix(s, "paired 2/2: queue × 2 clients") }) {
		t.Errorf("no progress of the paired rounds: %q", progress)
	}
	back, err := report.LoadBench(dir)
	if err != nil || len(back.Cells) != 3 || back.Cluster.Members != 3 || back.Host.CPUs == 0 || back.Recording == nil || back.Paired == nil || len(back.Paired.Runs) != 2 {
		t.Fatalf("bench.json: %v %+v", err, back)
	}
	// Lines from bench.json read back are the lines of the run.
	var lines, live bytes.Buffer
	if err := report.WriteBenchResultLines(&lines, back); err != nil || strings.Count(lines.String(), "BenchmarkLock/") != 3 {
		t.Errorf("lines from bench.json: %v\n%s", err, lines.String())
	}
	if err := report.WriteBenchResultLines(&live, b); err != nil || live.String() != lines.String() {
		t.Errorf("lines from bench.json differ from the run's:\n%s\n%s", lines.String(), live.String())
	}
}

// TestNewTarget: a figure with noise misses its target only when its whole
// interval is on the wrong side, and straddling the target is unresolved.
func TestNewTarget(t *testing.T) {
	for _, tc := range []struct {
		v, noise, target float64
		op               string
		met, unresolved  bool
	}{
		{2, 0, 3, "<=", true, false},
		{3, 0, 3, "<=", true, false},
		{3.2, 0, 3, "<=", false, false},
		{3.2, 2.5, 3, "<=", true, true}, // 0.7–5.7: straddles 3
		{1, 1.5, 3, "<=", true, false},  // −0.5–2.5: below
		{8, 2.5, 3, "<=", false, false}, // 5.5–10.5: above
		{0.9, 0, 0.85, ">=", true, false},
		{0.8, 0, 0.85, ">=", false, false},
		{0.8, 0.1, 0.85, ">=", true, true},
		{0.7, 0.1, 0.85, ">=", false, false},
	} {
		got := newTarget("x", tc.v, tc.noise, tc.op, tc.target)
		if got.Met != tc.met || got.Unresolved != tc.unresolved || got.Noise != tc.noise {
			t.Errorf("%v ± %v %s %v: met %v unresolved %v, want %v %v", tc.v, tc.noise, tc.op, tc.target, got.Met, got.Unresolved, tc.met, tc.unresolved)
		}
	}
}

// TestBenchFileCarriesItsVersion: bench.json names the build that wrote
// it and its format at its top level, as every file lockbench writes.
func TestBenchFileCarriesItsVersion(t *testing.T) {
	b, err := json.Marshal(newBenchRun(t.Context(), BenchSpec{Dir: t.TempDir()}).b)
	if err != nil {
		t.Fatal(err)
	}
	var top struct {
		Schema    int    `json:"schema_version"`
		Lockbench string `json:"lockbench_version"`
	}
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	if top.Schema != rundir.SchemaVersion || top.Lockbench == "" || top.Lockbench != rundir.ThisBuild() {
		t.Errorf("bench.json: schema_version %d, lockbench_version %q; want %d, %q", top.Schema, top.Lockbench, rundir.SchemaVersion, rundir.ThisBuild())
	}
}
