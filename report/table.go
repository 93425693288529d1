package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/lockbench/lockbench/verdict"
)

// RunTable prints a run's headline figures (what users compare first),
// then its latency distributions (LatencyTable) and, with several lock
// names, its figures by name (NamesTable).
func RunTable(w io.Writer, s Summary) error {
	t := newTable(w, "LLRRRRRRRRL")
	t.Header("lock", "scenario", "clients", "acquisitions", "acq/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "violations", "verdict")
	a := s.LatencyMS[LatAcquire]
	if err := t.Append(s.Lock, s.Scenario, fmt.Sprint(s.Clients), fmt.Sprint(s.Acquisitions),
		fmt.Sprintf("%.1f", s.ThroughputPerS), FormatMS(a.P50), FormatMS(a.P90), FormatMS(a.P99), FormatMS(a.Max),
		fmt.Sprint(s.TotalViolations()), string(s.Verdict)); err != nil {
		return err
	}
	if err := t.Render(); err != nil {
		return err
	}
	if err := LatencyTable(w, s); err != nil {
		return err
	}
	return NamesTable(w, s)
}

// LatencyTable prints every distribution of LatencyNames: count, p50, p90,
// p99, p99.9 and max in milliseconds ("-" where there are no samples).
func LatencyTable(w io.Writer, s Summary) error {
	t := newTable(w, "LRRRRRR")
	t.Header("latency", "count", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms")
	for _, n := range LatencyNames {
		l := s.LatencyMS[n]
		row := []any{n, fmt.Sprint(l.Count), "-", "-", "-", "-", "-"}
		if l.Count > 0 {
			row = []any{n, fmt.Sprint(l.Count), FormatMS(l.P50), FormatMS(l.P90), FormatMS(l.P99), FormatMS(l.P999), FormatMS(l.Max)}
		}
		if err := t.Append(row...); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	openLoopLine(w, s.OpenLoop)
	return nil
}

// ChecksTable prints each check's verdict, violation count and note.
func ChecksTable(w io.Writer, s Summary) error {
	t := newTable(w, "LLRL")
	t.Header("check", "verdict", "violations", "note")
	for _, n := range checkNames(s.Checks) {
		r := s.Checks[n]
		if err := t.Append(n, r.Outcome(), fmt.Sprint(r.Count), clip(r.Note, 72)); err != nil {
			return err
		}
	}
	return t.Render()
}

// SuiteTable prints the suite matrix, one row per cell: strategy ×
// scenario × keepalive policy (× etcd binary, a column only when the cells
// ran on more than one), the verdict against the expectation, throughput,
// handoff p50/p99, violations and wake-ups per handoff; under it, why
// the scenarios do not judge the checks its "expected" column shows as
// "any" (writeAnyReasons).
func SuiteTable(w io.Writer, cells []Cell) error {
	etcds := len(EtcdLabels(cells)) > 1
	align, head := "LLLLLLRRRRR", []any{"lock", "scenario", "keepalive", "verdict", "expected", "match", "acq/s", "handoff p50 ms", "handoff p99 ms", "violations", "wakeups/handoff"}
	if etcds {
		align, head = "LLLL"+align[3:], slices.Insert(head, 3, any("etcd"))
	}
	t := newTable(w, align)
	t.Header(head...)
	for _, c := range cells {
		s := c.Summary
		h := s.LatencyMS[LatHandoff]
		p50, p99 := "-", "-"
		if h.Count > 0 {
			p50, p99 = FormatMS(h.P50), FormatMS(h.P99)
		}
		ka := s.KeepAlive
		if ka == "" {
			ka = "-"
		}
		row := []any{s.Lock, s.Scenario, ka, cellVerdictString(c), expectedString(c), matchString(c),
			fmt.Sprintf("%.1f", s.ThroughputPerS), p50, p99, fmt.Sprint(s.TotalViolations()), wakeupsString(s)}
		if etcds {
			row = slices.Insert(row, 3, any(s.EtcdLabel()))
		}
		if err := t.Append(row...); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	return writeAnyReasons(w, cells)
}

// unjudgedFailures are the checks of a suite cell that did not pass and
// that its scenario does not judge ("any"), in check order; none for a
// cell without expectations (a lone run).
func unjudgedFailures(c Cell) []string {
	if c.ExpectedChecks == nil {
		return nil
	}
	var out []string
	for _, n := range checkNames(c.Summary.Checks) {
		if _, judged := c.ExpectedChecks[n]; !judged && c.Summary.Checks[n].Verdict != verdict.Pass {
			out = append(out, n)
		}
	}
	return out
}

// firstSentence is s up to its first full stop, to keep a reason to one
// line (the scenario file has the rest); the stop of "i.e." or "e.g."
// ends no sentence.
func firstSentence(s string) string {
	for from := 0; ; {
		i := strings.Index(s[from:], ". ")
		if i < 0 {
			return s
		}
		end := from + i + 1
		if !strings.HasSuffix(s[:end], "i.e.") && !strings.HasSuffix(s[:end], "e.g.") {
			return s[:end]
		}
		from = end
	}
}

// writeAnyReasons writes, under the suite table, why the scenario does
// not judge each check its "expected" column shows as "any", where the
// scenario says why: one line per reason (its first sentence), naming the
// cells it covers.
func writeAnyReasons(w io.Writer, cells []Cell) error {
	type reason struct{ check, why string }
	var order []reason
	where := map[reason][]string{}
	for _, c := range cells {
		for _, n := range unjudgedFailures(c) {
			why := c.AnyReasons[n]
			if why == "" {
				continue
			}
			r := reason{n, why}
			if _, seen := where[r]; !seen {
				order = append(order, r)
			}
			cell := c.Summary.Lock + " × " + c.Summary.Scenario
			if !slices.Contains(where[r], cell) {
				where[r] = append(where[r], cell)
			}
		}
	}
	for _, r := range order {
		if _, err := fmt.Fprintf(w, "%s: any in %s: %s\n", r.check, strings.Join(where[r], ", "), firstSentence(r.why)); err != nil {
			return err
		}
	}
	return nil
}

// runVerdictString is the run's verdict and the checks that did not pass,
// e.g. "fail: exclusion, resource".
func runVerdictString(s Summary) string {
	var not []string
	for _, n := range checkNames(s.Checks) {
		if v := s.Checks[n].Verdict; v != verdict.Pass {
			not = append(not, n)
		}
	}
	if len(not) == 0 {
		return string(s.Verdict)
	}
	return string(s.Verdict) + ": " + strings.Join(not, ", ")
}

// cellVerdictString is runVerdictString with every failing check the
// scenario does not assert marked "(not asserted)", so that a failure is
// never shown beside an expected "pass" as if it had been asserted.
func cellVerdictString(c Cell) string {
	s := c.Summary
	if c.ExpectedChecks == nil {
		return runVerdictString(s)
	}
	var not []string
	for _, n := range checkNames(s.Checks) {
		if v := s.Checks[n].Verdict; v != verdict.Pass {
			if _, judged := c.ExpectedChecks[n]; !judged {
				n += " (not asserted)"
			}
			not = append(not, n)
		}
	}
	if len(not) == 0 {
		return string(s.Verdict)
	}
	return string(s.Verdict) + ": " + strings.Join(not, ", ")
}

// expectedString is what the scenario expects, in the same form as
// runVerdictString: "pass", or the verdict and the checks expected not to
// pass, then "CHECK: any" for each check that did not pass and is not
// judged, so that a failing check never sits beside a bare "pass" as if
// it had been asserted (writeAnyReasons says why, under the table).
func expectedString(c Cell) string {
	s := assertedString(c)
	for _, n := range unjudgedFailures(c) {
		s += "; " + n + ": any"
	}
	return s
}

// assertedString is what the scenario asserts: "pass", or the verdict and
// the checks expected not to pass.
func assertedString(c Cell) string {
	if len(c.ExpectedChecks) == 0 {
		if c.Expected == "" {
			return "-"
		}
		return string(c.Expected)
	}
	var not []string
	var vs []verdict.Verdict
	for _, n := range checkNames(c.ExpectedChecks) {
		v := c.ExpectedChecks[n]
		vs = append(vs, v)
		if v != verdict.Pass {
			not = append(not, n)
		}
	}
	if len(not) == 0 {
		return string(verdict.Pass)
	}
	return string(verdict.Worst(vs...)) + ": " + strings.Join(not, ", ")
}

func matchString(c Cell) string {
	switch {
	case c.Summary.Interrupted:
		// Cut short: its verdicts are of part of a run, never a match.
		return "NO (interrupted)"
	case c.Saturated():
		// Not a verdict about the lock: the harness was overloaded.
		return "harness saturated"
	case c.Mismatch():
		return "NO"
	case c.Expected == "" && c.Note == "":
		return "-"
	}
	return "yes"
}

func wakeupsString(s Summary) string {
	if v, ok := s.WakeupsPerHandoff(); ok && !s.Checks[verdict.Herd].NotJudged {
		return fmt.Sprintf("%.2f", v)
	}
	return "-"
}

// checkNames lists the checks of a summary: verdict.CheckNames first, in
// their order, then any others sorted.
func checkNames[V any](m map[string]V) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range verdict.CheckNames {
		if _, ok := m[n]; ok {
			out = append(out, n)
			seen[n] = true
		}
	}
	var rest []string
	for n := range m {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// newTable is the one table style of every report: headers as written,
// text left-aligned and numbers right-aligned. align has one letter per
// column, L or R (columns past it are right-aligned).
func newTable(w io.Writer, align string) *tablewriter.Table {
	per := make([]tw.Align, len(align))
	for i, c := range align {
		per[i] = tw.AlignRight
		if c == 'L' {
			per[i] = tw.AlignLeft
		}
	}
	return tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{Global: tw.AlignRight, PerColumn: per}))
}

// FormatMS renders milliseconds with two decimals below 10, one below 100
// and none above (0.41, 12.3, 250): the one format of every table, page and comparison,
// so that the same latency reads the same everywhere (the bench's text
// report should use it too).
func FormatMS(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// clip shortens s to n runes, on one line.
func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// ms is FormatMS under the short name svg.go still calls.
func ms(v float64) string { return FormatMS(v) }
