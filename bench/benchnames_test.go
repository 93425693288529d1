package bench

import (
	"testing"

	"github.com/lockbench/lockbench/report"
)

func TestWithCeiling(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    report.NamesCell
		want float64
	}{
		{"half the ceiling reached", report.NamesCell{BenchCell: report.BenchCell{ThroughputPerS: 500}, Ceiling: &report.Floor{CommitsPerS: 2000}}, 0.5},
		{"no ceiling", report.NamesCell{BenchCell: report.BenchCell{ThroughputPerS: 500}}, 0},
		{"a failed cell", report.NamesCell{BenchCell: report.BenchCell{ThroughputPerS: 500, Error: "x"}, Ceiling: &report.Floor{CommitsPerS: 2000}}, 0},
	} {
		if got := withCeiling(tc.c).XCeilingHalf; got != tc.want {
			t.Errorf("%s: ×(ceiling÷2) %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNamesScenario(t *testing.T) {
	s := BenchSpec{Duration: 1e9}
	sc := s.namesScenario(64, 256)
	if sc.Name != "contention-256locks" || sc.Clients != 64 || sc.Workload.LockCount() != 256 || sc.Workload.Pick != "uniform" {
		t.Errorf("namesScenario(64, 256): %d clients, %d names, pick %q", sc.Clients, sc.Workload.LockCount(), sc.Workload.Pick)
	}
	if err := sc.Validate(); err != nil {
		t.Errorf("namesScenario is not a valid scenario: %v", err)
	}
	for _, k := range []int{0, 70000} {
		if err := (BenchSpec{LocksPerRun: []int{1, k}}).validateLocksPerRun(); err == nil {
			t.Errorf("locks per run %d accepted", k)
		}
	}
}
