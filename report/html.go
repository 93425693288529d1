package report

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

//go:embed assets/*
var assets embed.FS

// Limits of what a page lists (the timeline draws every violation the
// summary holds).
const (
	htmlViolationsPerCheck = 5 // violations listed per check
	htmlEventsPerViolation = 8 // events shown per violation
)

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"ms":     func(v float64) string { return FormatMS(v) },
	"f1":     func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"metric": metricText,
	"count":  countNoun,
	"pct":    func(v float64) template.CSS { return template.CSS(fmt.Sprintf("%.4f%%", v)) },
}).ParseFS(assets, "assets/*.tmpl"))

// metricText renders a check's figure without exponents (3651, 1.05,
// 0.00123): integers as they are, else to three significant digits.
func metricText(v float64) string {
	a := math.Abs(v)
	switch {
	case v == float64(int64(v)) && a < 1e15:
		return fmt.Sprint(int64(v))
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 1:
		return trimFloat(v)
	case a >= 0.001:
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", v), "0"), ".")
	}
	return fmt.Sprintf("%.2g", v)
}

// countNoun is "1 overlap", "2 overlaps": n and the noun, with an s
// unless n is 1.
func countNoun(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// WriteRunHTML writes report.html for one run: a single self-contained file
// (inline CSS, script and data; nothing fetched) with
//
//   - the headline and latency tables, and latency CDFs (inline SVG, log
//     time axis);
//   - a timeline with one lane per client (element class "lane",
//     data-process): waiting as a thin bar, holding as a thick bar, pauses,
//     crashes and lost leases, faults as shaded bands (class "fault") and
//     violations in red on each holder involved (class "violation",
//     data-process); wheel to zoom, drag to pan; intervals closer than a
//     pixel are merged when drawn, and beyond TimelineBudget also in the
//     file;
//   - each check's verdict, figures and first violations with the events
//     that show them.
//
// cfg is config.json (any value; json.RawMessage is shown as it is), shown
// folded; c is the run's checked history, and rc.Cell.Summary its summary
// (from Summarize over c, or as saved). The page opens with what the
// run's scenario expected of it and whether it did, the command that runs
// it again, and links to its history and its suite's page.
func WriteRunHTML(w io.Writer, cfg any, c check.Checked, rc RunContext) error {
	sum := rc.Cell.Summary
	events := c.Ops.Events
	viols := summaryViolations(sum)
	tl := buildTimeline(c.Ops, viols, sum.Clients)
	data, err := json.Marshal(tl)
	if err != nil {
		return fmt.Errorf("encode timeline: %w", err)
	}
	cfgText, err := prettyJSON(cfg)
	if err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	var cdf []cdfSeries
	for _, n := range LatencyNames {
		cdf = append(cdf, latencySeries(n, sum.LatencyMS[n]))
	}
	ts := sum.Series
	if ts == nil { // a summary written before Series existed
		s := Series(c.Ops)
		ts = &s
	}
	p := runPage{
		page:    newPage("lockbench run " + orDash(sum.RunID)),
		Sum:     sum,
		Context: rc,
		Cell:    newCellView(rc.Cell, false),
		Lat:     latencyRows(sum),
		Checks:  checkViews(sum, events),
		CDF:     cdfSVG(fmt.Sprintf("%s × %s: latency CDFs", sum.Lock, sum.Scenario), cdf),
		TL:      timelineView(tl),
		Data:    template.JS(data),
		Config:  cfgText,
		Wakeups: wakeupsString(sum),
		Through: tsSVG(tsChart{Title: "grants per second", YLabel: "grants/s " + intervalText(ts.IntervalS),
			EndS: ts.EndS(), Faults: ts.Faults, Lines: []tsLine{throughputLine("grants/s", *ts)}}),
		LatTime: tsSVG(tsChart{Title: "acquire and handoff latency, p50 and p99", YLabel: "ms " + intervalText(ts.IntervalS),
			Log: true, EndS: ts.EndS(), Faults: ts.Faults, Lines: []tsLine{
				latencyLine("acquire p50", *ts, ts.Acquire, p50, true), latencyLine("acquire p99", *ts, ts.Acquire, p99, false),
				latencyLine("handoff p50", *ts, ts.Handoff, p50, true), latencyLine("handoff p99", *ts, ts.Handoff, p99, false)}}),
	}
	return render(w, "run.html.tmpl", p)
}

// runHTMLFile is a run folder's page, rundir.HTMLFile, which the suite
// page links to (report sits below rundir and cannot import it).
const runHTMLFile = "report.html"

// WriteSuiteHTML writes the suite's report.html: self-contained like
// WriteRunHTML, with the strategy × scenario matrix (verdict against
// expectation, throughput, handoff p50/p99, violations, wake-ups per
// handoff; element class "cell"), the suite table, latency CDFs per
// strategy for each scenario (acquire and handoff), and each cell's checks
// with their first violations, linking to the cell's run report when
// Cell.Dir is set.
//
// The page opens with the suite's result in one line (suiteOutcome) and
// its identity from header (suite.json without its cells; a zero header
// for a page made from cells alone).
func WriteSuiteHTML(w io.Writer, header Suite, cells []Cell) error {
	p := suitePage{page: newPage("lockbench suite"), Outcome: suiteOutcome(header, cells), Identity: suiteIdentity(header, cells)}
	etcds := EtcdLabels(cells)
	multi := len(etcds) > 1
	var locks, scens []string
	for _, c := range cells {
		if !slices.Contains(locks, c.Summary.Lock) {
			locks = append(locks, c.Summary.Lock)
		}
		if !slices.Contains(scens, c.Summary.Scenario) {
			scens = append(scens, c.Summary.Scenario)
		}
	}
	p.Scens = len(scens)
	if multi {
		p.Etcds = etcds
	}
	// Several binaries: a column per scenario and binary, side by side.
	type column struct{ scenario, etcd string }
	var cols []column
	for _, sc := range scens {
		for _, e := range etcds {
			cols = append(cols, column{sc, e})
			if multi {
				p.Scenarios = append(p.Scenarios, sc+" · etcd "+e)
			} else {
				p.Scenarios = append(p.Scenarios, sc)
			}
		}
	}
	for _, l := range locks {
		row := matrixRow{Lock: l}
		for _, col := range cols {
			var mc *cellView
			for i := range cells {
				s := cells[i].Summary
				if s.Lock == l && s.Scenario == col.scenario && s.EtcdLabel() == col.etcd {
					v := newCellView(cells[i], multi)
					mc = &v
					break
				}
			}
			row.Cells = append(row.Cells, mc)
		}
		p.Matrix = append(p.Matrix, row)
	}
	for _, c := range cells {
		p.Cells = append(p.Cells, newCellView(c, multi))
	}
	for _, sc := range scens {
		p.CDFs = append(p.CDFs, newScenarioCharts(sc, cells, multi))
	}
	return render(w, "suite.html.tmpl", p)
}

func render(w io.Writer, name string, data any) error {
	var buf bytes.Buffer
	if err := pageTmpl.ExecuteTemplate(&buf, name, data); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// page is what every page has.
type page struct {
	Title  string
	CSS    template.CSS
	Script template.JS
}

func newPage(title string) page {
	css, _ := assets.ReadFile("assets/report.css")
	js, _ := assets.ReadFile("assets/report.js")
	return page{Title: title, CSS: template.CSS(css), Script: template.JS(js)}
}

// RunContext is what a run page says beside the run's own files.
type RunContext struct {
	// Cell is the run judged against what its scenario expects of its
	// strategy (Expected empty: nothing expected, as for a re-check of a
	// folder whose scenario this build does not know).
	Cell Cell
	// Reproduce is the command that runs the cell again.
	Reproduce string
	// Suite is the suite page's path from the run page, "" outside a
	// suite.
	Suite string
}

type runPage struct {
	page
	Context RunContext
	Cell    cellView
	Sum     Summary
	Lat     []latRow
	Checks  []checkView
	CDF     template.HTML
	TL      tlView
	Data    template.JS
	Config  string
	Wakeups string
	// Through and LatTime are the "over time" charts.
	Through, LatTime template.HTML
}

type latRow struct {
	Name string
	L    Latency
}

func latencyRows(s Summary) []latRow {
	var out []latRow
	for _, n := range LatencyNames {
		out = append(out, latRow{n, s.LatencyMS[n]})
	}
	return out
}

type checkView struct {
	Name       string
	Verdict    verdict.Verdict
	NotJudged  bool
	Count      int
	Note       string
	Metrics    []kv
	Violations []violView
	More       int
}

type kv struct {
	K string
	V float64
}

type violView struct {
	// Index is the violation's number on the timeline.
	Index   int
	Message string
	// Cause is why it happened, where the history shows it.
	Cause string
	// Who names the holders and their overlap, when the violation has
	// holders.
	Who    string
	Events []lineView
	More   int
}

type lineView struct {
	N    int
	Text string
}

// summaryViolations lists the violations of every check, in checkNames
// order: the order of the page's list and the timeline's indices.
func summaryViolations(s Summary) []check.Violation {
	var out []check.Violation
	for _, n := range checkNames(s.Checks) {
		out = append(out, s.Checks[n].Violations...)
	}
	if len(out) == 0 {
		out = s.Violations // a hand-made summary may list only these
	}
	return out
}

// violationWho names a violation's holders and, for two or more that
// overlap, the overlap ("" without holders).
func violationWho(v check.Violation) string {
	if len(v.Holders) == 0 {
		return ""
	}
	hs := make([]tlHolder, len(v.Holders))
	for i, h := range v.Holders {
		hs[i] = tlHolder{Process: h.Process, From: h.From, To: h.To}
		if h.To < 0 {
			hs[i].To = max(h.From, 0) // still held: the overlap starts at the last grant
		}
	}
	who := "held by " + holdersText(v.Holders)
	if from, to := overlap(hs); len(hs) > 1 && to >= from {
		who += fmt.Sprintf("; overlap %s – %s (%s)", fmtNS(from), fmtNS(to), fmtNS(to-from))
	}
	return who
}

func checkViews(s Summary, events []history.Event) []checkView {
	var out []checkView
	idx := 0
	for _, n := range checkNames(s.Checks) {
		r := s.Checks[n]
		cv := checkView{Name: n, Verdict: r.Verdict, NotJudged: r.NotJudged, Count: r.Count, Note: r.Note}
		for _, k := range slices.Sorted(maps.Keys(r.Metrics)) {
			cv.Metrics = append(cv.Metrics, kv{k, r.Metrics[k]})
		}
		for j, v := range r.Violations {
			if j >= htmlViolationsPerCheck {
				break
			}
			vv := violView{Index: idx + j, Message: v.Message, Cause: v.Cause, Who: violationWho(v)}
			for k, ln := range v.Lines {
				if k >= htmlEventsPerViolation {
					vv.More = len(v.Lines) - k
					break
				}
				if ln < 1 || ln > len(events) {
					continue
				}
				b, _ := json.Marshal(events[ln-1])
				vv.Events = append(vv.Events, lineView{ln, string(b)})
			}
			cv.Violations = append(cv.Violations, vv)
		}
		idx += len(r.Violations)
		cv.More = r.Count - len(cv.Violations)
		out = append(out, cv)
	}
	return out
}

// tlView is what the page's markup places before its script runs: lanes,
// fault bands and violation marks, positioned in % of the whole run so the
// page reads right without script; the script redraws on zoom.
type tlView struct {
	Lanes  []laneView
	Faults []bandView
	Span   string
	Merged string
	Empty  bool
	// LaneH is a lane's height in px: taller when there are few.
	LaneH int
}

type laneView struct {
	Process int
	Marks   []bandView
}

type bandView struct {
	Left, Width float64 // percent
	From, To    int64   // data units
	Label       string
	V           int // violation index
	Open        bool
}

func timelineView(d tlData) tlView {
	v := tlView{Span: fmtNS(d.End * d.Unit), Empty: len(d.Lanes) == 0, LaneH: 12}
	switch n := len(d.Lanes); {
	case n <= 16:
		v.LaneH = 20
	case n <= 32:
		v.LaneH = 16
	}
	if d.Merged > 0 {
		v.Merged = fmtNS(d.Merged)
	}
	end := float64(max(d.End, 1))
	band := func(from, to int64) (float64, float64) {
		l := float64(from) / end * 100
		return l, max(float64(to-from)/end*100, 0)
	}
	byProc := map[int]int{}
	for i, l := range d.Lanes {
		byProc[l.Process] = i
		v.Lanes = append(v.Lanes, laneView{Process: l.Process})
	}
	for _, f := range d.Faults {
		l, w := band(f.From, f.To)
		v.Faults = append(v.Faults, bandView{Left: l, Width: w, From: f.From, To: f.To, Label: f.Label, Open: f.Open})
	}
	for i, tv := range d.Viols {
		label := violationLabel(i, tv, d.Unit)
		marks := tv.At
		if len(tv.Holders) > 0 { // each holder's lane, over the overlap only
			marks = nil
			for _, h := range tv.Holders {
				marks = append(marks, tlHolder{Process: h.Process, From: tv.From, To: tv.To, Token: h.Token})
			}
		}
		for _, h := range marks {
			li, ok := byProc[h.Process]
			if !ok {
				continue
			}
			l, w := band(h.From, h.To)
			v.Lanes[li].Marks = append(v.Lanes[li].Marks, bandView{Left: l, Width: w, From: h.From, To: h.To, Label: label, V: i})
		}
	}
	return v
}

// violationLabel is a violation mark's tooltip: which violation, when,
// and who was involved (both holders with their tokens and history lines).
func violationLabel(i int, tv tlViol, unit int64) string {
	label := fmt.Sprintf("%s violation #%d", tv.Check, i+1)
	if len(tv.Holders) > 1 {
		label += fmt.Sprintf(": overlap %s – %s (%s)", fmtNS(tv.From*unit), fmtNS(tv.To*unit), fmtNS((tv.To-tv.From)*unit))
	}
	if tv.Who != "" {
		label += " between " + tv.Who
	}
	return label + "\n" + tv.Message
}

// fmtNS renders nanoseconds briefly: 1.5s, 250ms, 12µs.
func fmtNS(ns int64) string {
	switch {
	case ns >= 1e9:
		return trimFloat(float64(ns)/1e9) + "s"
	case ns >= 1e6:
		return trimFloat(float64(ns)/1e6) + "ms"
	case ns >= 1e3:
		return trimFloat(float64(ns)/1e3) + "µs"
	}
	return fmt.Sprintf("%dns", ns)
}

func prettyJSON(v any) (string, error) {
	var raw []byte
	switch x := v.(type) {
	case nil:
		return "", nil
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		raw = b
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw), nil
	}
	return buf.String(), nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type suitePage struct {
	page
	// Outcome is the suite's result in one line; Identity what ran it.
	Outcome  outcomeLine
	Identity []string
	// Scenarios are the matrix's column heads: a scenario, or a scenario
	// and a binary when the suite ran several (Etcds of them).
	Scenarios []string
	Scens     int
	Etcds     []string
	Matrix    []matrixRow
	Cells     []cellView
	CDFs      []scenarioCharts
}

type matrixRow struct {
	Lock  string
	Cells []*cellView // per scenario; nil where the suite has no such cell
}

// scenarioCharts are a scenario's charts in the suite page, a line per
// strategy: latency CDFs, throughput and latency over time.
type scenarioCharts struct {
	Scenario                 string
	Acquire, Handoff         template.HTML
	Through, AcqTime, HoTime template.HTML
}

// newScenarioCharts draws scenario sc's charts from its cells. The time
// charts span the longest cell; cells without a Series are left out.
// With multi (cells from several etcd binaries) each line's label names
// its binary.
func newScenarioCharts(sc string, cells []Cell, multi bool) scenarioCharts {
	var acq, hand []cdfSeries
	var through, acqT, hoT []tsLine
	var faults []FaultSpan
	end := 0.0
	for _, c := range cells {
		s := c.Summary
		if s.Scenario != sc {
			continue
		}
		label := s.Lock
		if multi {
			label += " · etcd " + s.EtcdLabel()
		}
		acq = append(acq, latencySeries(label, s.LatencyMS[LatAcquire]))
		hand = append(hand, latencySeries(label, s.LatencyMS[LatHandoff]))
		if s.Series == nil {
			continue
		}
		ts := *s.Series
		if ts.EndS() > end {
			end, faults = ts.EndS(), ts.Faults
		}
		through = append(through, throughputLine(label, ts))
		acqT = append(acqT, latencyLine(label, ts, ts.Acquire, p99, false))
		hoT = append(hoT, latencyLine(label, ts, ts.Handoff, p99, false))
	}
	chart := func(title, y string, log bool, lines []tsLine) template.HTML {
		return tsSVG(tsChart{Title: sc + ": " + title, YLabel: y, Log: log, EndS: end, Faults: faults, Lines: lines})
	}
	return scenarioCharts{Scenario: sc,
		Acquire: cdfSVG(sc+": acquire latency", acq), Handoff: cdfSVG(sc+": handoff latency", hand),
		Through: chart("grants per second", "grants/s per interval", false, through),
		AcqTime: chart("acquire latency p99", "ms, p99 per interval", true, acqT),
		HoTime:  chart("handoff latency p99", "ms, p99 per interval", true, hoT),
	}
}

type cellView struct {
	Cell
	// ExpectedFail: the cell failed as its scenario expected (a known
	// bug shown), drawn muted so that only a mismatch looks like one.
	ExpectedFail bool
	// Etcd is the cell's binary when the suite ran several ("" else).
	Etcd       string
	Handoff    Latency
	Wakeups    string
	Violations int
	Match      string
	Link       string
	Checks     []suiteCheck
	// ExpectedText is the text table's expected column (expectedString):
	// the asserted verdicts, then "CHECK: any" for each check that did not
	// pass and is not judged; Anys says why, where the scenario does.
	ExpectedText string
	Anys         []anyReason
}

// anyReason is why a scenario does not judge a check that did not pass.
type anyReason struct{ Check, Why string }

type suiteCheck struct {
	Name      string
	Verdict   verdict.Verdict
	NotJudged bool
	Count     int
	Note      string
	Messages  []string
}

func newCellView(c Cell, multi bool) cellView {
	v := cellView{Cell: c, Handoff: c.Summary.LatencyMS[LatHandoff], Wakeups: wakeupsString(c.Summary),
		Violations: c.Summary.TotalViolations(), Match: matchString(c), ExpectedText: expectedString(c),
		ExpectedFail: c.Summary.Verdict == verdict.Fail && c.Expected != "" && !c.Mismatch()}
	for _, n := range unjudgedFailures(c) {
		if why := c.AnyReasons[n]; why != "" {
			v.Anys = append(v.Anys, anyReason{n, why})
		}
	}
	if multi {
		v.Etcd = c.Summary.EtcdLabel()
	}
	if c.Dir != "" {
		v.Link = strings.TrimSuffix(c.Dir, "/") + "/" + runHTMLFile
	}
	for _, n := range checkNames(c.Summary.Checks) {
		r := c.Summary.Checks[n]
		sc := suiteCheck{Name: n, Verdict: r.Verdict, NotJudged: r.NotJudged, Count: r.Count, Note: r.Note}
		for j, vi := range r.Violations {
			if j >= 3 {
				break
			}
			sc.Messages = append(sc.Messages, vi.Explained())
		}
		v.Checks = append(v.Checks, sc)
	}
	return v
}
