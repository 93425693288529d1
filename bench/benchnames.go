package bench

import (
	"fmt"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/scenarios"
)

// validateLocksPerRun checks BenchSpec.LocksPerRun: each a count of lock
// names a workload allows.
func (s BenchSpec) validateLocksPerRun() error {
	for _, k := range s.LocksPerRun {
		if k < 1 || k > scenarios.MaxLocks {
			return harness.FieldErr("LocksPerRun", k, fmt.Sprintf("must be 1..%d", scenarios.MaxLocks))
		}
	}
	return nil
}

// namesScenario is the bench's scenario with clients spread uniformly over
// k lock names, named contention-Klocks.
func (s BenchSpec) namesScenario(clients, k int) scenarios.Scenario {
	sc := s.scenario(clients)
	sc.Name = fmt.Sprintf("%s-%dlocks", sc.Name, k) // its run folder says so
	sc.Workload.Locks, sc.Workload.Pick = k, scenarios.PickUniform
	return sc
}

// namesCells runs, for each count k of BenchSpec.LocksPerRun, the cluster's
// parallel write ceiling (k writers, each committing back to back on its
// own key, through the benchmark's client) and then every lock at every
// client count over k names, each judged against ceiling ÷ 2. For k = 1
// the cells are the ordinary ones and the ceiling the one-writer floor:
// nothing runs again.
func (r *benchRun) namesCells() error {
	for _, k := range r.spec.LocksPerRun {
		if r.ctx.Err() != nil {
			return nil
		}
		if k == 1 {
			r.oneNameCells()
			continue
		}
		if err := r.ensure(); err != nil {
			return err
		}
		r.progress("write ceiling: %d writers for %s", k, r.spec.FloorDuration)
		ceiling, err := harness.MeasureFloor(r.ctx, r.admin, r.ns+"ceiling", r.spec.FloorDuration, k)
		if err != nil {
			if r.ctx.Err() != nil {
				return nil
			}
			r.failed(fmt.Errorf("write ceiling with %d writers: %w", k, err))
		}
		for _, n := range r.spec.Clients {
			for _, lock := range r.spec.Locks {
				if r.ctx.Err() != nil {
					return nil
				}
				r.progress("cell %s × %d clients × %d locks", lock, n, k)
				if err := r.ensure(); err != nil {
					return err
				}
				c := report.NamesCell{BenchCell: r.cellOn(lock, n, r.spec.namesScenario(n, k)), LocksPerRun: k, Ceiling: ceiling}
				if r.ctx.Err() != nil {
					return nil
				}
				r.b.LocksPerRun = append(r.b.LocksPerRun, withCeiling(c))
			}
		}
	}
	return nil
}

// oneNameCells copies the ordinary cells as the one-name row, against
// the one-writer floor.
func (r *benchRun) oneNameCells() {
	for _, c := range r.b.Cells {
		r.b.LocksPerRun = append(r.b.LocksPerRun, withCeiling(report.NamesCell{BenchCell: c, LocksPerRun: 1, Ceiling: r.b.Floor}))
	}
}

// withCeiling sets c's ratio to ceiling ÷ 2.
func withCeiling(c report.NamesCell) report.NamesCell {
	if c.Error == "" && c.Ceiling != nil && c.Ceiling.CommitsPerS > 0 {
		c.XCeilingHalf = round3(c.ThroughputPerS / (c.Ceiling.CommitsPerS / 2))
	}
	return c
}
