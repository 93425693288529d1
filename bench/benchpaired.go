package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/report"
)

// The paired measurement: the target cell against the ideal handoff in
// alternating slices of one bench run. The commit rate of a shared machine
// drifts by ±15 % over seconds (1 s slices of the ideal alone: 791–985
// steps/s; of queue: 551–733/s, a slow wave over ~10 s), so a cell's
// x_ideal against the ideal measured at the start of the bench moves as
// much from drift alone as the differences it is meant to show. The ratio
// of two adjacent slices carries little of it.

// Paired defaults; they double as the CLI's flag defaults.
const (
	DefaultPairedRounds = MinBareRounds
	DefaultPairedSlice  = 1500 * time.Millisecond
)

// Orders of a paired round: in even rounds the ideal, the lock through
// the runner, then the lock in a bare loop (benchbare.go); in odd rounds
// the reverse. Each pair of slices the targets compare (ideal and lock,
// lock and bare, ideal and bare) is then run in both orders, so that a
// linear drift over two rounds cancels in each.
const (
	pairedIdealFirst = "ideal, lock, bare"
	pairedBareFirst  = "bare, lock, ideal"
)

// paired runs the paired measurement (spec.PairedRounds rounds). It runs
// right after the cells and before the recording step: it stands for the
// target cell, so it is measured as near the cells as it can be, and the
// recording step pairs its own slices and does not care where it runs.
func (r *benchRun) paired() error {
	spec := r.spec
	if spec.PairedRounds == 0 || r.ctx.Err() != nil {
		return nil
	}
	p := &report.Paired{Lock: spec.TargetLock, Clients: spec.TargetClients, IdealClients: spec.idealClients(),
		Rounds: spec.PairedRounds, SliceS: spec.PairedSlice.Seconds(),
		Method: "rounds of one ideal-handoff slice, one slice of the lock through the runner (a run timed from its first grant + warm-up) and one of the lock in a bare Lock/Unlock loop (timed the same way), in that order in even rounds and the reverse in odd; ratios per round, median over rounds"}
	r.b.Paired = p
	for i := range spec.PairedRounds {
		if r.ctx.Err() != nil {
			return nil
		}
		if err := r.ensure(); err != nil {
			return err
		}
		r.progress("paired %d/%d: %s × %d clients, its bare loop and the ideal handoff, %s each", i+1, spec.PairedRounds, spec.TargetLock, spec.TargetClients, spec.PairedSlice)
		run := r.pairedRound(i)
		if r.ctx.Err() != nil {
			return nil // a round cut short is left out, as a cell is
		}
		if run.Error != "" {
			r.failed(fmt.Errorf("paired round %d: %s", i, run.Error))
		}
		p.Runs = append(p.Runs, run)
	}
	return nil
}

// pairedRound measures one round: the ideal, the lock and the bare loop,
// each for one slice, in the round's order.
func (r *benchRun) pairedRound(i int) report.PairedRun {
	run := report.PairedRun{Round: i, Order: pairedIdealFirst}
	if i%2 == 1 {
		run.Order = pairedBareFirst
	}
	prefix := fmt.Sprintf("%spaired/%d/", r.ns, i)
	ideal := func() error {
		id, err := r.measureIdeal(prefix+"ideal/", r.spec.PairedSlice)
		if err != nil {
			return fmt.Errorf("ideal slice: %w", err)
		}
		run.IdealRatePerS, run.IdealStepP50MS = id.RatePerS, id.StepP50MS
		return nil
	}
	lock := func() error {
		if err := pairedLockSlice(r.ctx, r.c, r.spec, prefix+"lock/", &run); err != nil {
			return fmt.Errorf("lock slice: %w", err)
		}
		return nil
	}
	bare := func() error {
		wc, err := bareWindow(r.ctx, r.c.DirectEndpoints(), prefix+"bare/", r.spec)
		if err != nil {
			return fmt.Errorf("bare slice: %w", err)
		}
		run.BareRatePerS = round1(wc.rate)
		return nil
	}
	legs := []func() error{ideal, lock, bare}
	if run.Order == pairedBareFirst {
		slices.Reverse(legs)
	}
	var errs []error
	for _, leg := range legs {
		errs = append(errs, leg())
	}
	if err := errors.Join(errs...); err != nil {
		run.Error = err.Error()
	}
	return run
}

// pairedLockSlice runs the target cell with recording on, as the cells
// run, and times it over a steady window of spec.PairedSlice that starts
// at its first grant + recordWarmup: grants from the clients' counter,
// handoff p50 from the run's history over the same window.
func pairedLockSlice(ctx context.Context, c cluster.Members, spec BenchSpec, prefix string, run *report.PairedRun) error {
	// Longer than needed: the run is cut when the window ends.
	s, err := startSliced(ctx, c, spec, prefix, recordWarmup+spec.PairedSlice+5*time.Second, true)
	if err != nil {
		return err
	}
	var g int64
	var t0, t1 time.Time
	werr := s.warmedUp()
	if werr == nil {
		g, t0, t1, werr = s.window(spec.PairedSlice)
	}
	if errors.Is(werr, errRunEnded) {
		werr = errors.New("the run ended before the window did")
	}
	if err := errors.Join(werr, s.stop()); err != nil {
		return err
	}
	if s.out == nil {
		return errors.New("the run gave no outcome")
	}
	el := t1.Sub(t0)
	run.Acquisitions, run.ElapsedS, run.RatePerS = g, round3(el.Seconds()), round1(float64(g)/el.Seconds())
	h := report.HandoffLatency(check.Pair(s.out.Events), t0.Sub(s.out.Start), t1.Sub(s.out.Start))
	if h.Count == 0 {
		return fmt.Errorf("no handoff in the %s window (%d grants)", el.Round(time.Millisecond), g)
	}
	run.HandoffP50MS = h.P50
	return nil
}
