package report

import (
	"bufio"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strings"
)

// OpenLoopBench is bench.json's open_loop: each strategy under open-loop
// load (bench --rate), at one offered rate or swept to its saturation
// rate, with every run's achieved rate and acquire latency measured from
// each arrival's intended start (docs/design.md §3).
type OpenLoopBench struct {
	// Arrivals is the arrival process (uniform, poisson); Clients the pool
	// of clients that serve the arrivals.
	Arrivals string `json:"arrivals"`
	Clients  int    `json:"clients"`
	// RatePerS is the offered rate of bench --rate R; 0 in a sweep.
	RatePerS float64 `json:"rate_per_s,omitempty"`
	Sweep    bool    `json:"sweep,omitempty"`
	// Method says how a run is judged sustained and, in a sweep, how the
	// saturation rate is searched for (harness.RateMethod, SweepMethod).
	Method     string         `json:"method,omitempty"`
	Strategies []RateStrategy `json:"strategies"`
}

// RateStrategy is one strategy's open-loop runs.
type RateStrategy struct {
	Lock string `json:"lock"`
	// SaturationPerS is the highest offered rate the sweep found
	// sustained (0: none, or no sweep).
	SaturationPerS float64 `json:"saturation_per_s,omitempty"`
	// ReferenceP50MS is the sweep's first probe's acquire p50: the
	// light-load latency a run's median is held to (harness.KneeFactor).
	ReferenceP50MS float64 `json:"reference_p50_ms,omitempty"`
	// Probes are the sweep's search runs, in the order they ran.
	Probes []RatePoint `json:"probes,omitempty"`
	// Points are the runs reported: bench --rate R's one, or the sweep's
	// at 50, 80 and 95 % of SaturationPerS.
	Points []RatePoint `json:"points"`
	Error  string      `json:"error,omitempty"`
}

// RatePoint is one open-loop run at an offered rate.
type RatePoint struct {
	// Fraction is the offered rate ÷ the saturation rate (sweep points).
	Fraction     float64 `json:"fraction,omitempty"`
	OfferedPerS  float64 `json:"offered_per_s"`
	AchievedPerS float64 `json:"achieved_per_s"`
	Acquisitions int     `json:"acquisitions"`
	// AcquireMS is intended start → grant; QueuedMS intended start →
	// invoke (waiting for a free client); ServiceMS invoke → grant (what a
	// closed-loop tool would report). EarlyP50MS and LateP50MS are the
	// acquire p50 of the run's first and second half of grants.
	AcquireMS  Latency `json:"acquire_ms"`
	QueuedMS   Latency `json:"queued_ms"`
	ServiceMS  Latency `json:"service_ms"`
	EarlyP50MS float64 `json:"early_p50_ms"`
	LateP50MS  float64 `json:"late_p50_ms"`
	// Sustained says the run kept up with its offered rate (Method).
	Sustained  bool   `json:"sustained"`
	Violations int    `json:"violations"`
	Verdict    string `json:"verdict,omitempty"`
	Saturated  string `json:"saturated,omitempty"`
	Run        string `json:"run,omitempty"`
	Note       string `json:"note,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Percent is Fraction in per cent, for the page.
func (p RatePoint) Percent() float64 { return 100 * p.Fraction }

// failed reports whether the run found a violation.
func (p RatePoint) failed() bool { return p.Violations > 0 || p.Verdict == "fail" }

// openLoopPoints are every open-loop run of b, probes included.
func (b *Bench) openLoopPoints() []RatePoint {
	if b.OpenLoop == nil {
		return nil
	}
	var out []RatePoint
	for _, s := range b.OpenLoop.Strategies {
		out = append(append(out, s.Probes...), s.Points...)
	}
	return out
}

// openLoopFailures counts the open-loop runs that found a violation on a
// harness that was saturated (saturated true) or not.
func (b *Bench) openLoopFailures(saturated bool) int {
	n := 0
	for _, p := range b.openLoopPoints() {
		if p.failed() && (p.Saturated != "") == saturated {
			n++
		}
	}
	return n
}

// benchOpenLoopLines prints the open-loop table: per strategy its
// saturation rate (sweep) and each reported run's offered and achieved
// rate and acquire p50/p99 from the intended start, beside the service
// p99 from the call (what a closed-loop tool would report).
func benchOpenLoopLines(w io.Writer, b *Bench) error {
	o := b.OpenLoop
	if o == nil {
		return nil
	}
	t := newTable(w, "LRRRRRRRRL")
	t.Header("lock", "saturation /s", "% of sat.", "offered /s", "achieved /s", "acquire p50 ms", "acquire p99 ms", "queued p99 ms", "service p99 ms", "sustained")
	for _, s := range o.Strategies {
		sat := "-"
		if s.SaturationPerS > 0 {
			sat = fmt.Sprintf("%.1f", s.SaturationPerS)
		}
		if s.Error != "" && len(s.Points) == 0 {
			if err := t.Append(s.Lock, sat, "-", "-", "-", "-", "-", "-", "-", "error"); err != nil {
				return err
			}
		}
		for _, p := range s.Points {
			if err := t.Append(rateRow(s.Lock, sat, p)...); err != nil {
				return err
			}
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintf(w, "open loop: %s arrivals served by a pool of %d clients; acquire latency from each arrival's intended start (queued: waiting for a free client; service: from the call, as a closed loop would measure)\n", o.Arrivals, o.Clients)
	if o.Method != "" {
		label := "sustained"
		if o.Sweep {
			label = "sweep"
		}
		fmt.Fprintf(w, "%s: %s\n", label, o.Method)
	}
	for _, s := range o.Strategies {
		openLoopNotes(w, s)
	}
	return nil
}

// rateRow is one row of the open-loop table.
func rateRow(lock, sat string, p RatePoint) []any {
	frac := "-"
	if p.Fraction > 0 {
		frac = fmt.Sprintf("%.0f %%", 100*p.Fraction)
	}
	if p.Error != "" {
		return []any{lock, sat, frac, fmt.Sprintf("%.1f", p.OfferedPerS), "error", "-", "-", "-", "-", "-"}
	}
	sustained := "yes"
	if !p.Sustained {
		sustained = "NO"
	}
	return []any{lock, sat, frac, fmt.Sprintf("%.1f", p.OfferedPerS), fmt.Sprintf("%.1f", p.AchievedPerS),
		ms(p.AcquireMS.P50), ms(p.AcquireMS.P99), ms(p.QueuedMS.P99), ms(p.ServiceMS.P99), sustained}
}

// openLoopNotes prints a strategy's search and what went wrong in its runs.
func openLoopNotes(w io.Writer, s RateStrategy) {
	if len(s.Probes) > 0 {
		var ps []string
		for _, p := range s.Probes {
			mark := "✓"
			if !p.Sustained {
				mark = "✗"
			}
			ps = append(ps, fmt.Sprintf("%.1f%s", p.OfferedPerS, mark))
		}
		fmt.Fprintf(w, "%s: probes (offered /s, ✓ sustained): %s → saturation %.1f/s\n", s.Lock, strings.Join(ps, " "), s.SaturationPerS)
	}
	if s.Error != "" {
		fmt.Fprintf(w, "%s: error: %s\n", s.Lock, s.Error)
	}
	for _, p := range append(slices.Clone(s.Probes), s.Points...) {
		switch {
		case p.Error != "":
			fmt.Fprintf(w, "%s at %.1f/s: error: %s\n", s.Lock, p.OfferedPerS, p.Error)
		case p.Saturated != "":
			fmt.Fprintf(w, "%s at %.1f/s: harness saturated, figures include its queueing: %s\n", s.Lock, p.OfferedPerS, p.Saturated)
		case p.failed():
			fmt.Fprintf(w, "%s at %.1f/s: %d violations (verdict %s), see %s\n", s.Lock, p.OfferedPerS, p.Violations, p.Verdict, p.Run)
		}
		if p.Note != "" {
			fmt.Fprintf(w, "%s at %.1f/s: %s\n", s.Lock, p.OfferedPerS, p.Note)
		}
	}
}

// writeOpenLoopLines writes the open-loop runs as Go benchmark lines
// (BenchmarkOpenLoop/lock=L/offered=R), one per reported run.
func writeOpenLoopLines(w *bufio.Writer, b *Bench) {
	o := b.OpenLoop
	if o == nil {
		return
	}
	for _, s := range o.Strategies {
		for _, p := range s.Points {
			if p.Error != "" || p.AcquireMS.Count == 0 {
				continue
			}
			fmt.Fprintf(w, "BenchmarkOpenLoop/lock=%s/arrivals=%s/clients=%d/offered=%s 1 %d ns/acquire %d p99-ns/acquire %d p99-ns/service %s acquires/s\n",
				benchName(s.Lock), benchName(o.Arrivals), o.Clients, fmtFloat(round(p.OfferedPerS, 1)),
				nsOfMS(p.AcquireMS.P50), nsOfMS(p.AcquireMS.P99), nsOfMS(p.ServiceMS.P99), fmtFloat(round(p.AchievedPerS, 1)))
		}
	}
}

// benchPage is bench.html.
type benchPage struct {
	page
	B     *Bench
	Chart template.HTML
}

// WriteBenchHTML writes bench.html for a bench with open-loop runs: a
// self-contained page (as report.html) with the open-loop table and a
// chart of acquire latency (p50 and p99, from the intended start) against
// the offered rate, one line per strategy over every run the sweep made,
// its saturation rate marked. It reads only b.
func WriteBenchHTML(w io.Writer, b *Bench) error {
	return render(w, "bench.html.tmpl", benchPage{page: newPage("lockbench bench " + b.ID), B: b, Chart: rateSVG(b.OpenLoop)})
}

// rateSVG draws acquire latency against the offered rate: for each
// strategy, p99 (solid) and p50 (dashed) over its runs in rate order, and
// a vertical mark at its saturation rate.
func rateSVG(o *OpenLoopBench) template.HTML {
	var lines []tsLine
	var sats []float64
	maxRate := 0.0
	if o != nil {
		for _, s := range o.Strategies {
			runs := append(slices.Clone(s.Probes), s.Points...)
			runs = slices.DeleteFunc(runs, func(p RatePoint) bool { return p.Error != "" || p.AcquireMS.Count == 0 })
			slices.SortStableFunc(runs, func(a, b RatePoint) int { return cmpFloat(a.OfferedPerS, b.OfferedPerS) })
			p99 := tsLine{Name: s.Lock + " p99"}
			p50 := tsLine{Name: s.Lock + " p50", Dash: true}
			for _, p := range runs {
				p99.X, p99.Y = append(p99.X, p.OfferedPerS), append(p99.Y, p.AcquireMS.P99)
				p50.X, p50.Y = append(p50.X, p.OfferedPerS), append(p50.Y, p.AcquireMS.P50)
				maxRate = math.Max(maxRate, p.OfferedPerS)
			}
			lines = append(lines, p99, p50)
			sats = append(sats, s.SaturationPerS)
		}
	}
	c := tsChart{Title: "acquire latency from the intended start vs offered rate", Log: true, EndS: niceCeil(math.Max(maxRate, 1)), Lines: lines}
	items := make([]legendItem, len(lines))
	for i, l := range lines {
		items[i] = legendItem{Label: l.Name, Color: palette[(i/2)%len(palette)], Dash: l.Dash}
	}
	leg, lh := legendLayout(items, cdfH-2)
	var b strings.Builder
	svgOpen(&b, "cdf rate", c.Title, cdfH+lh)
	lo, hi := tsRange(c)
	if math.IsInf(lo, 0) {
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="cdf-empty">no samples</text>%s</svg>`, cdfLeft, cdfH/2, leg)
		return template.HTML(b.String())
	}
	g := tsAxes(c, lo, hi)
	rateGrid(&b, g, c, lo, hi)
	for i, sat := range sats {
		if sat > 0 {
			x := g.x(sat)
			fmt.Fprintf(&b, `<line class="rate-saturation" x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="2 3"><title>%s saturation %.1f/s</title></line>`,
				x, tsTop, x, float64(tsTop)+g.ph, palette[i%len(palette)], template.HTMLEscapeString(o.Strategies[i].Lock), sat)
		}
	}
	for i, l := range lines {
		ratePlot(&b, g, l, palette[(i/2)%len(palette)])
	}
	b.WriteString(leg)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// rateGrid draws the offered-rate axis (/s) and the latency axis (log).
func rateGrid(b *strings.Builder, g tsGeom, c tsChart, lo, hi float64) {
	b.WriteString(`<g class="cdf-grid">`)
	step := niceCeil(c.EndS / 8)
	for r := 0.0; r <= c.EndS+step/1000; r += step {
		xx := g.x(r)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`,
			xx, tsTop, xx, float64(tsTop)+g.ph, xx, float64(tsTop)+g.ph+14, trimFloat(r))
	}
	for v := lo; v <= hi*1.001; v *= 10 {
		yy := g.y(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`,
			cdfLeft, yy, float64(cdfLeft)+g.pw, yy, cdfLeft-4, yy+3, fmtMSLabel(v))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">offered rate, acquisitions/s · latency (log scale)</text>`, float64(cdfLeft)+g.pw/2, cdfH-8)
	b.WriteString(`</g>`)
}

// ratePlot draws one line with a dot per run (class "rate-point").
func ratePlot(b *strings.Builder, g tsGeom, l tsLine, color string) {
	name := template.HTMLEscapeString(l.Name)
	var path, dots strings.Builder
	for i, v := range l.Y {
		if v <= 0 {
			continue
		}
		x, y := g.x(l.X[i]), g.y(v)
		fmt.Fprintf(&path, "%s%.1f,%.1f", map[bool]string{true: "M", false: "L"}[path.Len() == 0], x, y)
		fmt.Fprintf(&dots, `<circle class="rate-point" cx="%.1f" cy="%.1f" r="2.5"><title>%s at %s/s offered: %s ms</title></circle>`,
			x, y, name, trimFloat(l.X[i]), ms(v))
	}
	seriesGroup(b, name, color, l.Dash, path.String(), dots.String())
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
