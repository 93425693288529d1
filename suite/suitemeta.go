package suite

import (
	"context"
	"fmt"
	"time"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
)

// What a suite records beside its cells so that a later comparison knows
// whether two suites can be compared: the host, the commit floor, each
// scenario's hash, each cell's expectations, and what never ran.

// capped is sc as the suite runs it: a scenario without fault steps is
// cut to QuickDuration.
func (s Spec) capped(sc scenarios.Scenario) scenarios.Scenario {
	if len(sc.Steps) == 0 && sc.Nemesis == nil && s.QuickDuration > 0 && sc.Duration.D() > s.QuickDuration {
		sc.Duration = scenarios.Duration(s.QuickDuration)
	}
	return sc
}

// header is suite.json's fields other than its cells, as far as they are
// known before the first cell.
func (s Spec) header(bins []suiteBin) report.Suite {
	h := rundir.ThisHost()
	out := report.Suite{
		Schema: rundir.SchemaVersion, Lockbench: rundir.ThisBuild(),
		Reps:           max(s.Reps, 1),
		Host:           &report.Host{CPUModel: h.CPUModel, CPUs: h.CPUs, OS: h.OS, Arch: h.Arch, Kernel: h.Kernel},
		ScenarioHashes: map[string]string{},
		Expected:       map[string]map[string]verdict.Verdict{},
	}
	for _, sc := range s.Scenarios {
		sc = s.capped(sc)
		out.ScenarioHashes[sc.Name] = sc.Hash()
		for _, key := range s.cellKeys(sc.Name, bins) {
			out.Expected[key.Key()] = harness.ExpectationsFor(sc, key.Lock, key.KeepAlive)
		}
	}
	for l, d := range s.InjectDelay {
		if out.InjectDelay == nil {
			out.InjectDelay = map[string]string{}
		}
		out.InjectDelay[l] = d.String()
	}
	out.Matrix = s.matrix(bins, out)
	if s.Shard.sharded() {
		out.Shard = &report.Shard{Index: s.Shard.Index, Count: s.Shard.Count, Keys: s.shardKeys(bins)}
	}
	return out
}

// measureFloor measures the commit floor on c once per suite, before the
// first cell; a failure is a note, not the suite's end.
func (r *Result) measureFloor(ctx context.Context, c cluster.Members, d time.Duration) {
	if r.Header.Floor != nil || d < 0 {
		return
	}
	if d == 0 {
		d = DefaultFloor
	}
	cli, err := harness.NewAdmin(c)
	if err != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("commit floor not measured: connect: %v", err))
		return
	}
	defer cli.Close()
	key := "/lockbench/suite-floor"
	f, err := harness.MeasureFloor(ctx, cli, key, d, 1)
	if err != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("commit floor not measured: %v", err))
		return
	}
	dctx, cancel := context.WithTimeout(ctx, harness.OpTimeout)
	defer cancel()
	_, _ = cli.Delete(dctx, key)
	r.Header.Floor = f
}

// cellKeys are the cells of scenario sc as summaries that hold only what
// keys them (report.Summary.Key): strategy, keepalive policy, binary.
func (s Spec) cellKeys(sc string, bins []suiteBin) []report.Summary {
	var out []report.Summary
	for _, b := range bins {
		for _, lock := range s.Locks {
			for _, ka := range s.keepAlivesFor(lock) {
				out = append(out, report.Summary{Run: rundir.Run{Lock: lock, KeepAlive: string(etcdlocks.EffectiveKeepAlive(lock, ka)), Etcd: b.etcd, EtcdVersion: b.version}, Scenario: sc})
			}
		}
	}
	return out
}

// markInterrupted records that the suite ended early and which cells
// (by key: lock/scenario, with the keepalive policy and binary when not
// the default) of its shard it never started: a comparison must say so rather than
// compare what happened to run. A key with any run, even one cut short
// (its summary interrupted), is in Cells and not here, so that each key
// is in exactly one of the two lists.
func (r *Result) markInterrupted(s Spec, bins []suiteBin, shard map[string]bool) {
	r.Header.Interrupted = true
	r.Header.NotRun = nil
	ran := map[string]bool{}
	for _, c := range r.Cells {
		ran[c.Summary.Key()] = true
	}
	for _, sc := range s.Scenarios {
		for _, key := range s.cellKeys(sc.Name, bins) {
			if k := key.Key(); !ran[k] && (shard == nil || shard[k]) {
				r.Header.NotRun = append(r.Header.NotRun, k)
			}
		}
	}
}
