package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/etcd"
	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/scenarios"
)

// recordWarmup is how long a sliced run (recording slices, a paired lock
// slice) goes after its first grant before it is timed: the first grants
// of a run are slower (connections, watches).
const recordWarmup = 500 * time.Millisecond

// slicedRun is one run of the target cell timed in slices from outside
// (recording on/off, paired with the ideal): the harness reads its grant
// counter and may switch its recording.
type slicedRun struct {
	rec    atomic.Bool
	grants atomic.Int64
	// ctx ends the run; stop cancels it and waits for the run.
	ctx    context.Context
	cancel context.CancelFunc
	// finished is closed when the run has returned, with out and err.
	finished chan struct{}
	out      *runner.Outcome
	err      error
}

// startSliced starts a run of the target cell under prefix, with
// recording on or off from the start, that lasts d unless stopped.
func startSliced(ctx context.Context, c cluster.Members, spec BenchSpec, prefix string, d time.Duration, record bool) (*slicedRun, error) {
	tlsCfg, err := c.ClientTLSConfig()
	if err != nil {
		return nil, err
	}
	sc := spec.scenario(spec.TargetClients)
	sc.Duration = scenarios.Duration(d)
	s := &slicedRun{finished: make(chan struct{})}
	s.rec.Store(record)
	s.ctx, s.cancel = context.WithCancel(ctx)
	go func() {
		defer close(s.finished)
		s.out, s.err = runner.Run(s.ctx, runner.Config{
			Scenario: sc, Lock: spec.TargetLock, Seed: spec.Seed, Prefix: prefix,
			Endpoints: c.Endpoints(), Cluster: etcd.MembersOf(c),
			Backend:     etcd.Backend{ClientConfig: clientv3.Config{TLS: tlsCfg}, KeepAlive: spec.KeepAlive, RPCTimeout: spec.RPCTimeout},
			SharedConns: spec.SharedConns,
			Recording:   &s.rec, Grants: &s.grants,
		})
	}()
	return s, nil
}

// stop ends the run and waits for it; it returns the run's error.
func (s *slicedRun) stop() error {
	s.cancel()
	<-s.finished
	return s.err
}

// recordSlices runs the target cell once and switches recording on and
// off in n alternating slices of length slice (on off, off on, ...: each
// pair of pairs is balanced against a linear drift). It returns the slices
// as RecordingRuns and the events kept per granted acquisition while on.
func recordSlices(ctx context.Context, c cluster.Members, spec BenchSpec, prefix string, n int, slice time.Duration) ([]report.RecordingRun, float64, error) {
	// Longer than needed: the run is cut when the last slice ends.
	s, err := startSliced(ctx, c, spec, prefix, recordWarmup+time.Duration(n)*slice+5*time.Second, false)
	if err != nil {
		return nil, 0, err
	}
	runs, serr := s.slices(n, slice)
	s.rec.Store(false) // the run's closing events are not a slice's
	if err := errors.Join(serr, s.stop()); err != nil {
		return runs, 0, fmt.Errorf("recording slices: %w", err)
	}
	var onGrants int64
	for _, r := range runs {
		if r.Record {
			onGrants += r.Acquisitions
		}
	}
	if onGrants == 0 || s.out == nil {
		return runs, 0, errors.New("recording slices: no grant while recording")
	}
	return runs, round3(float64(len(s.out.Events)) / float64(onGrants)), nil
}

// warmedUp waits for the run's first grant, then recordWarmup.
func (s *slicedRun) warmedUp() error {
	for s.grants.Load() == 0 {
		select {
		case <-s.finished:
			return errors.New("the run ended before its first grant")
		case <-s.ctx.Done():
			return s.ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	if !runner.Sleep(s.ctx, recordWarmup) {
		return s.ctx.Err()
	}
	return nil
}

// ended reports whether the run has returned (before the harness
// stopped it, when asked before stop).
func (s *slicedRun) ended() bool {
	select {
	case <-s.finished:
		return true
	default:
		return false
	}
}

// errRunEnded: the run returned before the harness stopped timing it.
var errRunEnded = errors.New("the run ended")

// window times the next d of the run: the grants counted in it and when
// it began and ended. It fails with errRunEnded if the run returned
// meanwhile, or with ctx's error.
func (s *slicedRun) window(d time.Duration) (g int64, t0, t1 time.Time, err error) {
	g0 := s.grants.Load()
	t0 = time.Now()
	if !runner.Sleep(s.ctx, d) {
		return 0, t0, time.Now(), s.ctx.Err()
	}
	g, t1 = s.grants.Load()-g0, time.Now()
	if s.ended() {
		return g, t0, t1, errRunEnded
	}
	return g, t0, t1, nil
}

// slices waits for the run's first grant and the warm-up, then times the
// n slices, switching recording at each.
func (s *slicedRun) slices(n int, slice time.Duration) ([]report.RecordingRun, error) {
	if err := s.warmedUp(); err != nil {
		return nil, err
	}
	var runs []report.RecordingRun
	for i := range n {
		on := (i%4 == 0) || (i%4 == 3) // on off off on on off off on ...
		s.rec.Store(on)
		cpu0 := processCPU()
		g, t0, t1, err := s.window(slice)
		if errors.Is(err, errRunEnded) {
			return runs, errors.New("the run ended before its last slice")
		}
		if err != nil {
			return runs, err
		}
		cpu, el := processCPU()-cpu0, t1.Sub(t0)
		run := report.RecordingRun{Record: on, Acquisitions: g, ElapsedS: round3(el.Seconds()), CountedPerS: round1(float64(g) / el.Seconds())}
		if cpu0 > 0 && g > 0 {
			run.CPUPerAcqUS = round1(float64(cpu) / float64(time.Microsecond) / float64(g))
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// MeasureAppendNS is the mean time of one history append, over n appends
// of a realistic event from one goroutine into a fresh recorder.
func MeasureAppendNS(n int) float64 {
	r := history.NewRecorder(n + 1)
	e := history.Event{Process: 3, Type: history.OK, F: history.FAcquire, Lock: locks.DefaultName, Token: 412,
		Key: "/lockbench/run/lock/0123456789abcdef", Lease: "694d7c4b2e1a0f07"}
	t0 := time.Now()
	for range n {
		r.Append(e)
	}
	return float64(time.Since(t0)) / float64(n)
}
