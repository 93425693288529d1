package report

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

func parseHTML(t *testing.T, b []byte) *html.Node {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func walk(n *html.Node, f func(*html.Node)) {
	f(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func hasClass(n *html.Node, c string) bool {
	v, _ := attr(n, "class")
	return slices.Contains(strings.Fields(v), c)
}

func byClass(doc *html.Node, c string) []*html.Node {
	var out []*html.Node
	walk(doc, func(n *html.Node) {
		if n.Type == html.ElementNode && hasClass(n, c) {
			out = append(out, n)
		}
	})
	return out
}

// violationPair returns the two processes of the first exclusion violation.
func violationPair(t *testing.T, s Summary) (int, int) {
	t.Helper()
	vs := s.Checks[verdict.Exclusion].Violations
	if len(vs) == 0 || len(vs[0].Holders) != 2 {
		t.Fatalf("the fixture has no exclusion violation with two holders: %+v", s.Checks[verdict.Exclusion])
	}
	return vs[0].Holders[0].Process, vs[0].Holders[1].Process
}

// checkRunDOM checks what any run report must show, before or after its
// script ran: one lane per client, a fault band, and red marks on both
// holders of the violation.
func checkRunDOM(t *testing.T, doc *html.Node, clients int, p, q int) {
	t.Helper()
	var procs []int
	for _, l := range byClass(doc, "lane") {
		v, _ := attr(l, "data-process")
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Errorf("lane with data-process %q", v)
		}
		procs = append(procs, n)
	}
	want := make([]int, clients)
	for i := range want {
		want[i] = i
	}
	if !slices.Equal(procs, want) {
		t.Errorf("lanes %v, want one per client %v", procs, want)
	}
	if n := len(byClass(doc, "fault")); n != 1 {
		t.Errorf("%d fault bands, want 1", n)
	}
	marked := map[string]bool{}
	for _, v := range byClass(doc, "violation") {
		pr, _ := attr(v, "data-process")
		marked[pr] = true
		// A mark sits in its own process's lane.
		if lane := v.Parent.Parent; lane == nil || !hasClass(lane, "lane") {
			t.Errorf("violation mark outside a lane")
		} else if lp, _ := attr(lane, "data-process"); lp != pr {
			t.Errorf("violation mark of process %s in lane %s", pr, lp)
		}
	}
	for _, pr := range []int{p, q} {
		if !marked[strconv.Itoa(pr)] {
			t.Errorf("no violation mark on process %d (marked: %v)", pr, marked)
		}
	}
}

func TestWriteRunHTML(t *testing.T) {
	f := defaultFixture()
	ev, sum := f.summary()
	p, q := violationPair(t, sum)
	var b bytes.Buffer
	if err := WriteRunHTML(&b, json.RawMessage(`{"lock":"queue","note":"</script><b>x</b>"}`), check.Check(ev, check.Options{}), RunContext{Cell: Cell{Summary: sum}}); err != nil {
		t.Fatal(err)
	}
	doc := parseHTML(t, b.Bytes())
	checkRunDOM(t, doc, f.Clients, p, q)

	// Self-contained: nothing is fetched.
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		switch n.Data {
		case "link", "iframe", "img":
			t.Errorf("<%s> in a self-contained page", n.Data)
		}
		for _, k := range []string{"src", "href"} {
			if v, ok := attr(n, k); ok && (strings.Contains(v, "//") || strings.HasPrefix(v, "data:")) {
				t.Errorf("<%s %s=%q> fetches", n.Data, k, v)
			}
		}
	})
	if strings.Contains(b.String(), "@import") || strings.Contains(b.String(), "url(") {
		t.Error("CSS fetches something")
	}
	// The embedded data parses, and the config's markup stays text.
	var data tlData
	var scripts int
	walk(doc, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "script" {
			scripts++
			if id, _ := attr(n, "id"); id == "lockbench-data" {
				if err := json.Unmarshal([]byte(n.FirstChild.Data), &data); err != nil {
					t.Errorf("embedded data: %v", err)
				}
			}
		}
	})
	if scripts != 2 || len(data.Lanes) != f.Clients || len(data.Faults) != 1 || len(data.Viols) == 0 {
		t.Errorf("scripts %d, data lanes %d faults %d violations %d", scripts, len(data.Lanes), len(data.Faults), len(data.Viols))
	}
	var evText strings.Builder
	for _, pre := range byClass(doc, "events") {
		walk(pre, func(n *html.Node) {
			if n.Type == html.TextNode {
				evText.WriteString(n.Data)
			}
		})
	}
	if !strings.Contains(evText.String(), `"f":"acquire","lock":"l","token":`) {
		t.Errorf("the violation's events are not shown: %q", evText.String())
	}
	if strings.Contains(b.String(), "<b>x</b>") {
		t.Error("config markup was not escaped")
	}
	for _, want := range []string{"latency CDFs", `class="cdf"`, "first violations", "show on timeline", "kill leader (m1)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestWriteRunHTMLEdgeCases(t *testing.T) {
	// No events at all, and a summary with no checks: still a page.
	var b bytes.Buffer
	if err := WriteRunHTML(&b, nil, check.Check(nil, check.Options{}), RunContext{Cell: Cell{Summary: Summary{}}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "No client events") {
		t.Error("empty history: no notice")
	}
	// A client with no events still gets its lane.
	b.Reset()
	if err := WriteRunHTML(&b, nil, check.Check([]history.Event{{Time: 5, Process: 1, Type: history.Invoke, F: history.FAcquire, Lock: "l"}}, check.Options{}), RunContext{Cell: Cell{Summary: Summary{Clients: 3}}}); err != nil {
		t.Fatal(err)
	}
	if n := len(byClass(parseHTML(t, b.Bytes()), "lane")); n != 3 {
		t.Errorf("%d lanes, want one per client (3)", n)
	}
	// Only the nemesis, an unfinished fault, an unmatched end.
	ev, sum := fixture{Clients: 2, Rounds: 3, FaultFrom: 2 * msNS, FaultTo: 1, ViolationRound: -1}.summary()
	b.Reset()
	if err := WriteRunHTML(&b, map[string]int{"a": 1}, check.Check(ev, check.Options{}), RunContext{Cell: Cell{Summary: sum}}); err != nil {
		t.Fatal(err)
	}
}

func TestTimelineDownsample(t *testing.T) {
	f := fixture{Clients: 4, Rounds: 2000, ViolationRound: 1000}
	ev, sum := f.summary()
	d := buildTimeline(check.Pair(ev), summaryViolations(sum), 0)
	before := d.intervals()
	d2 := buildTimeline(check.Pair(ev), summaryViolations(sum), 0)
	d2.Unit = 1
	d2.downsample(before / 10)
	if d2.intervals() > before/10 || d2.Merged == 0 {
		t.Errorf("downsample to %d: %d intervals, merged %d", before/10, d2.intervals(), d2.Merged)
	}
	for _, l := range d2.Lanes {
		for i := 3; i < len(l.Hold); i += 3 {
			if l.Hold[i] < l.Hold[i-2] {
				t.Fatalf("merged holds overlap or are out of order: %v", l.Hold[i-3:i+3])
			}
		}
	}
	if got := mergeTuples([]int64{0, 1, 9, 2, 3, 8, 10, 11, 7}, 3, 2); !slices.Equal(got, []int64{0, 3, 9, 10, 11, 7}) {
		t.Errorf("mergeTuples = %v", got)
	}
}

// TestRunHTMLScale renders 64 clients and about 100k events, and bounds the
// time and the size of the page.
func TestRunHTMLScale(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	f := bigFixture()
	ev, sum := f.summary()
	start := time.Now()
	var b bytes.Buffer
	if err := WriteRunHTML(&b, nil, check.Check(ev, check.Options{}), RunContext{Cell: Cell{Summary: sum}}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("%d events → %d KB of HTML in %s", len(ev), b.Len()>>10, took)
	if b.Len() > 4<<20 {
		t.Errorf("page is %d MB", b.Len()>>20)
	}
	if took > 20*time.Second {
		t.Errorf("rendering took %s", took)
	}
	p, q := violationPair(t, sum)
	checkRunDOM(t, parseHTML(t, b.Bytes()), f.Clients, p, q)
}

func bigFixture() fixture {
	return fixture{Clients: 64, Rounds: 20_000, FaultFrom: 10_000 * msNS, FaultTo: 12_000 * msNS, ViolationRound: 9_000}
}

func TestWriteSuiteHTML(t *testing.T) {
	cells := suiteCells()
	var b bytes.Buffer
	if err := WriteSuiteHTML(&b, Suite{}, cells); err != nil {
		t.Fatal(err)
	}
	doc := parseHTML(t, b.Bytes())
	got := byClass(doc, "cell")
	var filled []string
	for _, c := range got {
		if l, ok := attr(c, "data-lock"); ok {
			s, _ := attr(c, "data-scenario")
			filled = append(filled, l+"/"+s)
		}
	}
	// 4 strategies × 2 scenarios, 4 of them run.
	if len(got) != 8 || len(filled) != 4 {
		t.Errorf("matrix cells %d (%v), want 8 with 4 filled", len(got), filled)
	}
	if n := len(byClass(doc, "mismatch")); n != 2 { // the matrix cell and the table row
		t.Errorf("%d mismatch marks, want 2", n)
	}
	cdfs, ts := 0, 0
	for _, svg := range byClass(doc, "cdf") {
		if hasClass(svg, "ts") {
			ts++
		} else {
			cdfs++
		}
	}
	if cdfs != 4 || ts != 6 { // for each scenario: acquire and handoff CDFs; throughput, acquire and handoff over time
		t.Errorf("%d CDF charts and %d time series, want 4 and 6", cdfs, ts)
	}
	for _, want := range []string{"<h2>Throughput over time</h2>", "<h2>Latency over time</h2>", "handoff p50/p99 ", "1 violation ·", "contention: handoff latency"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("suite page lacks %q", want)
		}
	}
	if !strings.Contains(b.String(), `href="runs/queue-contention/report.html"`) {
		t.Error("no link to a cell's run report")
	}
	if err := WriteSuiteHTML(&b, Suite{}, nil); err != nil {
		t.Errorf("empty suite: %v", err)
	}
}

// TestSuitePageOpensWithItsResult: the page's first line is the suite's
// result, an expected failure is drawn muted and not as a mismatch, and
// the header's identity is shown.
func TestSuitePageOpensWithItsResult(t *testing.T) {
	cells := suiteCells()
	header := Suite{Lockbench: "v1.2.3 0123456789ab", Started: "2026-12-04T17:29:48Z", WallS: 38.2,
		Host: &Host{CPUModel: "Test CPU", CPUs: 2, OS: "linux", Arch: "amd64", Kernel: "6.1"}}
	cases := []struct {
		name      string
		header    Suite
		cells     []Cell
		class     string
		line      string
		identity  []string
		expFailed int // cells drawn as expected failures (matrix cell and table row each)
	}{
		{"one mismatch", header, cells, "not-as-expected", "1 of 4 cells not as expected",
			[]string{"lockbench v1.2.3 0123456789ab", "started 2026-12-04 17:29 UTC", "took 38s", "on etcd", "host Test CPU, 2 CPUs"}, 1},
		// A header without identity (an older suite.json): what the cells say.
		{"all as expected", Suite{}, cells[:2], "as-expected", "2 cells, all as expected", []string{"on etcd"}, 1},
		{"interrupted", Suite{Interrupted: true, NotRun: []string{"a/b", "c/d"}}, cells[:1], "incomplete", "1 cell, all as expected — interrupted, 2 cells not run", []string{"on etcd"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteSuiteHTML(&b, tc.header, tc.cells); err != nil {
				t.Fatal(err)
			}
			doc := parseHTML(t, b.Bytes())
			out := byClass(doc, "outcome")
			if len(out) != 1 || !hasClass(out[0], tc.class) || textOf(out[0]) != tc.line {
				t.Fatalf("outcome = %d elements, first %q, want one of class %s: %q", len(out), firstText(out), tc.class, tc.line)
			}
			if n := len(byClass(doc, "expected-fail")); n != 2*tc.expFailed {
				t.Errorf("%d expected-fail marks, want %d", n, 2*tc.expFailed)
			}
			ids := byClass(doc, "identity")
			for _, want := range tc.identity {
				if len(ids) != 1 || !strings.Contains(textOf(ids[0]), want) {
					t.Errorf("identity %q lacks %q", firstText(ids), want)
				}
			}
		})
	}
}

func firstText(ns []*html.Node) string {
	if len(ns) == 0 {
		return ""
	}
	return textOf(ns[0])
}

func TestCDFSVG(t *testing.T) {
	svg := string(cdfSVG("t <x>", []cdfSeries{{Name: "a", Points: []Quantile{{0, 0}, {0.5, 1}, {1, 2500}}, N: 1000}, {Name: "b"}}))
	for _, want := range []string{`class="cdf"`, "t &lt;x&gt;", "b (no samples)", "a (n=1000, min ≤ 0 ms at the left edge)", ">1ms<", ">10s<", "<path"} {
		if !strings.Contains(svg, want) {
			t.Errorf("svg lacks %q:\n%s", want, svg)
		}
	}
	if empty := string(cdfSVG("e", nil)); !strings.Contains(empty, "no samples") {
		t.Error("empty chart")
	}
	// Few samples: a step CDF through every sample, n in the legend.
	step := string(cdfSVG("s", []cdfSeries{latencySeries("lease_overrun", Latency{Count: 4, P50: 2, Max: 8, Samples: []float64{-3, 1, 2, 8},
		CDF: []Quantile{{0, -3}, {0.5, 2}, {1, 8}}})}))
	if strings.Count(step, `class="cdf-sample"`) != 4 || !strings.Contains(step, `class="cdf-step"`) ||
		!strings.Contains(step, "lease_overrun (n=4, 1 ≤ 0 ms at the left edge)") || !strings.Contains(step, "H") {
		t.Errorf("step CDF:\n%s", step)
	}
}

func TestMetricTextAndCounts(t *testing.T) {
	for v, want := range map[float64]string{3650: "3650", 3651.4: "3651", 1.05: "1.05", 0.995: "0.995", 0.00012: "0.00012", 12.345: "12.35", -2: "-2"} {
		if got := metricText(v); got != want {
			t.Errorf("metricText(%v) = %q, want %q", v, got, want)
		}
	}
	if countNoun(1, "overlap") != "1 overlap" || countNoun(2, "acquire") != "2 acquires" || countNoun(0, "violation") != "0 violations" {
		t.Error("countNoun")
	}
	if FormatMS(-1000.4) != "-1000" || FormatMS(-12.34) != "-12.3" {
		t.Errorf("FormatMS of negatives: %s %s", FormatMS(-1000.4), FormatMS(-12.34))
	}
}

// A version matrix's page puts each cell's binaries side by side: a
// matrix column per scenario and binary, each filled cell naming its own.
func TestWriteSuiteHTMLVersions(t *testing.T) {
	var cells []Cell
	for _, c := range suiteCells()[:2] {
		for _, e := range [][2]string{{"self", "3.7.3"}, {"/usr/bin/etcd", "3.4.23"}} {
			c.Summary.Etcd, c.Summary.EtcdVersion = e[0], e[1]
			cells = append(cells, c)
		}
	}
	var b bytes.Buffer
	if err := WriteSuiteHTML(&b, Suite{}, cells); err != nil {
		t.Fatal(err)
	}
	doc := parseHTML(t, b.Bytes())
	etcds := map[string]int{}
	for _, c := range byClass(doc, "cell") {
		if e, ok := attr(c, "data-etcd"); ok {
			etcds[e]++
		}
	}
	if etcds["3.7.3 (self)"] != 2 || etcds["3.4.23 (/usr/bin/etcd)"] != 2 {
		t.Errorf("matrix cells by binary %v, want 2 of each", etcds)
	}
	for _, want := range []string{"contention · etcd 3.4.23 (/usr/bin/etcd)", "on etcd 3.7.3 (self)", "× 2 etcd binaries: 3.7.3 (self), 3.4.23 (/usr/bin/etcd)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("suite page lacks %q", want)
		}
	}
}

// textOf is n's text, its descendants' joined.
func textOf(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	})
	return strings.TrimSpace(b.String())
}
