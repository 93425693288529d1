package report

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/verdict"
)

func TestSummarizeFixture(t *testing.T) {
	ev, s := defaultFixture().summary()
	if s.Acquisitions != 41 {
		t.Errorf("acquisitions = %d, want 41 (40 rounds and the violating grant)", s.Acquisitions)
	}
	for _, n := range LatencyNames {
		if _, ok := s.LatencyMS[n]; !ok {
			t.Errorf("latency_ms has no %q", n)
		}
	}
	want := map[string]struct {
		count    int64
		p50, max float64
	}{
		LatHandoff:        {39, 0.5, 24.5}, // 41 grants − the first − the violating one; the fault's gap is the max
		LatHold:           {41, 2, 2.5},
		LatUnavailability: {1, 25, 25}, // fault at 40ms → the first grant at 65ms
	}
	for n, w := range want {
		l := s.LatencyMS[n]
		near := func(a, b float64) bool { return math.Abs(a-b) <= b*0.002 } // HdrHistogram: 3 significant digits
		if l.Count != w.count || !near(l.P50, w.p50) || !near(l.Max, w.max) {
			t.Errorf("%s: count %d p50 %v max %v, want %d %v %v", n, l.Count, l.P50, l.Max, w.count, w.p50, w.max)
		}
		if len(l.CDF) != len(cdfQuantiles) || l.CDF[0].Q != 0 || l.CDF[len(l.CDF)-1].MS != l.Max {
			t.Errorf("%s: CDF %v does not run from min to max", n, l.CDF)
		}
	}
	if s.Faults != 1 || s.FaultsUnrecovered != 0 {
		t.Errorf("faults %d unrecovered %d, want 1 0", s.Faults, s.FaultsUnrecovered)
	}
	if s.Verdict != verdict.Fail || s.ViolationCount < 1 || s.TotalViolations() != s.ViolationCount {
		t.Errorf("verdict %s, violation_count %d: want the known exclusion violation", s.Verdict, s.ViolationCount)
	}
	if v, ok := s.WakeupsPerHandoff(); !ok || v != 1 {
		t.Errorf("wakeups/handoff = %v, %v; want 1", v, ok)
	}

	// Out of order, the same figures.
	rev := slices.Clone(ev)
	slices.Reverse(rev)
	s2 := Summarize(defaultFixture().run(), check.Check(rev, check.Options{}))
	a, _ := json.Marshal(s.LatencyMS)
	b, _ := json.Marshal(s2.LatencyMS)
	if string(a) != string(b) {
		t.Errorf("reversed history gives other latencies:\n%s\n%s", b, a)
	}
}

func TestSummarizeEdges(t *testing.T) {
	e := func(tm int64, p int, ty history.Type, f history.Function) history.Event {
		ev := history.Event{Time: tm, Process: int32(p), Type: ty, F: f}
		if p >= 0 {
			ev.Lock = "l"
		}
		return ev
	}
	fault := func(tm int64, ty history.Type) history.Event {
		ev := e(tm, -1, ty, history.FFault)
		ev.Value = history.FaultValue(history.Fault{Fault: "partition", Target: "leader"})
		return ev
	}
	tests := []struct {
		name                          string
		events                        []history.Event
		hold, handoff, unavail, unrec int64
	}{
		{"crash ends a hold without a handoff", []history.Event{
			e(0, 0, history.Invoke, history.FAcquire), e(10, 0, history.OK, history.FAcquire),
			e(20, 0, history.Info, history.FCrash),
			e(25, 1, history.Invoke, history.FAcquire), e(30, 1, history.OK, history.FAcquire),
			e(40, 1, history.Invoke, history.FRelease),
		}, 1, 0, 0, 0},
		{"a release without a hold is no handoff", []history.Event{
			e(0, 0, history.Invoke, history.FRelease),
			e(5, 1, history.Invoke, history.FAcquire), e(10, 1, history.OK, history.FAcquire),
		}, 0, 0, 0, 0},
		{"a fault with no grant after it is unrecovered", []history.Event{
			fault(0, history.Invoke), e(1, 0, history.Invoke, history.FAcquire), e(2, 0, history.OK, history.FAcquire),
			fault(3, history.OK), fault(5, history.Invoke), fault(6, history.Info),
		}, 0, 0, 1, 1},
		{"failed acquires count nothing", []history.Event{
			e(0, 0, history.Invoke, history.FAcquire), e(1, 0, history.Fail, history.FAcquire),
			e(2, 0, history.Invoke, history.FAcquire), e(3, 0, history.Info, history.FAcquire),
		}, 0, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Summarize(RunInfo{}, check.Check(tc.events, check.Options{}))
			got := []int64{s.LatencyMS[LatHold].Count, s.LatencyMS[LatHandoff].Count, s.LatencyMS[LatUnavailability].Count, int64(s.FaultsUnrecovered)}
			want := []int64{tc.hold, tc.handoff, tc.unavail, tc.unrec}
			if !slices.Equal(got, want) {
				t.Errorf("hold, handoff, unavailability counts, unrecovered = %v, want %v", got, want)
			}
			if s.Violations == nil {
				t.Error("violations is null; want []")
			}
		})
	}
}

func TestSummaryJSONFields(t *testing.T) {
	_, s := defaultFixture().summary()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"run_id", "lock", "scenario", "clients", "seed", "duration_s", "events", "acquisitions",
		"throughput_per_s", "latency_ms", "violations", "checks", "verdict", "faults", "violation_count"} {
		if _, ok := m[k]; !ok {
			t.Errorf("summary.json has no %q", k)
		}
	}
	lat := m["latency_ms"].(map[string]any)
	for _, n := range LatencyNames {
		l, ok := lat[n].(map[string]any)
		if !ok {
			t.Fatalf("latency_ms.%s missing", n)
		}
		for _, k := range []string{"count", "p50", "p90", "p99", "p999", "max"} {
			if _, ok := l[k]; !ok {
				t.Errorf("latency_ms.%s has no %q", n, k)
			}
		}
	}
}

func TestLatencyPointsFallback(t *testing.T) {
	old := Latency{Count: 3, P50: 1, P90: 2, P99: 3, P999: 4, Max: 5}
	if p := old.Points(); len(p) != 5 || p[4] != (Quantile{1, 5}) {
		t.Errorf("points of an old summary: %v", p)
	}
	partial := Latency{Count: 3, P50: 1, P99: 3}
	if p := partial.Points(); len(p) != 2 || p[1] != (Quantile{0.99, 3}) {
		t.Errorf("points of a partial summary: %v", p)
	}
	if (Latency{}).Points() != nil {
		t.Error("an empty distribution has points")
	}
}

// TestSummaryKeyKeepAlive: cells that differ only by keepalive policy have
// distinct keys; the default policy keeps the key of older summaries.
func TestSummaryKeyKeepAlive(t *testing.T) {
	for ka, want := range map[string]string{"": "queue/contention", "safe": "queue/contention", "auto": "queue/contention/keepalive=auto"} {
		if got := (Summary{Run: rundir.Run{Lock: "queue", KeepAlive: ka}, Scenario: "contention"}).Key(); got != want {
			t.Errorf("keepalive %q: key %q, want %q", ka, got, want)
		}
	}
}

// TestSummaryKeyEtcd: cells of a version matrix that differ only by
// binary have distinct keys, keyed by release (not path); the embedded
// cluster's cells keep the key of older summaries.
func TestSummaryKeyEtcd(t *testing.T) {
	for _, tc := range []struct {
		etcd, version, ka, want, label string
	}{
		{"", "", "", "queue/contention", ""},
		{"self", "3.7.3", "", "queue/contention/etcd=3.7.3", "3.7.3 (self)"},
		{"/usr/bin/etcd", "3.4.23", "", "queue/contention/etcd=3.4.23", "3.4.23 (/usr/bin/etcd)"},
		{"/opt/etcd-3.4.23/etcd", "3.4.23", "", "queue/contention/etcd=3.4.23", "3.4.23 (/opt/etcd-3.4.23/etcd)"},
		{"/usr/bin/etcd", "3.4.23", "auto", "queue/contention/keepalive=auto/etcd=3.4.23", "3.4.23 (/usr/bin/etcd)"},
	} {
		s := Summary{Run: rundir.Run{Lock: "queue", KeepAlive: tc.ka, Etcd: tc.etcd, EtcdVersion: tc.version}, Scenario: "contention"}
		if got := s.Key(); got != tc.want {
			t.Errorf("%s %s: key %q, want %q", tc.etcd, tc.version, got, tc.want)
		}
		if got := s.EtcdLabel(); got != tc.label {
			t.Errorf("%s %s: label %q, want %q", tc.etcd, tc.version, got, tc.label)
		}
	}
}

// TestHandoffLatencyWindow: over the whole history HandoffLatency is
// Summarize's handoff distribution; over a window, only the grants in it.
func TestHandoffLatencyWindow(t *testing.T) {
	ev, s := defaultFixture().summary()
	all := HandoffLatency(check.Pair(ev), 0, time.Duration(math.MaxInt64))
	want := s.LatencyMS[LatHandoff]
	if all.Count != want.Count || all.P50 != want.P50 || all.Max != want.Max || all.CDF != nil {
		t.Errorf("whole history: %+v, Summarize's %+v", all, want)
	}
	var end int64
	for _, e := range ev {
		end = max(end, e.Time)
	}
	half := HandoffLatency(check.Pair(ev), 0, time.Duration(end/2))
	rest := HandoffLatency(check.Pair(ev), time.Duration(end/2), time.Duration(end+1))
	if half.Count == 0 || rest.Count == 0 || half.Count+rest.Count != want.Count {
		t.Errorf("windows: %d + %d handoffs, want %d in all", half.Count, rest.Count, want.Count)
	}
	if none := HandoffLatency(check.Pair(ev), time.Duration(end+1), time.Duration(end+2)); none.Count != 0 || none.P50 != 0 {
		t.Errorf("empty window: %+v", none)
	}
}
