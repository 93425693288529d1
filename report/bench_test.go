package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchCellFloorLine: the cell floors' line gives their median, and is
// left out when no cell has a floor (there is no median to give).
func TestBenchCellFloorLine(t *testing.T) {
	floors := func(rates ...float64) *Bench {
		b := &Bench{CellFloorS: 1.5}
		for _, r := range rates {
			b.Cells = append(b.Cells, BenchCell{Floor: &Floor{CommitsPerS: r}})
		}
		b.Cells = append(b.Cells, BenchCell{})
		return b
	}
	for _, tc := range []struct {
		name string
		b    *Bench
		want string // "": no line
	}{
		{"odd", floors(700, 900, 800), "700–900 commits/s (median 800)"},
		{"even", floors(700, 900, 800, 1000), "700–1000 commits/s (median 850)"},
		{"none", floors(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			benchFloorLines(&buf, tc.b)
			out := buf.String()
			has := strings.Contains(out, "floor measured just before each cell")
			switch {
			case tc.want == "" && has:
				t.Errorf("a cell floor line with no cell floor:\n%s", out)
			case tc.want != "" && !strings.Contains(out, tc.want):
				t.Errorf("want %q in:\n%s", tc.want, out)
			}
		})
	}
}
