package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"unicode/utf8"
)

// palette colors series in charts (and matches the page's legend).
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#d62728"}

// cdfSeries is one line of a CDF chart: a distribution's fixed quantiles,
// and all its samples when it has few (Latency.Samples).
type cdfSeries struct {
	Name    string
	Points  []Quantile
	Samples []float64
	// N is the sample count, shown in the legend.
	N int64
}

// latencySeries is the CDF series of a distribution.
func latencySeries(name string, l Latency) cdfSeries {
	return cdfSeries{Name: name, Points: l.Points(), Samples: l.Samples, N: l.Count}
}

// Chart geometry, in SVG user units. The legend sits below the plot, in
// as many rows as it needs, so no label is ever cut by the chart's edge.
const (
	cdfW, cdfH                        = 560, 300
	cdfLeft, cdfRight, cdfTop, cdfBot = 52, 16, 28, 36
	legendRow                         = 15
	// legendCharW over-estimates the width of a character of the legend
	// (11px system-ui) so an estimated row never overflows.
	legendCharW = 6.6
)

// svgOpen starts a chart of class cls, h units high (legend included).
func svgOpen(b *strings.Builder, cls, title string, h int) {
	t := template.HTMLEscapeString(title)
	fmt.Fprintf(b, `<svg class="%s" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`,
		cls, cdfW, h, cdfW, h, t)
	fmt.Fprintf(b, `<text x="%d" y="16" class="cdf-title">%s</text>`, cdfLeft, t)
}

// legendItem is one entry of a legend: a swatch and a label.
type legendItem struct {
	Label, Color string
	Dash         bool
}

// legendLayout places legend items in rows under the plot, from y0, and
// returns the markup and the height it takes.
func legendLayout(items []legendItem, y0 int) (string, int) {
	var b strings.Builder
	x, row := float64(cdfLeft), 0
	maxX := float64(cdfW - 6)
	for _, it := range items {
		label := it.Label
		maxChars := int((maxX - float64(cdfLeft) - 20) / legendCharW)
		if utf8.RuneCountInString(label) > maxChars {
			label = string([]rune(label)[:maxChars-1]) + "…"
		}
		w := 20 + legendCharW*float64(utf8.RuneCountInString(label)) + 12
		if x > float64(cdfLeft) && x+w > maxX {
			x, row = float64(cdfLeft), row+1
		}
		y := y0 + row*legendRow
		dash := ""
		if it.Dash {
			dash = ` stroke-dasharray="4 3"`
		}
		fmt.Fprintf(&b, `<g class="legend-item"><title>%s</title><line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2"%s/><text x="%.1f" y="%d" class="cdf-legend">%s</text></g>`,
			template.HTMLEscapeString(it.Label), x, y, x+14, y, it.Color, dash, x+18, y+4, template.HTMLEscapeString(label))
		x += w
	}
	if len(items) == 0 {
		return "", 0
	}
	return b.String(), (row+1)*legendRow + 4
}

// cdfSVG draws latency CDFs on a log-scale time axis as inline SVG: y is
// the fraction of samples ≤ x. A series with samples is drawn as the
// empirical step CDF of those samples, one dot per sample; one without (a
// large distribution) joins its quantiles. The legend gives each series'
// sample count; values ≤ 0 (a negative lease overrun) cannot sit on a log
// axis: they are drawn at its left edge and the legend says how many.
func cdfSVG(title string, series []cdfSeries) template.HTML {
	items := make([]legendItem, len(series))
	for i, s := range series {
		items[i] = legendItem{Label: cdfLegend(s), Color: palette[i%len(palette)]}
	}
	leg, lh := legendLayout(items, cdfH-2)
	var b strings.Builder
	svgOpen(&b, "cdf", title, cdfH+lh)
	lo, hi := cdfRange(series)
	pw, ph := float64(cdfW-cdfLeft-cdfRight), float64(cdfH-cdfTop-cdfBot)
	if math.IsInf(lo, 0) {
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="cdf-empty">no samples</text>%s</svg>`, cdfLeft, cdfTop+int(ph/2), leg)
		return template.HTML(b.String())
	}
	d0, d1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if d1 <= d0 {
		d1 = d0 + 1
	}
	ax := cdfAxes{
		x: func(ms float64) float64 {
			v := math.Log10(math.Max(ms, math.Pow(10, d0)))
			return float64(cdfLeft) + (v-d0)/(d1-d0)*pw
		},
		y: func(q float64) float64 { return float64(cdfTop) + (1-q)*ph },
	}
	cdfGrid(&b, ax, d0, d1, pw, ph)
	for i, s := range series {
		cdfLine(&b, ax, s, palette[i%len(palette)])
	}
	b.WriteString(leg)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// cdfLegend is a series' legend label: its name and sample count.
func cdfLegend(s cdfSeries) string {
	if len(s.Points) == 0 && len(s.Samples) == 0 {
		return s.Name + " (no samples)"
	}
	var parts []string
	if n := max(s.N, int64(len(s.Samples))); n > 0 {
		parts = append(parts, fmt.Sprintf("n=%d", n))
	}
	switch k := nonPositive(s); {
	case k > 0 && len(s.Samples) > 0:
		parts = append(parts, fmt.Sprintf("%d ≤ 0 ms at the left edge", k))
	case k > 0:
		parts = append(parts, "min ≤ 0 ms at the left edge")
	}
	if len(parts) == 0 {
		return s.Name
	}
	return s.Name + " (" + strings.Join(parts, ", ") + ")"
}

// nonPositive counts a series' samples ≤ 0, or its quantiles ≤ 0 when it
// keeps no samples.
func nonPositive(s cdfSeries) int {
	k := 0
	if len(s.Samples) > 0 {
		for _, v := range s.Samples {
			if v <= 0 {
				k++
			}
		}
		return k
	}
	for _, p := range s.Points {
		if p.MS <= 0 {
			k++
		}
	}
	return k
}

// cdfRange is the range of the positive values of every series (+Inf,
// -Inf when no series has any value; 1µs–1ms when none is positive).
func cdfRange(series []cdfSeries) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	any := false
	see := func(v float64) {
		any = true
		if v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	for _, s := range series {
		for _, p := range s.Points {
			see(p.MS)
		}
		for _, v := range s.Samples {
			see(v)
		}
	}
	if any && math.IsInf(lo, 0) {
		return 0.001, 1
	}
	return lo, hi
}

// cdfAxes maps ms to x and a fraction to y.
type cdfAxes struct{ x, y func(float64) float64 }

// cdfGrid draws the grid, the decades of the time axis and the quantiles.
func cdfGrid(b *strings.Builder, ax cdfAxes, d0, d1, pw, ph float64) {
	b.WriteString(`<g class="cdf-grid">`)
	for d := d0; d <= d1; d++ {
		xx := ax.x(math.Pow(10, d))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f"/>`, xx, cdfTop, xx, float64(cdfTop)+ph)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, xx, float64(cdfTop)+ph+14, fmtMSLabel(math.Pow(10, d)))
	}
	for _, q := range []float64{0, 0.25, 0.5, 0.75, 0.9, 1} {
		yy := ax.y(q)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f"/>`, cdfLeft, yy, float64(cdfLeft)+pw, yy)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, cdfLeft-4, yy+3, trimFloat(q*100)+"%")
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">latency (log scale)</text>`, float64(cdfLeft)+pw/2, cdfH-8)
	b.WriteString(`</g>`)
}

// cdfLine draws one series: a step CDF of its samples, or its quantiles
// joined, with its p50, p99 and max marked.
func cdfLine(b *strings.Builder, ax cdfAxes, s cdfSeries, color string) {
	fmt.Fprintf(b, `<g class="cdf-series" data-series="%s" data-n="%d">`, template.HTMLEscapeString(s.Name), max(s.N, int64(len(s.Samples))))
	name := template.HTMLEscapeString(s.Name)
	switch {
	case len(s.Samples) > 0:
		n := float64(len(s.Samples))
		var path strings.Builder
		fmt.Fprintf(&path, "M%.1f,%.1f", ax.x(s.Samples[0]), ax.y(0))
		for i, v := range s.Samples {
			fmt.Fprintf(&path, "H%.1fV%.1f", ax.x(v), ax.y(float64(i+1)/n))
		}
		fmt.Fprintf(b, `<path class="cdf-step" d="%s" fill="none" stroke="%s" stroke-width="1.8"/>`, path.String(), color)
		for i, v := range s.Samples {
			fmt.Fprintf(b, `<circle class="cdf-sample" cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s sample %d of %d: %s ms</title></circle>`,
				ax.x(v), ax.y(float64(i+1)/n), color, name, i+1, len(s.Samples), ms(v))
		}
	case len(s.Points) > 0:
		var path strings.Builder
		for j, p := range s.Points {
			fmt.Fprintf(&path, "%s%.1f,%.1f", map[bool]string{true: "M", false: "L"}[j == 0], ax.x(p.MS), ax.y(p.Q))
		}
		fmt.Fprintf(b, `<path d="%s" fill="none" stroke="%s" stroke-width="1.8"/>`, path.String(), color)
		for _, p := range s.Points {
			if p.Q == 0.5 || p.Q == 0.99 || p.Q == 1 {
				fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s %s: %s ms</title></circle>`,
					ax.x(p.MS), ax.y(p.Q), color, name, quantileName(p.Q), ms(p.MS))
			}
		}
	}
	b.WriteString(`</g>`)
}

func quantileName(q float64) string {
	switch q {
	case 0:
		return "min"
	case 1:
		return "max"
	}
	return "p" + trimFloat(q*100)
}

func trimFloat(v float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

// fmtMSLabel renders a power-of-ten millisecond value for an axis.
func fmtMSLabel(v float64) string {
	switch {
	case v < 0.001:
		return trimFloat(v*1e6) + "ns"
	case v < 1:
		return trimFloat(v*1000) + "µs"
	case v < 1000:
		return trimFloat(v) + "ms"
	}
	return trimFloat(v/1000) + "s"
}
