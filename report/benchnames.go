package report

import (
	"fmt"
	"io"
	"strconv"
)

// NamesCell is a bench cell over several lock names (bench
// --locks-per-run): clients spread their acquisitions over LocksPerRun
// names, so the limit is etcd's write throughput, not one name's handoff
// chain. It is judged against the cluster's parallel write ceiling
// measured in the same bench: LocksPerRun writers, each committing back
// to back. A lock writes twice per acquisition (its key, then its
// release), so ceiling ÷ 2 is the most acquisitions/s the cluster allows.
type NamesCell struct {
	BenchCell
	LocksPerRun int `json:"locks_per_run"`
	// Ceiling is the parallel write ceiling measured for LocksPerRun
	// writers before the cells of that many names (for one name, the
	// bench's one-writer floor).
	Ceiling *Floor `json:"ceiling,omitempty"`
	// XCeilingHalf is throughput ÷ (Ceiling's commits/s ÷ 2).
	XCeilingHalf float64 `json:"x_ceiling_half,omitempty"`
}

// benchNamesTable prints the --locks-per-run cells, if any.
func benchNamesTable(w io.Writer, b *Bench) error {
	if len(b.LocksPerRun) == 0 {
		return nil
	}
	t := newTable(w, "L")
	t.Header("lock", "clients", "locks/run", "acq/s", "write ceiling commits/s (writers)", "acq/s ÷ (ceiling ÷ 2)", "acquire p50 ms", "acquire p99 ms", "violations")
	for _, c := range b.LocksPerRun {
		ceiling := "-"
		if c.Ceiling != nil {
			ceiling = fmt.Sprintf("%.0f (%d)", c.Ceiling.CommitsPerS, c.Ceiling.Writers)
		}
		row := []any{c.Lock, strconv.Itoa(c.Clients), strconv.Itoa(c.LocksPerRun), "error", ceiling, "-", "-", "-", "-"}
		if c.Error == "" {
			p50, p99 := "-", "-"
			if c.AcquireMS.Count > 0 {
				p50, p99 = ms(c.AcquireMS.P50), ms(c.AcquireMS.P99)
			}
			row = []any{c.Lock, strconv.Itoa(c.Clients), strconv.Itoa(c.LocksPerRun), fmt.Sprintf("%.1f", c.ThroughputPerS), ceiling,
				benchRatio(c.XCeilingHalf), p50, p99, strconv.Itoa(c.Violations)}
		}
		if err := t.Append(row...); err != nil {
			return err
		}
	}
	return t.Render()
}
