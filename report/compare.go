package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/stats"
)

// DefaultThreshold is the smallest relative change of a metric's median
// that compare calls a regression, however significant (and the
// --threshold default): a real but tiny change is not worth a red build.
const DefaultThreshold = 0.20

// DefaultAlpha is the significance level of every test, after Holm's
// correction for their number (--alpha).
const DefaultAlpha = 0.05

// DefaultMinSamples is how many samples a side a cell needs before its
// timings gate: below it Mann–Whitney has no power (with 3 a side its
// smallest two-sided p is 0.1), so timings are shown, not judged.
const DefaultMinSamples = 4

// CompareOptions tune Compare. Zero values mean the defaults.
type CompareOptions struct {
	// Threshold is the minimum effect: a fraction of the base median (0.2:
	// a throughput drop or a latency rise of more than 20%).
	Threshold float64
	// MinDeltaMS is an absolute floor: a latency median that rises by less
	// than this many milliseconds is not a regression, whatever the ratio.
	MinDeltaMS float64
	// Alpha is the family-wise significance level (Holm–Bonferroni).
	Alpha float64
	// MinSamples is the fewest samples a side for a timing to gate.
	MinSamples int
	// Normalize is when figures are divided by the commit floor:
	// NormalizeAuto (""; when the hosts differ), NormalizeAlways (also on
	// one host: each run by its own suite's floor, which follows the
	// machine's load), NormalizeNever.
	Normalize string
}

// Normalize modes (CompareOptions.Normalize, compare --normalize).
const (
	NormalizeAuto   = "auto"
	NormalizeAlways = "always"
	NormalizeNever  = "never"
)

func (o CompareOptions) withDefaults() CompareOptions {
	if o.Threshold <= 0 {
		o.Threshold = DefaultThreshold
	}
	if o.Alpha <= 0 {
		o.Alpha = DefaultAlpha
	}
	if o.MinSamples <= 0 {
		o.MinSamples = DefaultMinSamples
	}
	return o
}

// Change is one difference between a base and a new cell.
type Change struct {
	// Cell is lock/scenario.
	Cell string `json:"cell"`
	// What changed: "throughput", "acquire p50", "handoff p99",
	// "<check> verdict", ...
	What string `json:"what"`
	Base string `json:"base"`
	New  string `json:"new"`
	// Delta is the relative change of the medians ("+100%").
	Delta string `json:"delta,omitempty"`
	// P is the test's p-value (Mann–Whitney or Fisher), before Holm's
	// correction; absent when nothing was tested.
	P *float64 `json:"p,omitempty"`
	// Note says why a change does not gate ("no power", "tail, not
	// gated") or what made it a regression ("asserted").
	Note string `json:"note,omitempty"`
	// Regression marks what makes compare exit 1; Better marks a
	// significant improvement.
	Regression bool `json:"regression,omitempty"`
	Better     bool `json:"better,omitempty"`
}

// String is the change on one line, for logs and test failures.
func (c Change) String() string {
	s := fmt.Sprintf("%s: %s %s → %s", c.Cell, c.What, c.Base, c.New)
	if c.Delta != "" {
		s += " (" + c.Delta + ")"
	}
	if c.Note != "" {
		s += " [" + c.Note + "]"
	}
	switch {
	case c.Regression:
		s += " REGRESSION"
	case c.Better:
		s += " better"
	}
	return s
}

// Comparison is the outcome of Compare.
type Comparison struct {
	Threshold  float64 `json:"threshold"`
	Alpha      float64 `json:"alpha"`
	MinDeltaMS float64 `json:"min_delta_ms,omitempty"`
	MinSamples int     `json:"min_samples"`
	// Cells is how many cells were in both; Tests how many timing tests
	// Holm's correction covered.
	Cells int `json:"cells"`
	Tests int `json:"tests"`
	// Normalized is set when the suites ran on different hosts and the
	// figures were divided by each side's commit floor.
	Normalized bool     `json:"normalized,omitempty"`
	Notes      []string `json:"notes,omitempty"`
	// NoPower lists cells with too few samples for their timings to gate.
	NoPower []string `json:"no_power,omitempty"`
	Changes []Change `json:"changes"`
	// Added are cells only in the new suite, Removed only in the base
	// (cells an interrupted suite never ran are not listed here).
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	// Interrupted describes each interrupted side; ScenarioChanged names
	// scenarios whose definitions differ.
	Interrupted     []string `json:"interrupted,omitempty"`
	ScenarioChanged []string `json:"scenario_changed,omitempty"`
}

// Regressions lists the changes that are regressions.
func (c Comparison) Regressions() []Change {
	var out []Change
	for _, ch := range c.Changes {
		if ch.Regression {
			out = append(out, ch)
		}
	}
	return out
}

// Incomplete reports whether the two suites cannot be compared in full:
// a cell missing from a side, an interrupted suite, a changed scenario.
// It fails compare as a regression does: a check that compared less than
// it was asked to must not pass.
func (c Comparison) Incomplete() bool {
	return len(c.Added)+len(c.Removed)+len(c.Interrupted)+len(c.ScenarioChanged) > 0
}

// Regressed reports whether compare exits 1: something got worse, or the
// comparison is incomplete.
func (c Comparison) Regressed() bool { return len(c.Regressions()) > 0 || c.Incomplete() }

// Compare compares two suites cell by cell (lock/scenario), each cell a
// set of samples (one summary per run). Timings (throughput, acquire and
// handoff p50 of each run) regress when Mann–Whitney finds the sides
// differ at Alpha after Holm's correction over all cells × metrics AND the
// median worsened by more than Threshold (and, for latencies, MinDeltaMS).
// Tail percentiles are shown, never gated. Verdicts: see compareChecks.
// Missing cells, interrupted suites and changed scenarios make the
// comparison Incomplete.
func Compare(base, next Suite, opts CompareOptions) Comparison {
	o := opts.withDefaults()
	c := Comparison{Threshold: o.Threshold, Alpha: o.Alpha, MinDeltaMS: o.MinDeltaMS, MinSamples: o.MinSamples, Changes: []Change{}}
	c.checkComplete(base, next)
	norm := c.normalization(base, next, o.Normalize)
	bg, bkeys := grouped(base.Cells)
	ng, nkeys := grouped(next.Cells)
	var timing, rates []pending
	for _, k := range bkeys {
		n, ok := ng[k]
		if !ok {
			if !slices.Contains(next.NotRun, k) {
				c.Removed = append(c.Removed, k)
			}
			continue
		}
		c.Cells++
		t, noPower := compareTimings(k, bg[k], n, norm, o)
		timing = append(timing, t...)
		if noPower {
			c.NoPower = append(c.NoPower, k)
		}
		rates = append(rates, compareChecks(k, bg[k], n, expectedFor(k, base, next))...)
	}
	for _, k := range nkeys {
		if _, ok := bg[k]; !ok && !slices.Contains(base.NotRun, k) {
			c.Added = append(c.Added, k)
		}
	}
	c.Tests = countTested(timing)
	c.notePower(timing)
	c.Changes = append(c.Changes, settle(timing, o.Alpha)...)
	c.Changes = append(c.Changes, settle(rates, o.Alpha)...)
	return c
}

// grouped gathers a suite's samples by cell key, keys in first-seen order.
func grouped(cells []Summary) (map[string][]Summary, []string) {
	m := map[string][]Summary{}
	var keys []string
	for _, s := range cells {
		k := s.Key()
		if _, ok := m[k]; !ok {
			keys = append(keys, k)
		}
		m[k] = append(m[k], s)
	}
	return m, keys
}

// checkComplete records interrupted sides and changed scenarios.
func (c *Comparison) checkComplete(base, next Suite) {
	for _, side := range []struct {
		name string
		s    Suite
	}{{"base", base}, {"new", next}} {
		if side.s.Interrupted || side.s.Error != "" {
			msg := side.name + " suite was interrupted"
			if side.s.Error != "" {
				msg = side.name + " suite stopped early: " + side.s.Error
			}
			if len(side.s.NotRun) > 0 {
				msg += "; not run: " + strings.Join(side.s.NotRun, ", ")
			}
			c.Interrupted = append(c.Interrupted, msg)
		}
	}
	for _, side := range []struct {
		name string
		s    Suite
	}{{"base", base}, {"new", next}} {
		if side.s.Schema > rundir.SchemaVersion {
			c.Notes = append(c.Notes, fmt.Sprintf("%s's file has schema_version %d, newer than this lockbench's %d: a key that changed meaning may be misread (compare with the lockbench that wrote it)",
				side.name, side.s.Schema, rundir.SchemaVersion))
		}
	}
	if base.ScenarioHashes == nil || next.ScenarioHashes == nil {
		c.Notes = append(c.Notes, "scenario definitions not compared: "+lacking(base, next, "scenario hashes", func(s Suite) bool { return s.ScenarioHashes != nil }))
		return
	}
	for _, name := range slices.Sorted(maps.Keys(base.ScenarioHashes)) {
		if h, ok := next.ScenarioHashes[name]; ok && h != base.ScenarioHashes[name] {
			c.ScenarioChanged = append(c.ScenarioChanged, name)
		}
	}
}

// lacking says which side lacks what a comparison wanted (has is false
// for it), and why, by its schema version: a file without one is older
// than the key or a summary.json; one with it was not written by
// lockbench suite.
func lacking(base, next Suite, what string, has func(Suite) bool) string {
	why := func(s Suite) string {
		if s.Schema == 0 {
			return "no schema_version: an older suite.json, or a summary.json"
		}
		return fmt.Sprintf("schema_version %d has them: not written by lockbench suite", s.Schema)
	}
	switch hb, hn := has(base), has(next); {
	case !hb && !hn && why(base) == why(next):
		return fmt.Sprintf("neither side has %s (%s)", what, why(base))
	case !hb && !hn:
		return fmt.Sprintf("neither side has %s (base: %s; new: %s)", what, why(base), why(next))
	case !hb:
		return fmt.Sprintf("base has no %s (%s)", what, why(base))
	default:
		return fmt.Sprintf("new has no %s (%s)", what, why(next))
	}
}

// pending is a change whose fate waits for Holm's correction over its
// family: it is a regression (or better) only if its test survives.
type pending struct {
	change Change
	p      float64 // NaN: not tested
	worse  bool    // gates as a regression when significant
	better bool    // counts as better when significant
	show   bool    // worth a row even when not significant
	n      [2]int  // samples a side
}

// notePower warns when no timing test could pass Holm's first step even
// with the two sides fully separated (Mann–Whitney's smallest two-sided p
// is 2 / C(n1+n2, n1)): more repetitions are needed, or fewer cells.
func (c *Comparison) notePower(ps []pending) {
	best := 1.0
	for _, p := range ps {
		if !math.IsNaN(p.p) {
			best = min(best, minMannWhitneyP(p.n[0], p.n[1]))
		}
	}
	if c.Tests > 0 && best > c.Alpha/float64(c.Tests) {
		c.Notes = append(c.Notes, fmt.Sprintf("no power: with these sample counts the smallest possible p (%.2g) cannot pass Holm's first step (α/%d = %.2g): no timing can gate; run more repetitions or fewer cells",
			best, c.Tests, c.Alpha/float64(c.Tests)))
	}
}

// minMannWhitneyP is the smallest two-sided exact p-value of samples of
// n1 and n2: 2 / C(n1+n2, n1).
func minMannWhitneyP(n1, n2 int) float64 {
	lc, _ := math.Lgamma(float64(n1 + n2 + 1))
	l1, _ := math.Lgamma(float64(n1 + 1))
	l2, _ := math.Lgamma(float64(n2 + 1))
	return math.Min(1, 2/math.Exp(lc-l1-l2))
}

func countTested(ps []pending) int {
	n := 0
	for _, p := range ps {
		if !math.IsNaN(p.p) {
			n++
		}
	}
	return n
}

// settle applies Holm–Bonferroni to the family's tests and returns the
// changes worth showing.
func settle(ps []pending, alpha float64) []Change {
	var pvals []float64
	var idx []int
	for i, p := range ps {
		if !math.IsNaN(p.p) {
			pvals = append(pvals, p.p)
			idx = append(idx, i)
		}
	}
	sig := make([]bool, len(ps))
	for j, r := range stats.Holm(pvals, alpha) {
		sig[idx[j]] = r
	}
	out := []Change{}
	for i, p := range ps {
		ch := p.change
		ch.Regression = ch.Regression || (sig[i] && p.worse)
		ch.Better = sig[i] && p.better
		if sig[i] && !p.worse && !p.better && ch.Note == "" {
			ch.Note = "significant, below the threshold"
		}
		if p.show || sig[i] || ch.Regression {
			out = append(out, ch)
		}
	}
	return out
}

// WriteComparison prints what changed, one row per change, then what
// could not be compared, then one line that says whether it regressed.
//
// Unless all, only the rows that changed something are printed (a
// regression, a significant improvement), as benchstat shows only what
// changed; one line says how many others there are.
func WriteComparison(w io.Writer, c Comparison, all bool) error {
	shown := c.shown(all)
	if err := writeChanges(w, shown); err != nil {
		return err
	}
	for _, l := range c.lines(len(c.Changes)-len(shown), all) {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

// Comparison formats (compare --format).
const (
	FormatText     = "text"
	FormatCSV      = "csv"
	FormatMarkdown = "markdown"
)

// WriteComparisonAs writes the comparison in format: text (the table and
// lines WriteComparison writes), csv (the rows alone, one header line: for
// a spreadsheet or a script) or markdown (a table and the lines as a list:
// for a pull request's comment).
func WriteComparisonAs(w io.Writer, c Comparison, all bool, format string) error {
	if format == FormatText {
		return WriteComparison(w, c, all)
	}
	shown := c.shown(all)
	if format == FormatCSV {
		cw := csv.NewWriter(w)
		cw.Write(changeHeader)
		for _, ch := range shown {
			cw.Write(changeRow(ch))
		}
		cw.Flush()
		return cw.Error()
	}
	var b strings.Builder
	if len(shown) > 0 {
		b.WriteString(markdownRow(changeHeader) + "|" + strings.Repeat(" --- |", len(changeHeader)) + "\n")
		for _, ch := range shown {
			b.WriteString(markdownRow(changeRow(ch)))
		}
		b.WriteString("\n")
	}
	for _, l := range c.lines(len(c.Changes)-len(shown), all) {
		b.WriteString("- " + l + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// markdownRow is one row of a markdown table, its pipes escaped.
func markdownRow(cells []string) string {
	esc := make([]string, len(cells))
	for i, c := range cells {
		esc[i] = strings.ReplaceAll(c, "|", `\|`)
	}
	return "| " + strings.Join(esc, " | ") + " |\n"
}

// shown are the changes a comparison prints: every one with all, else
// the significant ones.
func (c Comparison) shown(all bool) []Change {
	if all {
		return c.Changes
	}
	var shown []Change
	for _, ch := range c.Changes {
		if ch.Regression || ch.Better {
			shown = append(shown, ch)
		}
	}
	return shown
}

// lines are the sentences under the changes: what was left out, notes,
// missing and changed cells, and the verdict line last.
func (c Comparison) lines(hidden int, all bool) []string {
	var lines []string
	if hidden > 0 {
		lines = append(lines, fmt.Sprintf("%d row%s without a significant change not shown (--all shows every row)", hidden, plural(hidden)))
	}
	lines = append(lines, c.Notes...)
	if n := len(c.NoPower); n > 0 {
		where := strings.Join(c.NoPower, ", ")
		if n > 5 && !all {
			where = fmt.Sprintf("%d cells (--all or --json names them)", n)
		}
		lines = append(lines, fmt.Sprintf("no power: fewer than %d samples a side in %s: timings shown, not gated (run the suites with --reps)",
			c.MinSamples, where))
	}
	for _, k := range c.Removed {
		lines = append(lines, "MISSING from new: "+k)
	}
	for _, k := range c.Added {
		lines = append(lines, "MISSING from base: "+k)
	}
	for _, s := range c.Interrupted {
		lines = append(lines, "INTERRUPTED: "+s)
	}
	for _, s := range c.ScenarioChanged {
		lines = append(lines, "SCENARIO CHANGED: "+s+" (its definition differs between the suites: refresh the baseline)")
	}
	return append(lines, c.verdictLine())
}

// changeHeader names a change row's columns.
var changeHeader = []string{"cell", "what", "base", "new", "change", "p", "status"}

// changeRow is one change as the table, CSV and markdown print it.
func changeRow(ch Change) []string {
	status := ch.Note
	switch {
	case ch.Regression:
		status = strings.TrimSpace("REGRESSION " + ch.Note)
	case ch.Better:
		status = "better"
	}
	p := ""
	if ch.P != nil {
		p = strconv.FormatFloat(*ch.P, 'g', 2, 64)
	}
	return []string{ch.Cell, ch.What, ch.Base, ch.New, ch.Delta, p, status}
}

func writeChanges(w io.Writer, changes []Change) error {
	if len(changes) == 0 {
		return nil
	}
	t := newTable(w, "LLRRRRL")
	t.Header(changeHeader)
	for _, ch := range changes {
		if err := t.Append(changeRow(ch)); err != nil {
			return err
		}
	}
	return t.Render()
}

// verdictLine is the last line: what was tested and the outcome.
func (c Comparison) verdictLine() string {
	how := fmt.Sprintf("α %g after Holm over %d timing test%s, min effect %s", c.Alpha, c.Tests, plural(c.Tests), pctString(c.Threshold))
	if c.MinDeltaMS > 0 {
		how += fmt.Sprintf(" and %s ms", FormatMS(c.MinDeltaMS))
	}
	regs := c.Regressions()
	cells := map[string]bool{}
	for _, r := range regs {
		cells[r.Cell] = true
	}
	s := fmt.Sprintf("%d regression%s in %d of %d compared cell%s (%s)", len(regs), plural(len(regs)), len(cells), c.Cells, plural(c.Cells), how)
	if len(regs) == 0 {
		s = fmt.Sprintf("no regression in %d compared cell%s (%s)", c.Cells, plural(c.Cells), how)
	}
	if c.Incomplete() {
		s += "; INCOMPLETE: the suites do not cover the same cells and definitions"
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func pctString(f float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(f*100, 'f', -1, 64), ".0") + "%"
}

func pct(r float64) string {
	return fmt.Sprintf("%+.0f%%", r*100)
}

// ParseThreshold parses a threshold given as a positive percentage, "20%"
// or "20" (the sign is optional), into a fraction (0.2).
func ParseThreshold(s string) (float64, error) {
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return 0, fmt.Errorf("threshold %q: want a percentage > 0, e.g. 20%%", s)
	}
	return v / 100, nil
}
