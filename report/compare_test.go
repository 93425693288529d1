package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/verdict"
)

// cmpSummary is a summary with just what compare reads.
func cmpSummary(lock, scen string, v verdict.Verdict, tput, acqP50, acqP99, hP50, hP99 float64) Summary {
	return Summary{Run: rundir.Run{Lock: lock}, Scenario: scen, Verdict: v, ThroughputPerS: tput,
		LatencyMS: map[string]Latency{
			LatAcquire: {Count: 100, P50: acqP50, P99: acqP99},
			LatHandoff: {Count: 99, P50: hP50, P99: hP99},
		},
		Checks: map[string]check.Result{verdict.Exclusion: {Verdict: v}}}
}

func suiteOf(ss ...Summary) Suite { return Suite{Cells: ss} }

// samples are n runs of one cell whose figures jitter by ±1% around the
// given ones, as repeated runs on a quiet machine do.
func samples(n int, lock string, tput, acqP50, hP50 float64) []Summary {
	var out []Summary
	for i := range n {
		j := 1 + (float64(i)-float64(n-1)/2)/100
		out = append(out, cmpSummary(lock, "contention", verdict.Pass, tput*j, acqP50*j, acqP50*10*j, hP50*j, hP50*10*j))
	}
	return out
}

func changeLines(c Comparison) string {
	var all []string
	for _, ch := range c.Changes {
		all = append(all, ch.String())
	}
	return strings.Join(all, "\n")
}

func TestCompareTimings(t *testing.T) {
	base := samples(6, "queue", 2000, 1, 2)
	tests := []struct {
		name      string
		next      []Summary
		opts      CompareOptions
		regressed bool
		want      string // a change line must contain it
	}{
		{name: "same", next: samples(6, "queue", 2000, 1, 2)},
		{name: "slower handoff and acquire", next: samples(6, "queue", 2000, 2, 5), regressed: true,
			want: "queue/contention: handoff p50 2.00 ms (n=6) → 5.00 ms (n=6) (+150%) REGRESSION"},
		{name: "throughput drop", next: samples(6, "queue", 1400, 1, 2), regressed: true, want: "throughput 2000.0/s (n=6) → 1400.0/s (n=6) (-30%) REGRESSION"},
		{name: "significant but below the threshold", next: samples(6, "queue", 1800, 1, 2), want: "significant, below the threshold"},
		{name: "a lower threshold gates it", next: samples(6, "queue", 1800, 1, 2), opts: CompareOptions{Threshold: 0.05}, regressed: true, want: "throughput"},
		{name: "below the absolute floor", next: samples(6, "queue", 2000, 1.5, 2), opts: CompareOptions{MinDeltaMS: 1}},
		{name: "faster is better", next: samples(6, "queue", 4000, 0.5, 1), want: "throughput 2000.0/s (n=6) → 4000.0/s (n=6) (+100%) better"},
		{name: "too few samples: shown, not gated", next: samples(3, "queue", 1000, 3, 6), want: "[no power]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Compare(suiteOf(base...), suiteOf(tc.next...), tc.opts)
			if c.Regressed() != tc.regressed {
				t.Errorf("regressed = %v, want %v; changes:\n%s", c.Regressed(), tc.regressed, changeLines(c))
			}
			if c.Cells != 1 {
				t.Errorf("cells compared = %d, want 1", c.Cells)
			}
			if !strings.Contains(changeLines(c), tc.want) {
				t.Errorf("changes do not name %q:\n%s", tc.want, changeLines(c))
			}
		})
	}
}

// One wild sample (a fault's single unavailability, a scheduler stall) in
// a tail percentile must never gate, however large.
func TestCompareTailsNeverGate(t *testing.T) {
	base, next := samples(6, "queue", 2000, 1, 2), samples(6, "queue", 2000, 1, 2)
	for i := range next {
		next[i].LatencyMS[LatHandoff] = Latency{Count: 99, P50: 2, P99: 2000}
	}
	c := Compare(suiteOf(base...), suiteOf(next...), CompareOptions{})
	if c.Regressed() || !strings.Contains(changeLines(c), "handoff p99") || !strings.Contains(changeLines(c), "tail, not gated") {
		t.Errorf("tail: regressed %v\n%s", c.Regressed(), changeLines(c))
	}
}

// Holm: with many cells, one p-value that would pass alone at α does not.
func TestCompareHolmAcrossCells(t *testing.T) {
	var base, next []Summary
	for i, lock := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		b := samples(5, lock, 1000, 1, 2)
		n := samples(5, lock, 1000, 1, 2)
		if i == 0 { // every new run slower: p = 2/252 = 0.0079 < 0.05/3, > 0.05/24
			for j := range n {
				n[j].ThroughputPerS = 500 + float64(j)
			}
		}
		base, next = append(base, b...), append(next, n...)
	}
	c := Compare(suiteOf(base...), suiteOf(next...), CompareOptions{})
	if c.Regressed() || c.Tests != 24 {
		t.Errorf("regressed %v over %d tests:\n%s", c.Regressed(), c.Tests, changeLines(c))
	}
	if !strings.Contains(strings.Join(c.Notes, " "), "no power: with these sample counts the smallest possible p (0.0079)") {
		t.Errorf("5 a side over 24 tests: no warning in %q", c.Notes)
	}
	alone := Compare(suiteOf(base[:5]...), suiteOf(next[:5]...), CompareOptions{})
	if !alone.Regressed() {
		t.Errorf("alone, the same cell is a regression:\n%s", changeLines(alone))
	}
}

func withCheck(ss []Summary, name string, v ...verdict.Verdict) []Summary {
	for i := range ss {
		ss[i].Checks = map[string]check.Result{verdict.Exclusion: {Verdict: verdict.Pass}, name: {Verdict: v[i%len(v)]}}
	}
	return ss
}

func TestCompareVerdicts(t *testing.T) {
	P, F := verdict.Pass, verdict.Fail
	asserted := map[string]map[string]verdict.Verdict{"queue/contention": {verdict.Exclusion: P, verdict.Liveness: P}}
	tests := []struct {
		name       string
		base, next []Summary
		expect     map[string]map[string]verdict.Verdict
		regressed  bool
		want       string
	}{
		{name: "an asserted check fails once", base: withCheck(samples(5, "queue", 1, 1, 1), verdict.Liveness, P),
			next: withCheck(samples(5, "queue", 1, 1, 1), verdict.Liveness, P, P, F, P, P), expect: asserted, regressed: true,
			want: "liveness verdict 0 of 5 not pass → 1 of 5 not pass [asserted] REGRESSION"},
		{name: "a racy check fails once more", base: withCheck(samples(5, "queue", 1, 1, 1), verdict.Fairness, P, F, P, P, P),
			next: withCheck(samples(5, "queue", 1, 1, 1), verdict.Fairness, P, F, F, P, P), expect: asserted,
			want: "fairness failures 1 of 5 → 2 of 5"},
		{name: "a racy check fails every time", base: withCheck(samples(8, "queue", 1, 1, 1), verdict.Fairness, P),
			next: withCheck(samples(8, "queue", 1, 1, 1), verdict.Fairness, F), expect: asserted, regressed: true,
			want: "fairness failures 0 of 8 → 8 of 8 [can race: rate test] REGRESSION"},
		{name: "a stuck run", base: samples(5, "queue", 1, 1, 1),
			next:      func() []Summary { s := samples(5, "queue", 1, 1, 1); s[2].Stuck = []string{"client 1: Lock"}; return s }(),
			regressed: true, want: "stuck runs 0 of 5 → 1 of 5 [asserted] REGRESSION"},
		{name: "single summaries without expectations: one failure of a racy check is no evidence",
			base: withCheck(samples(1, "queue", 1, 1, 1), verdict.Fairness, P), next: withCheck(samples(1, "queue", 1, 1, 1), verdict.Fairness, F),
			want: "fairness failures 0 of 1 → 1 of 1 [can race: rate test]"},
		{name: "single summaries without expectations: a new safety failure regresses",
			base: withCheck(samples(1, "queue", 1, 1, 1), verdict.Exclusion, P), next: withCheck(samples(1, "queue", 1, 1, 1), verdict.Exclusion, F),
			regressed: true, want: "exclusion failures 0 of 1 → 1 of 1 [" + NoteUnassertedSafety + "] REGRESSION"},
		{name: "without expectations: a symmetry failure the base also had is a rate",
			base: withCheck(samples(5, "queue", 1, 1, 1), verdict.Symmetry, P, F, P, P, P), next: withCheck(samples(5, "queue", 1, 1, 1), verdict.Symmetry, P, F, F, P, P),
			want: "symmetry failures 1 of 5 → 2 of 5 [can race: rate test]"},
		{name: "with expectations, an unasserted safety check stays a rate", base: withCheck(samples(1, "queue", 1, 1, 1), verdict.Fencing, P),
			next: withCheck(samples(1, "queue", 1, 1, 1), verdict.Fencing, F), expect: asserted,
			want: "fencing failures 0 of 1 → 1 of 1 [can race: rate test]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Compare(Suite{Cells: tc.base, Expected: tc.expect}, Suite{Cells: tc.next, Expected: tc.expect}, CompareOptions{})
			if c.Regressed() != tc.regressed || !strings.Contains(changeLines(c), tc.want) {
				t.Errorf("regressed = %v, want %v; want %q in:\n%s", c.Regressed(), tc.regressed, tc.want, changeLines(c))
			}
		})
	}
}

func TestCompareIncomplete(t *testing.T) {
	q, x := samples(4, "queue", 1000, 1, 2), samples(4, "txn", 500, 2, 3)
	full := Suite{Cells: append(slices.Clone(q), x...), ScenarioHashes: map[string]string{"contention": "sha256:a"}}
	tests := []struct {
		name string
		next Suite
		want string
	}{
		{"a cell missing", Suite{Cells: q, ScenarioHashes: full.ScenarioHashes}, "MISSING from new: txn/contention"},
		{"interrupted", Suite{Cells: q, Interrupted: true, NotRun: []string{"txn/contention"}, ScenarioHashes: full.ScenarioHashes},
			"INTERRUPTED: new suite was interrupted; not run: txn/contention"},
		{"scenario changed", Suite{Cells: full.Cells, ScenarioHashes: map[string]string{"contention": "sha256:b"}}, "SCENARIO CHANGED: contention"},
		{"stopped by the harness", Suite{Cells: q, Error: "no space left on device", NotRun: []string{"txn/contention"}, ScenarioHashes: full.ScenarioHashes},
			"INTERRUPTED: new suite stopped early: no space left on device; not run: txn/contention"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Compare(full, tc.next, CompareOptions{})
			var b bytes.Buffer
			if err := WriteComparison(&b, c, true); err != nil {
				t.Fatal(err)
			}
			if !c.Regressed() || !c.Incomplete() || !strings.Contains(b.String(), tc.want) || !strings.Contains(b.String(), "INCOMPLETE") {
				t.Errorf("regressed %v; want %q in:\n%s", c.Regressed(), tc.want, b.String())
			}
			if tc.name != "a cell missing" && strings.Contains(b.String(), "MISSING") {
				t.Errorf("an interrupted suite's cells reported as missing:\n%s", b.String())
			}
		})
	}
}

// TestCompareReadsSchemaVersions: compare accepts files without
// schema_version (older ones) and says why a side lacks what it wanted by
// its schema version, and warns when a side is newer than this build.
func TestCompareReadsSchemaVersions(t *testing.T) {
	q := samples(4, "queue", 1000, 1, 2)
	hashes := map[string]string{"contention": "sha256:a"}
	host := &Host{CPUs: 2, OS: "linux", Arch: "amd64"}
	for _, tc := range []struct {
		name       string
		base, next Suite
		want, not  string
	}{
		{"older base", Suite{Cells: q}, Suite{Schema: 1, Cells: q, ScenarioHashes: hashes, Host: host},
			"base has no scenario hashes (no schema_version: an older suite.json, or a summary.json)", "newer"},
		{"hand-made new", Suite{Schema: 1, Cells: q, ScenarioHashes: hashes, Host: host}, Suite{Schema: 1, Cells: q},
			"new has no scenario hashes (schema_version 1 has them: not written by lockbench suite)", "older"},
		{"newer new", Suite{Schema: 1, Cells: q, ScenarioHashes: hashes, Host: host}, Suite{Schema: rundir.SchemaVersion + 1, Cells: q, ScenarioHashes: hashes, Host: host},
			fmt.Sprintf("new's file has schema_version %d, newer than this lockbench's %d", rundir.SchemaVersion+1, rundir.SchemaVersion), "no scenario hashes"},
	} {
		notes := strings.Join(Compare(tc.base, tc.next, CompareOptions{}).Notes, "\n")
		if !strings.Contains(notes, tc.want) || strings.Contains(notes, tc.not) {
			t.Errorf("%s: notes\n%s\nwant %q, not %q", tc.name, notes, tc.want, tc.not)
		}
	}
}

// Suites from different hosts compare floor-normalized figures: a host
// twice as fast with a floor twice as fast is no change.
func TestCompareNormalizesAcrossHosts(t *testing.T) {
	slow := Suite{Cells: samples(6, "queue", 1000, 2, 4), Host: &Host{CPUModel: "slow", CPUs: 2},
		Floor: &Floor{CommitsPerS: 500, LatencyMS: Latency{P50: 2}}}
	fast := Suite{Cells: samples(6, "queue", 2000, 1, 2), Host: &Host{CPUModel: "fast", CPUs: 8},
		Floor: &Floor{CommitsPerS: 1000, LatencyMS: Latency{P50: 1}}}
	c := Compare(slow, fast, CompareOptions{})
	var b bytes.Buffer
	if err := WriteComparison(&b, c, true); err != nil {
		t.Fatal(err)
	}
	if !c.Normalized || c.Regressed() || strings.Contains(b.String(), "better") || !strings.Contains(b.String(), "different hosts") {
		t.Errorf("normalized %v regressed %v:\n%s", c.Normalized, c.Regressed(), b.String())
	}
	raw := Compare(Suite{Cells: slow.Cells, Host: slow.Host}, Suite{Cells: fast.Cells, Host: fast.Host}, CompareOptions{})
	if raw.Normalized || !strings.Contains(strings.Join(raw.Notes, " "), "no commit floor") {
		t.Errorf("without floors: %+v", raw.Notes)
	}
}

// On one host whose load doubled between the sides, each run's own suite
// floor doubled too: --normalize always sees no change, raw figures a
// regression.
func TestCompareNormalizeAlwaysFollowsLoad(t *testing.T) {
	quiet, loaded := samples(6, "queue", 2000, 1, 2), samples(6, "queue", 1000, 2, 4)
	for i := range quiet {
		quiet[i].SuiteFloor = &Floor{CommitsPerS: 1000, LatencyMS: Latency{P50: 1}}
		loaded[i].SuiteFloor = &Floor{CommitsPerS: 500, LatencyMS: Latency{P50: 2}}
	}
	host := &Host{CPUModel: "same", CPUs: 2}
	base := Merge(Suite{Cells: quiet, Host: host, Floor: quiet[0].SuiteFloor})
	next := Merge(Suite{Cells: loaded, Host: host, Floor: loaded[0].SuiteFloor})
	if c := Compare(base, next, CompareOptions{Normalize: NormalizeAlways}); c.Regressed() || !c.Normalized {
		t.Errorf("normalized: regressed %v normalized %v\n%s", c.Regressed(), c.Normalized, changeLines(c))
	}
	if c := Compare(base, next, CompareOptions{}); !c.Regressed() || c.Normalized {
		t.Errorf("same host, auto: regressed %v normalized %v\n%s", c.Regressed(), c.Normalized, changeLines(c))
	}
}

func TestCompareGolden(t *testing.T) {
	q, m := samples(6, "queue", 2000, 1, 2), samples(6, "mutex", 85, 100, 1)
	m2 := samples(6, "mutex", 85, 200, 1)
	c := Compare(Suite{Cells: append(slices.Clone(q), m...)}, Suite{Cells: append(slices.Clone(m2), q...)}, CompareOptions{})
	var b bytes.Buffer
	if err := WriteComparison(&b, c, true); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare_suite.golden", b.Bytes())
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
		{"no checks", `{"lock":"q","verdict":"pass","latency_ms":{}}`, 0, `"checks" is missing`},
		{"empty checks", `{"lock":"q","verdict":"pass","latency_ms":{},"checks":{}}`, 0, `"checks" is missing, null or empty`},
		{"null latencies", `{"lock":"q","verdict":"pass","latency_ms":null,"checks":{"exclusion":{"verdict":"pass"}}}`, 0, `"latency_ms" is missing or null`},
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

// withEtcd is ss run on member processes of binary etcd at release v.
func withEtcd(ss []Summary, etcd, v string) []Summary {
	out := slices.Clone(ss)
	for i := range out {
		out[i].Etcd, out[i].EtcdVersion = etcd, v
	}
	return out
}

// A version matrix compares each release's cells with the same release's
// only: a 3.4 cell 4× slower than the 3.7 cell beside it is no regression,
// a release missing from a side is, and where a release's binary lives
// does not matter.
func TestCompareKeysByEtcdRelease(t *testing.T) {
	fast, slow := samples(4, "queue", 1000, 1, 2), samples(4, "queue", 250, 4, 8)
	base := Suite{Cells: append(withEtcd(fast, "self", "3.7.3"), withEtcd(slow, "/usr/bin/etcd", "3.4.23")...)}
	moved := Suite{Cells: append(withEtcd(fast, "self", "3.7.3"), withEtcd(slow, "/opt/etcd/bin/etcd", "3.4.23")...)}
	c := Compare(base, moved, CompareOptions{})
	if c.Cells != 2 || c.Regressed() {
		t.Errorf("same releases, binary moved: %d cells compared, regressed %v:\n%s", c.Cells, c.Regressed(), changeLines(c))
	}
	c = Compare(base, Suite{Cells: withEtcd(fast, "self", "3.7.3")}, CompareOptions{})
	if !slices.Equal(c.Removed, []string{"queue/contention/etcd=3.4.23"}) || !c.Regressed() {
		t.Errorf("3.4.23 missing from new: removed %v, regressed %v", c.Removed, c.Regressed())
	}
	c = Compare(Suite{Cells: fast}, Suite{Cells: withEtcd(fast, "self", "3.7.3")}, CompareOptions{})
	if c.Cells != 0 {
		t.Errorf("an embedded cell compared with a process cell (%d cells)", c.Cells)
	}
}

// A merge is no newer than its oldest part: a key that part lacks, the
// merge lacks too; it keeps the build that ran the parts.
func TestMergeKeepsTheOldestSchema(t *testing.T) {
	for _, tc := range []struct {
		parts []Suite
		want  int
	}{
		{[]Suite{{Schema: 1, Lockbench: "v1"}, {Schema: 1}}, 1},
		{[]Suite{{Schema: 1, Lockbench: "v1"}, {}}, 0},
		{[]Suite{{Lockbench: "v1"}, {Schema: 1}}, 0},
	} {
		if m := Merge(tc.parts...); m.Schema != tc.want || m.Lockbench != "v1" {
			t.Errorf("Merge(%+v): schema %d, lockbench %q; want %d, v1", tc.parts, m.Schema, m.Lockbench, tc.want)
		}
	}
}
