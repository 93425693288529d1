package report

import (
	"fmt"
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// RunTable prints a run's headline figures: what users compare first.
func RunTable(w io.Writer, s Summary) error {
	t := newTable(w)
	t.Header("lock", "scenario", "clients", "acquisitions", "acq/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "violations", "verdict")
	a := s.LatencyMS["acquire"]
	if err := t.Append(s.Lock, s.Scenario, fmt.Sprint(s.Clients), fmt.Sprint(s.Acquisitions),
		fmt.Sprintf("%.1f", s.ThroughputPerS), ms(a.P50), ms(a.P90), ms(a.P99), ms(a.Max),
		fmt.Sprint(len(s.Violations)), string(s.Verdict)); err != nil {
		return err
	}
	return t.Render()
}

// newTable is the one table style of every report: headers as written,
// numbers right-aligned.
func newTable(w io.Writer) *tablewriter.Table {
	return tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignment(tw.AlignRight))
}

func ms(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
