package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// openBench is a swept open-loop bench, as harness.runOpenBench fills it.
func openBench() *Bench {
	pt := func(frac, offered, achieved, p50, p99 float64, ok bool) RatePoint {
		return RatePoint{Fraction: frac, OfferedPerS: offered, AchievedPerS: achieved, Acquisitions: int(3 * achieved),
			AcquireMS: Latency{Count: 10, P50: p50, P99: p99}, QueuedMS: Latency{Count: 10, P99: p99 / 2},
			ServiceMS: Latency{Count: 10, P50: p50, P99: p99 / 2}, Sustained: ok, Verdict: "pass", Run: "r"}
	}
	return &Bench{ID: "bench-x", DurationS: 3, OpenLoop: &OpenLoopBench{Arrivals: "uniform", Clients: 8, Sweep: true, Method: "the method",
		Strategies: []RateStrategy{
			{Lock: "queue", SaturationPerS: 150,
				Probes: []RatePoint{pt(0, 20, 20, 2, 5, true), pt(0, 160, 140, 50, 900, false), pt(0, 150, 149, 9, 40, true)},
				Points: []RatePoint{pt(0.5, 75, 75, 3, 8, true), pt(0.8, 120, 119.5, 4, 21.5, true), pt(0.95, 142.5, 141, 6, 60, true)}},
			{Lock: "mutex", Error: "no offered rate was sustained, down to 1.0/s"},
		}}}
}

func TestBenchTableOpenLoop(t *testing.T) {
	var out bytes.Buffer
	if err := BenchTable(&out, openBench()); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, w := range []string{"saturation /s", "│ queue │         150.0 │      80 % │      120.0 │       119.5 │           4.00 │           21.5 │", "open loop: uniform arrivals served by a pool of 8 clients",
		"sweep: the method", "queue: probes (offered /s, ✓ sustained): 20.0✓ 160.0✗ 150.0✓ → saturation 150.0/s", "mutex: error: no offered rate"} {
		if !strings.Contains(s, w) {
			t.Errorf("table lacks %q:\n%s", w, s)
		}
	}
	if strings.Contains(s, "×ideal") {
		t.Errorf("an open-loop bench prints the closed-loop cells' table:\n%s", s)
	}
}

func TestBenchHTMLOpenLoop(t *testing.T) {
	var out bytes.Buffer
	if err := WriteBenchHTML(&out, openBench()); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	// Every queue run with figures is a point on each of its two lines.
	if n := strings.Count(page, `class="rate-point"`); n != 2*6 {
		t.Errorf("%d rate points, want 12 (6 queue runs × p50, p99)", n)
	}
	for _, w := range []string{"<svg", `class="rate-saturation"`, "queue saturation 150.0/s", "queue p99", `data-lock="queue"`, "80 %", "offered rate"} {
		if !strings.Contains(page, w) {
			t.Errorf("bench.html lacks %q", w)
		}
	}
	if strings.Contains(page, "http://") && !strings.Contains(page, "http://www.w3.org/2000/svg") {
		t.Error("bench.html fetches something")
	}
}

func TestBenchOpenLoopFigures(t *testing.T) {
	b := openBench()
	var lines bytes.Buffer
	w := bufio.NewWriter(&lines)
	writeOpenLoopLines(w, b)
	w.Flush()
	if !strings.Contains(lines.String(), "BenchmarkOpenLoop/lock=queue/arrivals=uniform/clients=8/offered=120 1 4000000 ns/acquire 21500000 p99-ns/acquire 10750000 p99-ns/service 119.5 acquires/s\n") {
		t.Errorf("bench lines:\n%s", lines.String())
	}
	if b.HasViolations() || b.SaturatedFailures() != 0 {
		t.Error("a clean open-loop bench has violations")
	}
	b.OpenLoop.Strategies[0].Probes[1].Violations = 1
	if !b.HasViolations() {
		t.Error("a probe's violation is not the bench's")
	}
	b.OpenLoop.Strategies[0].Probes[1].Saturated = "p99 lag 120 ms"
	if b.HasViolations() || b.SaturatedFailures() != 1 {
		t.Error("a violation on a saturated harness counts as the lock's")
	}
	// bench.json keeps it all, additively.
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var back Bench
	if err := json.Unmarshal(raw, &back); err != nil || back.OpenLoop == nil || back.OpenLoop.Strategies[0].Points[1].AcquireMS.P99 != 21.5 {
		t.Errorf("round trip: %v %+v", err, back.OpenLoop)
	}
}
