package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"
)

// tsLine is one line of a time-series chart: values at times (s); a NaN
// value breaks the line (an interval with no sample).
type tsLine struct {
	Name string
	X, Y []float64
	Dash bool
}

// tsChart is a chart of values over a run's time with its fault bands.
type tsChart struct {
	Title, YLabel string
	// Log draws y on a log scale (latencies); values ≤ 0 are left out.
	Log    bool
	EndS   float64
	Faults []FaultSpan
	Lines  []tsLine
}

// tsGeom maps seconds and values to the plot.
type tsGeom struct {
	x, y   func(float64) float64
	pw, ph float64
}

// tsSVG draws c as inline SVG: fault bands (class "ts-fault", labelled in
// a strip above the plot so no label covers a line), one line per series
// with a dot per point (class "ts-point"), and the legend below.
func tsSVG(c tsChart) template.HTML {
	items := make([]legendItem, len(c.Lines))
	for i, l := range c.Lines {
		items[i] = legendItem{Label: l.Name, Color: palette[i%len(palette)], Dash: l.Dash}
	}
	leg, lh := legendLayout(items, cdfH-2)
	var b strings.Builder
	svgOpen(&b, "cdf ts", c.Title, cdfH+lh)
	lo, hi := tsRange(c)
	if math.IsInf(lo, 0) || c.EndS <= 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="cdf-empty">no samples</text>%s</svg>`, cdfLeft, cdfH/2, leg)
		return template.HTML(b.String())
	}
	g := tsAxes(c, lo, hi)
	tsFaults(&b, g, c.Faults)
	tsGrid(&b, g, c, lo, hi)
	for i, l := range c.Lines {
		tsPlot(&b, g, l, palette[i%len(palette)], c.Log)
	}
	b.WriteString(leg)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// tsRange is the range of the values to draw (0 to the max on a linear
// axis; the decades around the positive values on a log one).
func tsRange(c tsChart) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, l := range c.Lines {
		for _, v := range l.Y {
			if math.IsNaN(v) || c.Log && v <= 0 {
				continue
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 0) {
		return lo, hi
	}
	if c.Log {
		lo, hi = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
		if hi <= lo {
			hi = lo * 10
		}
		return lo, hi
	}
	return 0, niceCeil(math.Max(hi, 1))
}

// niceCeil rounds v up to 1, 2 or 5 × 10^k.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// tsTop is the plot's top: a strip above it holds the fault labels.
const tsTop = cdfTop + 14

func tsAxes(c tsChart, lo, hi float64) tsGeom {
	g := tsGeom{pw: float64(cdfW - cdfLeft - cdfRight), ph: float64(cdfH - tsTop - cdfBot)}
	g.x = func(s float64) float64 { return float64(cdfLeft) + s/c.EndS*g.pw }
	g.y = func(v float64) float64 {
		f := (v - lo) / (hi - lo)
		if c.Log {
			f = (math.Log10(math.Max(v, lo)) - math.Log10(lo)) / (math.Log10(hi) - math.Log10(lo))
		}
		return float64(tsTop) + (1-f)*g.ph
	}
	return g
}

// tsFaults shades each fault across the plot and labels it in the strip
// above it.
func tsFaults(b *strings.Builder, g tsGeom, faults []FaultSpan) {
	for _, f := range faults {
		x0, x1 := g.x(f.FromS), g.x(f.ToS)
		label := template.HTMLEscapeString(f.Label)
		fmt.Fprintf(b, `<g class="ts-fault"><title>%s: %ss – %ss</title><rect x="%.1f" y="%d" width="%.1f" height="%.1f"/><text x="%.1f" y="%d">%s</text></g>`,
			label, trimFloat(f.FromS), trimFloat(f.ToS), x0, tsTop-12, math.Max(x1-x0, 1.5), g.ph+12, x0+2, tsTop-3, label)
	}
}

// tsGrid draws the time axis (s) and the value axis.
func tsGrid(b *strings.Builder, g tsGeom, c tsChart, lo, hi float64) {
	b.WriteString(`<g class="cdf-grid">`)
	step := niceCeil(c.EndS / 8)
	for s := 0.0; s <= c.EndS+step/1000; s += step {
		xx := g.x(s)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f"/><text x="%.1f" y="%.1f" text-anchor="middle">%ss</text>`,
			xx, tsTop, xx, float64(tsTop)+g.ph, xx, float64(tsTop)+g.ph+14, trimFloat(s))
	}
	var ticks []float64
	if c.Log {
		for v := lo; v <= hi*1.001; v *= 10 {
			ticks = append(ticks, v)
		}
	} else {
		for i := range 5 {
			ticks = append(ticks, lo+(hi-lo)*float64(i)/4)
		}
	}
	for _, v := range ticks {
		yy := g.y(v)
		label := trimFloat(v)
		if c.Log {
			label = fmtMSLabel(v)
		}
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`,
			cdfLeft, yy, float64(cdfLeft)+g.pw, yy, cdfLeft-4, yy+3, label)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">time since the run's start · %s</text>`,
		float64(cdfLeft)+g.pw/2, cdfH-8, template.HTMLEscapeString(c.YLabel))
	b.WriteString(`</g>`)
}

// tsPlot draws one line, broken at NaN values, with a dot per point.
func tsPlot(b *strings.Builder, g tsGeom, l tsLine, color string, log bool) {
	name := template.HTMLEscapeString(l.Name)
	var path, dots strings.Builder
	pen := "M"
	for i, v := range l.Y {
		if math.IsNaN(v) || log && v <= 0 {
			pen = "M"
			continue
		}
		x, y := g.x(l.X[i]), g.y(v)
		fmt.Fprintf(&path, "%s%.1f,%.1f", pen, x, y)
		pen = "L"
		fmt.Fprintf(&dots, `<circle class="ts-point" cx="%.1f" cy="%.1f" r="2"><title>%s at %ss: %s</title></circle>`,
			x, y, name, trimFloat(l.X[i]), trimFloat(v))
	}
	seriesGroup(b, name, color, l.Dash, path.String(), dots.String())
}

// seriesGroup writes one drawn line of a chart: its path (dashed when
// dash) and its dots, in a group named for the legend and the tests.
func seriesGroup(b *strings.Builder, name, color string, dash bool, path, dots string) {
	stroke := ""
	if dash {
		stroke = ` stroke-dasharray="4 3"`
	}
	fmt.Fprintf(b, `<g class="ts-series" data-series="%s" fill="%s"><path d="%s" fill="none" stroke="%s" stroke-width="1.5"%s/>%s</g>`,
		name, color, path, color, stroke, dots)
}

// throughputLine is a run's grants per second in each interval, at the
// interval's middle, over the part of it the run covered; a last interval
// the run covers less than half of is left out (too short for a rate).
func throughputLine(name string, ts TimeSeries) tsLine {
	l := tsLine{Name: name}
	for i, n := range ts.Grants {
		c := ts.covered(i)
		l.X = append(l.X, (float64(i)+0.5)*ts.IntervalS)
		if c < ts.IntervalS/2 {
			l.Y = append(l.Y, math.NaN())
			continue
		}
		l.Y = append(l.Y, float64(n)/c)
	}
	return l
}

// latencyLine is one percentile of per-interval latencies, NaN where an
// interval had no sample (the line breaks there).
func latencyLine(name string, ts TimeSeries, ls []IntervalLatency, pick func(IntervalLatency) float64, dash bool) tsLine {
	l := tsLine{Name: name, Dash: dash}
	for i := range ts.Grants {
		l.X = append(l.X, (float64(i)+0.5)*ts.IntervalS)
		l.Y = append(l.Y, math.NaN())
	}
	for _, x := range ls {
		if x.I < len(l.Y) {
			l.Y[x.I] = pick(x)
		}
	}
	return l
}

func p50(l IntervalLatency) float64 { return l.P50 }
func p99(l IntervalLatency) float64 { return l.P99 }

// intervalText describes an interval for an axis label: "per 5 ms".
func intervalText(s float64) string {
	if s < 1 {
		return "per " + trimFloat(s*1000) + " ms interval"
	}
	return "per " + trimFloat(s) + " s interval"
}
