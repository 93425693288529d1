package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/verdict"
)

// cmpSummary is a summary with just what compare reads.
func cmpSummary(lock, scen string, v verdict.Verdict, tput, acqP50, acqP99, hP50, hP99 float64) Summary {
	return Summary{Lock: lock, Scenario: scen, Verdict: v, ThroughputPerS: tput,
		LatencyMS: map[string]Latency{
			LatAcquire: {Count: 100, P50: acqP50, P99: acqP99},
			LatHandoff: {Count: 99, P50: hP50, P99: hP99},
		},
		Checks: map[string]check.Result{verdict.Exclusion: {Verdict: v}}}
}

func suiteOf(ss ...Summary) Suite { return Suite{Cells: ss} }

func TestCompare(t *testing.T) {
	base := cmpSummary("queue", "contention", verdict.Pass, 2000, 1, 10, 0.5, 5)
	tests := []struct {
		name      string
		edit      func(s *Summary)
		opts      CompareOptions
		regressed bool
		// want names a change that must appear (cell: what ... ).
		want string
	}{
		{name: "identical", edit: func(*Summary) {}},
		{name: "verdict pass to fail", edit: func(s *Summary) {
			s.Verdict = verdict.Fail
			s.Checks = map[string]check.Result{verdict.Exclusion: {Verdict: verdict.Fail, Count: 1}}
		}, regressed: true, want: "queue/contention: verdict pass → fail REGRESSION"},
		{name: "verdict pass to unknown", edit: func(s *Summary) { s.Verdict = verdict.Unknown },
			regressed: true, want: "verdict pass → unknown REGRESSION"},
		{name: "acquire p99 doubles", edit: func(s *Summary) { s.LatencyMS[LatAcquire] = Latency{Count: 100, P50: 1, P99: 20} },
			regressed: true, want: "queue/contention: acquire p99 10.0 ms → 20.0 ms (+100%) REGRESSION"},
		{name: "handoff p50 doubles", edit: func(s *Summary) { s.LatencyMS[LatHandoff] = Latency{Count: 99, P50: 1, P99: 5} },
			regressed: true, want: "handoff p50 0.50 ms → 1.00 ms (+100%) REGRESSION"},
		{name: "throughput drops 30%", edit: func(s *Summary) { s.ThroughputPerS = 1400 },
			regressed: true, want: "throughput 2000.0/s → 1400.0/s (-30%) REGRESSION"},
		{name: "within the threshold", edit: func(s *Summary) {
			s.ThroughputPerS = 1800
			s.LatencyMS[LatAcquire] = Latency{Count: 100, P50: 1.15, P99: 11.5}
		}},
		{name: "a tighter threshold catches it", edit: func(s *Summary) { s.ThroughputPerS = 1800 },
			opts: CompareOptions{Threshold: 0.05}, regressed: true, want: "throughput"},
		{name: "below the noise floor", edit: func(s *Summary) { s.LatencyMS[LatHandoff] = Latency{Count: 99, P50: 1, P99: 5} },
			opts: CompareOptions{MinDeltaMS: 1}},
		{name: "faster is better, not a regression", edit: func(s *Summary) {
			s.ThroughputPerS = 4000
			s.LatencyMS[LatAcquire] = Latency{Count: 100, P50: 0.5, P99: 5}
		}, want: "throughput 2000.0/s → 4000.0/s (+100%) better"},
		{name: "a verdict that improves", edit: func(s *Summary) {}, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := clone(t, base)
			tc.edit(&n)
			c := Compare(suiteOf(base), suiteOf(n), tc.opts)
			if c.Regressed() != tc.regressed {
				t.Errorf("regressed = %v, want %v; changes: %v", c.Regressed(), tc.regressed, c.Changes)
			}
			if c.Cells != 1 {
				t.Errorf("cells compared = %d, want 1", c.Cells)
			}
			var all []string
			for _, ch := range c.Changes {
				all = append(all, ch.String())
			}
			if tc.want != "" && !strings.Contains(strings.Join(all, "\n"), tc.want) {
				t.Errorf("changes %q do not name %q", all, tc.want)
			}
			if tc.want == "" && !tc.regressed && tc.name == "identical" && len(c.Changes) != 0 {
				t.Errorf("identical summaries differ: %v", all)
			}
		})
	}
}

func TestCompareCheckVerdictUnderFail(t *testing.T) {
	b := cmpSummary("queue-naive", "pause", verdict.Fail, 100, 1, 2, 1, 2)
	b.Checks = map[string]check.Result{verdict.Exclusion: {Verdict: verdict.Pass}, verdict.Fairness: {Verdict: verdict.Fail}}
	n := clone(t, b)
	n.Checks = map[string]check.Result{verdict.Exclusion: {Verdict: verdict.Fail}, verdict.Fairness: {Verdict: verdict.Fail}}
	c := Compare(suiteOf(b), suiteOf(n), CompareOptions{})
	if !c.Regressed() || c.Changes[0].What != "exclusion verdict" {
		t.Errorf("a check that worsens under an overall fail is not a regression: %v", c.Changes)
	}
	better := Compare(suiteOf(n), suiteOf(b), CompareOptions{})
	if better.Regressed() || !better.Changes[0].Better {
		t.Errorf("an improving check verdict: %v", better.Changes)
	}
}

func TestCompareSuites(t *testing.T) {
	q := cmpSummary("queue", "contention", verdict.Pass, 2000, 1, 10, 0.5, 5)
	m := cmpSummary("mutex", "contention", verdict.Pass, 85, 100, 110, 1, 100)
	x := cmpSummary("txn", "contention", verdict.Pass, 500, 5, 50, 1, 10)
	m2 := clone(t, m)
	m2.LatencyMS[LatAcquire] = Latency{Count: 100, P50: 200, P99: 220}
	y := cmpSummary("rpc", "contention", verdict.Pass, 300, 3, 30, 1, 10)
	c := Compare(suiteOf(q, m, x), suiteOf(m2, q, y), CompareOptions{})
	if c.Cells != 2 || !c.Regressed() {
		t.Fatalf("cells %d regressed %v: %v", c.Cells, c.Regressed(), c.Changes)
	}
	for _, ch := range c.Regressions() {
		if ch.Cell != "mutex/contention" {
			t.Errorf("regression in the wrong cell: %v", ch)
		}
	}
	if len(c.Removed) != 1 || c.Removed[0] != "txn/contention" || len(c.Added) != 1 || c.Added[0] != "rpc/contention" {
		t.Errorf("removed %v added %v", c.Removed, c.Added)
	}
	var b bytes.Buffer
	if err := WriteComparison(&b, c); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare_suite.golden", b.Bytes())

	b.Reset()
	if err := WriteComparison(&b, Compare(suiteOf(q, m), suiteOf(q, m), CompareOptions{})); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare_same.golden", b.Bytes())

	// Duplicate keys are matched in order.
	d := Compare(suiteOf(q, q), suiteOf(q, m, q), CompareOptions{})
	if d.Cells != 2 || d.Regressed() || len(d.Added) != 1 {
		t.Errorf("duplicates: %+v", d)
	}
}

func TestParseSuite(t *testing.T) {
	sum, _ := json.Marshal(cmpSummary("queue", "contention", verdict.Pass, 1, 1, 1, 1, 1))
	suite := []byte(`{"cells":[` + string(sum) + `,` + string(sum) + `]}`)
	tests := []struct {
		name  string
		in    string
		cells int
		err   string
	}{
		{"summary", string(sum), 1, ""},
		{"suite", string(suite), 2, ""},
		{"empty suite", `{"cells":[]}`, 0, ""},
		{"null cells", `{"cells":null}`, 0, "null"},
		{"not JSON", `hello`, 0, "not JSON"},
		{"an array", `[1,2]`, 0, "not JSON"},
		{"some other JSON", `{"name":"x"}`, 0, "neither a summary.json nor a suite.json"},
		{"bad verdict", `{"lock":"q","verdict":"great","latency_ms":{}}`, 0, "not one of pass"},
		{"bad cell", `{"cells":[{"lock":""}]}`, 0, "cell 0"},
		{"trailing", string(sum) + "{}", 0, "after top-level value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSuite([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Cells) != tc.cells {
				t.Errorf("cells = %d, want %d", len(s.Cells), tc.cells)
			}
		})
	}
	if _, err := ParseSuite([]byte(`{"name":"x"}`)); !errors.Is(err, ErrNotSummary) {
		t.Errorf("err = %v, want ErrNotSummary", err)
	}
}

func TestParseThreshold(t *testing.T) {
	for in, want := range map[string]float64{"20%": 0.2, "20": 0.2, " 5 % ": 0.05, "0.5%": 0.005, "150%": 1.5} {
		if got, err := ParseThreshold(in); err != nil || got != want {
			t.Errorf("ParseThreshold(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "%", "-5%", "0", "abc", "NaN", "Inf"} {
		if _, err := ParseThreshold(in); err == nil {
			t.Errorf("ParseThreshold(%q) accepted", in)
		}
	}
}

func clone(t *testing.T, s Summary) Summary {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out Summary
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
