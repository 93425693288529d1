package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/verdict"
)

var update = flag.Bool("update", false, "rewrite the golden files (and the sample run folder) in testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with: go test ./report -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (refresh with: go test ./report -update)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// fixedReport is a check report that does not depend on the checker, so
// that the golden tables change only when report does.
func fixedReport() check.Report {
	return check.Report{Verdict: verdict.Fail, Checks: map[string]check.Result{
		verdict.Exclusion: {Verdict: verdict.Fail, Count: 1, Metrics: map[string]float64{"holds": 41, "overlaps": 1},
			Violations: []check.Violation{{Check: verdict.Exclusion, Lock: "l",
				Message: `lock "l" held by two processes at once: process 4 and process 5`,
				Holders: []check.Holder{{Process: 4, From: 1, To: 3, Token: 120, FromLine: 2, ToLine: 4}, {Process: 5, From: 2, To: 5, Token: 121, FromLine: 3, ToLine: 6}},
				Lines:   []int{2, 3}}}},
		verdict.Fairness: {Verdict: verdict.Pass, Metrics: map[string]float64{"jain_index": 0.995}},
		verdict.Liveness: {Verdict: verdict.Unknown, Note: "the history ends while a process waits and a fault is active, so a stall cannot be ruled out"},
		verdict.Herd:     {Verdict: verdict.Pass, Metrics: map[string]float64{"handoffs": 40, "wakeups": 42, "wakeups_per_handoff": 1.05}},
	}}
}

// goldenSummary is the default fixture summarized with fixedReport.
func goldenSummary() Summary {
	f := defaultFixture()
	return Summarize(f.run(), check.Checked{Ops: check.Pair(f.events()), Report: fixedReport()})
}

// suiteCells are four cells covering every column's cases.
func suiteCells() []Cell {
	base := goldenSummary()
	cell := func(lock, scen string, v verdict.Verdict, tput float64, handoff Latency, exp verdict.Verdict, match bool) Cell {
		s := base
		s.Lock, s.Scenario, s.Verdict, s.ThroughputPerS = lock, scen, v, tput
		s.LatencyMS = map[string]Latency{}
		for k, l := range base.LatencyMS {
			s.LatencyMS[k] = l
		}
		s.LatencyMS[LatHandoff] = handoff
		if v != verdict.Fail {
			s.ViolationCount, s.Violations = 0, nil
			s.Checks = map[string]check.Result{verdict.Herd: base.Checks[verdict.Herd]}
		}
		return Cell{Summary: s, Expected: exp, Matches: match, Dir: "runs/" + lock + "-" + scen}
	}
	return []Cell{
		cell("queue", "contention", verdict.Pass, 2431.04, Latency{Count: 2000, P50: 0.412, P90: 0.9, P99: 1.9, P999: 3.2, Max: 4.5}, verdict.Pass, true),
		cell("queue-naive", "contention", verdict.Fail, 2012.5, Latency{Count: 1800, P50: 0.45, P90: 2.1, P99: 12.25, P999: 30.5, Max: 41}, verdict.Fail, true),
		cell("txn-watch", "contention", verdict.Unknown, 301.7, Latency{Count: 300, P50: 14.5, P90: 70, P99: 150.2, P999: 180, Max: 190}, verdict.Pass, false),
		cell("mutex", "leader-kill", verdict.Pass, 0, Latency{}, "", false),
	}
}
