package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"
)

// palette colors series in charts (and matches the page's legend).
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#d62728"}

// cdfSeries is one line of a CDF chart.
type cdfSeries struct {
	Name   string
	Points []Quantile
}

// Chart geometry, in SVG user units.
const (
	cdfW, cdfH                        = 560, 300
	cdfLeft, cdfRight, cdfTop, cdfBot = 48, 130, 28, 36
)

// cdfSVG draws latency CDFs on a log-scale time axis as inline SVG: y is
// the fraction of samples ≤ x. Series without points are listed in the
// legend as "no samples".
func cdfSVG(title string, series []cdfSeries) template.HTML {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, p := range s.Points {
			v := math.Max(p.MS, 0.001)
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="cdf" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`,
		cdfW, cdfH, cdfW, cdfH, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<text x="%d" y="16" class="cdf-title">%s</text>`, cdfLeft, template.HTMLEscapeString(title))
	pw, ph := float64(cdfW-cdfLeft-cdfRight), float64(cdfH-cdfTop-cdfBot)
	if math.IsInf(lo, 0) {
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="cdf-empty">no samples</text></svg>`, cdfLeft, cdfTop+int(ph/2))
		return template.HTML(b.String())
	}
	d0, d1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if d1 <= d0 {
		d1 = d0 + 1
	}
	x := func(ms float64) float64 {
		v := math.Log10(math.Max(ms, 0.001))
		return float64(cdfLeft) + (v-d0)/(d1-d0)*pw
	}
	y := func(q float64) float64 { return float64(cdfTop) + (1-q)*ph }
	// Grid and axes.
	b.WriteString(`<g class="cdf-grid">`)
	for d := d0; d <= d1; d++ {
		xx := x(math.Pow(10, d))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f"/>`, xx, cdfTop, xx, float64(cdfTop)+ph)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, xx, float64(cdfTop)+ph+14, fmtMSLabel(math.Pow(10, d)))
	}
	for _, q := range []float64{0, 0.25, 0.5, 0.75, 0.9, 1} {
		yy := y(q)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f"/>`, cdfLeft, yy, float64(cdfLeft)+pw, yy)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, cdfLeft-4, yy+3, trimFloat(q*100)+"%")
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">latency (log scale)</text>`, float64(cdfLeft)+pw/2, cdfH-4)
	b.WriteString(`</g>`)
	// Series.
	for i, s := range series {
		color := palette[i%len(palette)]
		ly := cdfTop + 14*i + 6
		lx := cdfW - cdfRight + 10
		fmt.Fprintf(&b, `<g class="cdf-series" data-series="%s">`, template.HTMLEscapeString(s.Name))
		name := s.Name
		if len(s.Points) == 0 {
			name += " (no samples)"
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/><text x="%d" y="%d" class="cdf-legend">%s</text>`,
			lx, ly, lx+14, ly, color, lx+18, ly+4, template.HTMLEscapeString(name))
		if len(s.Points) > 0 {
			var path strings.Builder
			for j, p := range s.Points {
				cmd := "L"
				if j == 0 {
					cmd = "M"
				}
				fmt.Fprintf(&path, "%s%.1f,%.1f", cmd, x(p.MS), y(p.Q))
			}
			fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="1.8"/>`, path.String(), color)
			for _, p := range s.Points {
				if p.Q != 0.5 && p.Q != 0.99 && p.Q != 1 {
					continue
				}
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s %s: %s ms</title></circle>`,
					x(p.MS), y(p.Q), color, template.HTMLEscapeString(s.Name), quantileName(p.Q), ms(p.MS))
			}
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
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
