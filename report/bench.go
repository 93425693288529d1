package report

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"unicode"
)

// WriteBenchLines writes one Go benchmark-format line per summary, so that
// `benchstat old.txt new.txt` compares runs (and several runs of one cell,
// e.g. over seeds, give benchstat its samples):
//
//	BenchmarkLock/queue/contention 1 412000 ns/acquire 9800000 p99-ns/acquire 350000 ns/handoff 1200000 p99-ns/handoff 2431 acquires/s 1.05 wakeups/handoff 0 violations
//
// The iteration count is always 1; ns/acquire and ns/handoff are p50s.
// A metric with no samples is left out rather than written as 0. Names
// have spaces replaced by underscores.
func WriteBenchLines(w io.Writer, sums []Summary) error {
	bw := bufio.NewWriter(w)
	for _, s := range sums {
		var b strings.Builder
		b.WriteString("BenchmarkLock/")
		b.WriteString(benchName(s.Lock))
		b.WriteByte('/')
		b.WriteString(benchName(s.Scenario))
		b.WriteString(" 1")
		metric := func(v float64, unit string) {
			b.WriteByte(' ')
			b.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
			b.WriteByte(' ')
			b.WriteString(unit)
		}
		nsOf := func(ms float64) float64 { return float64(int64(ms*1e6 + 0.5)) }
		if a := s.LatencyMS[LatAcquire]; a.Count > 0 {
			metric(nsOf(a.P50), "ns/acquire")
			metric(nsOf(a.P99), "p99-ns/acquire")
		}
		if h := s.LatencyMS[LatHandoff]; h.Count > 0 {
			metric(nsOf(h.P50), "ns/handoff")
			metric(nsOf(h.P99), "p99-ns/handoff")
		}
		metric(round(s.ThroughputPerS, 1), "acquires/s")
		if v, ok := s.WakeupsPerHandoff(); ok {
			metric(round(v, 3), "wakeups/handoff")
		}
		metric(float64(s.TotalViolations()), "violations")
		b.WriteByte('\n')
		if _, err := bw.WriteString(b.String()); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// benchName makes a name safe for one benchmark-line field.
func benchName(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return '_'
		}
		return r
	}, s)
}

func round(v float64, digits int) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', digits, 64), 64)
	return f
}
