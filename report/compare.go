package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/verdict"
)

// DefaultThreshold is the relative change past which compare calls a
// throughput drop or a latency rise a regression (and the flag default).
const DefaultThreshold = 0.20

// CompareOptions tune Compare. The zero value means DefaultThreshold and no
// noise floor.
type CompareOptions struct {
	// Threshold is a fraction: 0.2 flags a throughput drop of more than
	// 20% or a latency rise of more than 20%. 0 means DefaultThreshold.
	Threshold float64
	// MinDeltaMS is a noise floor: a latency that rises by less than this
	// many milliseconds is not a regression, whatever the ratio.
	MinDeltaMS float64
}

// Change is one difference between a base and a new cell.
type Change struct {
	// Cell is lock/scenario.
	Cell string `json:"cell"`
	// What changed: "verdict", "<check> verdict", "throughput",
	// "acquire p50", "handoff p99", "violations", ...
	What string `json:"what"`
	Base string `json:"base"`
	New  string `json:"new"`
	// Delta is the relative change ("+100%"), when a ratio means something.
	Delta string `json:"delta,omitempty"`
	// Regression marks what makes compare exit 1; Better marks an
	// improvement; neither is a change worth showing but not judging.
	Regression bool `json:"regression,omitempty"`
	Better     bool `json:"better,omitempty"`
}

// String is the change on one line, for logs and test failures, where a
// table would be too much.
func (c Change) String() string {
	s := fmt.Sprintf("%s: %s %s → %s", c.Cell, c.What, c.Base, c.New)
	if c.Delta != "" {
		s += " (" + c.Delta + ")"
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
	Threshold float64 `json:"threshold"`
	// Cells is how many cells were in both.
	Cells   int      `json:"cells"`
	Changes []Change `json:"changes"`
	// Added are cells only in the new suite, Removed only in the base.
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
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

// Regressed reports whether anything got worse: compare's exit status 1.
func (c Comparison) Regressed() bool { return len(c.Regressions()) > 0 }

// Compare compares two suites cell by cell, keyed by lock/scenario (a key
// that occurs more than once is matched in order: the second with the
// second). A regression is: the verdict, or any check's verdict, worsens
// (pass → unknown or fail, unknown → fail); throughput drops by more than
// the threshold; or acquire or handoff p50 or p99 latency rises by more
// than the threshold (and by at least MinDeltaMS). Other differences past
// the threshold are listed without judgement, or marked better.
func Compare(base, next Suite, opts CompareOptions) Comparison {
	if opts.Threshold <= 0 {
		opts.Threshold = DefaultThreshold
	}
	c := Comparison{Threshold: opts.Threshold, Changes: []Change{}}
	bk, bm := keyed(base.Cells)
	nk, nm := keyed(next.Cells)
	for _, k := range bk {
		n, ok := nm[k]
		if !ok {
			c.Removed = append(c.Removed, k)
			continue
		}
		c.Cells++
		c.Changes = append(c.Changes, compareCell(k, bm[k], n, opts)...)
	}
	for _, k := range nk {
		if _, ok := bm[k]; !ok {
			c.Added = append(c.Added, k)
		}
	}
	return c
}

func keyed(cells []Summary) ([]string, map[string]Summary) {
	var keys []string
	m := map[string]Summary{}
	seen := map[string]int{}
	for _, s := range cells {
		k := s.Key()
		seen[k]++
		if seen[k] > 1 {
			k = fmt.Sprintf("%s#%d", k, seen[k])
		}
		keys = append(keys, k)
		m[k] = s
	}
	return keys, m
}

func rank(v verdict.Verdict) int {
	switch v {
	case verdict.Pass:
		return 0
	case verdict.Unknown:
		return 1
	case verdict.Fail:
		return 2
	}
	return 1 // missing or unrecognized: as good as unknown
}

func compareCell(key string, b, n Summary, o CompareOptions) []Change {
	var out []Change
	verdict := func(what string, bv, nv verdict.Verdict) {
		if bv == nv {
			return
		}
		out = append(out, Change{Cell: key, What: what, Base: verdictString(bv), New: verdictString(nv),
			Regression: rank(nv) > rank(bv), Better: rank(nv) < rank(bv)})
	}
	verdict("verdict", b.Verdict, n.Verdict)
	for _, name := range checkNames(mergeKeys(b.Checks, n.Checks)) {
		br, bok := b.Checks[name]
		nr, nok := n.Checks[name]
		if !bok || !nok {
			continue // a check only one side ran says nothing about change
		}
		verdict(name+" verdict", br.Verdict, nr.Verdict)
	}
	if bt, nt := b.ThroughputPerS, n.ThroughputPerS; bt > 0 {
		r := nt/bt - 1
		if math.Abs(r) > o.Threshold {
			out = append(out, Change{Cell: key, What: "throughput", Base: fmt.Sprintf("%.1f/s", bt), New: fmt.Sprintf("%.1f/s", nt),
				Delta: pct(r), Regression: r < 0, Better: r > 0})
		}
	}
	lat := func(name, q string, judge bool, get func(Latency) float64) {
		bl, nl := b.LatencyMS[name], n.LatencyMS[name]
		if bl.Count == 0 || nl.Count == 0 {
			if (bl.Count == 0) != (nl.Count == 0) && q == "p50" {
				out = append(out, Change{Cell: key, What: name + " samples", Base: fmt.Sprint(bl.Count), New: fmt.Sprint(nl.Count)})
			}
			return
		}
		bv, nv := get(bl), get(nl)
		if bv <= 0 {
			return
		}
		r := nv/bv - 1
		if math.Abs(r) <= o.Threshold || math.Abs(nv-bv) < o.MinDeltaMS {
			return
		}
		out = append(out, Change{Cell: key, What: name + " " + q, Base: FormatMS(bv) + " ms", New: FormatMS(nv) + " ms",
			Delta: pct(r), Regression: judge && r > 0, Better: judge && r < 0})
	}
	p50 := func(l Latency) float64 { return l.P50 }
	p99 := func(l Latency) float64 { return l.P99 }
	lat(LatAcquire, "p50", true, p50)
	lat(LatAcquire, "p99", true, p99)
	lat(LatHandoff, "p50", true, p50)
	lat(LatHandoff, "p99", true, p99)
	lat(LatUnavailability, "p50", false, p50)
	lat(LatUnavailability, "max", false, func(l Latency) float64 { return l.Max })
	if bv, nv := b.TotalViolations(), n.TotalViolations(); bv != nv {
		out = append(out, Change{Cell: key, What: "violations", Base: fmt.Sprint(bv), New: fmt.Sprint(nv)})
	}
	return out
}

func mergeKeys(a, b map[string]check.Result) map[string]check.Result {
	m := make(map[string]check.Result, len(a))
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

func verdictString(v verdict.Verdict) string {
	if v == "" {
		return "(none)"
	}
	return string(v)
}

func pct(r float64) string {
	return fmt.Sprintf("%+.0f%%", r*100)
}

// WriteComparison prints what changed, one row per change, then a line
// that says whether anything regressed.
func WriteComparison(w io.Writer, c Comparison) error {
	if len(c.Changes) > 0 {
		t := newTable(w, "LLRRRL")
		t.Header("cell", "what", "base", "new", "change", "status")
		for _, ch := range c.Changes {
			status := ""
			switch {
			case ch.Regression:
				status = "REGRESSION"
			case ch.Better:
				status = "better"
			}
			if err := t.Append(ch.Cell, ch.What, ch.Base, ch.New, ch.Delta, status); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	for _, k := range c.Removed {
		if _, err := fmt.Fprintf(w, "only in base: %s\n", k); err != nil {
			return err
		}
	}
	for _, k := range c.Added {
		if _, err := fmt.Fprintf(w, "only in new: %s\n", k); err != nil {
			return err
		}
	}
	th := strings.TrimSuffix(strconv.FormatFloat(c.Threshold*100, 'f', -1, 64), ".0") + "%"
	regs := c.Regressions()
	var err error
	switch {
	case len(regs) > 0:
		cells := map[string]bool{}
		for _, r := range regs {
			cells[r.Cell] = true
		}
		_, err = fmt.Fprintf(w, "%d regression%s in %d of %d compared cell%s (threshold %s)\n",
			len(regs), plural(len(regs)), len(cells), c.Cells, plural(c.Cells), th)
	case len(c.Changes) > 0:
		_, err = fmt.Fprintf(w, "no regression in %d compared cell%s (threshold %s)\n", c.Cells, plural(c.Cells), th)
	default:
		_, err = fmt.Fprintf(w, "no change past the threshold (%s) in %d compared cell%s\n", th, c.Cells, plural(c.Cells))
	}
	return err
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
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
