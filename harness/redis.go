package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/redis/rediscluster"
	"github.com/lockbench/lockbench/redis/redisrun"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
)

// EtcdFailoverScenario is the etcd counterpart of the Redis failovers:
// the same three clients holding the lock 10 s each, and the leader
// killed while one holds it (an extended built-in scenario).
const EtcdFailoverScenario = "leader-kill-long-hold"

// StudyFile is the Redis study's table in its folder.
const StudyFile = "redis.json"

// RedisSpec is `lockbench redis`: Redis locks under the faults that exist
// on Redis, each cell repeated, beside etcd's lock under a leader kill.
type RedisSpec struct {
	// Locks are redisrun strategies (default both); Faults the faults to
	// run each under (default every fault that has a meaning for it).
	Locks, Faults []string
	// Seeds is how many times each cell runs (a Redis run's fault is timed
	// against its grants, so a seed is a repetition).
	Seeds int
	// EtcdLock, when set, also runs that etcd strategy under
	// EtcdFailoverScenario for as many seeds (Cluster shapes its cluster).
	EtcdLock string
	Cluster  cluster.Options
	// Redis gives the Redis binaries; Run shapes every Redis run (its Lock
	// and Fault are the cell's).
	Redis rediscluster.Options
	Run   redisrun.Spec
	// Out is the parent of the study's folder.
	Out string
	// Progress, when set, hears one line per finished run, and each
	// named fault not run for a lock it has no meaning for.
	Progress func(line string)

	skipped []string // filled by redisCells
}

// StudyCell is one strategy under one fault over every seed.
type StudyCell struct {
	Backend string `json:"backend"`
	Lock    string `json:"lock"`
	// Fault is the Redis fault, or the etcd scenario.
	Fault string `json:"fault"`
	Seeds int    `json:"seeds"`
	// Failed counts, per check, the seeds it failed in.
	Failed map[string]int `json:"failed"`
	// Expect is what the cell is expected to do in every seed; AsExpected
	// whether it did.
	Expect     map[string]verdict.Verdict `json:"expect"`
	AsExpected bool                       `json:"as_expected"`
	// Runs are the run folders, relative to the study's.
	Runs []string `json:"runs"`
	// Example is the first seed's first exclusion violation, with the
	// faults between the two holders' grants: the double grant and the
	// failover that made it.
	Example string `json:"example,omitempty"`
}

// Study is a finished Redis study.
type Study struct {
	Dir   string      `json:"-"`
	Cells []StudyCell `json:"cells"`
	// Interrupted: a signal stopped it; the cells hold the seeds that ran.
	Interrupted bool `json:"interrupted,omitempty"`
	// Error is the failure that ended it early (lockbench redis exits 3);
	// the cells hold the seeds that ran before it.
	Error string `json:"error,omitempty"`
}

// Validate checks everything that can be checked before a process
// starts, so that bad input leaves nothing behind.
func (s *RedisSpec) Validate() error {
	_, err := s.redisCells()
	return err
}

// redisCells are the (lock, fault) cells of spec, checked before anything
// starts.
func (s *RedisSpec) redisCells() ([][2]string, error) {
	s.skipped = nil
	if len(s.Locks) == 0 {
		s.Locks = []string{redisrun.SetNX, redisrun.Redlock}
	}
	if s.Seeds < 1 || s.Seeds > 1000 {
		return nil, fmt.Errorf("seeds %d: must be 1..1000", s.Seeds)
	}
	var cells [][2]string
	for _, l := range s.Locks {
		if redisrun.FaultsFor(l) == nil {
			return nil, fmt.Errorf("lock %q: the Redis strategies are %s and %s", l, redisrun.SetNX, redisrun.Redlock)
		}
		faults := s.Faults
		if len(faults) == 0 {
			faults = redisrun.FaultsFor(l)
		}
		for _, f := range faults {
			if !slices.Contains(redisrun.FaultNames(), f) {
				return nil, fmt.Errorf("fault %q: want one of %v", f, redisrun.FaultNames())
			}
			if redisrun.Expect(l, f) == nil {
				s.skipped = append(s.skipped, fmt.Sprintf("%s has no meaning for %s (it applies to %s): not run", f, l, strings.Join(redisrun.LocksFor(f), ", ")))
				continue
			}
			rs := s.Run
			rs.Lock, rs.Fault = l, f
			if err := rs.Validate(); err != nil {
				bare := rs
				bare.Fault = redisrun.NoFault
				if len(s.Faults) == 0 && bare.Validate() == nil {
					// A fault not named whose needs the workload given
					// does not meet (holder-pause's key must expire
					// within it): skipped, saying why.
					s.skipped = append(s.skipped, fmt.Sprintf("%s on %s: not run: %v", f, l, err))
					continue
				}
				return nil, err
			}
			cells = append(cells, [2]string{l, f})
		}
	}
	if len(cells) == 0 {
		return nil, fmt.Errorf("faults %v have no meaning for locks %v (redis-setnx: %v; redlock: %v)",
			s.Faults, s.Locks, redisrun.FaultsFor(redisrun.SetNX), redisrun.FaultsFor(redisrun.Redlock))
	}
	if s.EtcdLock != "" {
		if _, err := locks.Lookup(s.EtcdLock); err != nil {
			return nil, err
		}
	}
	return cells, nil
}

// RunRedisStudy runs every cell of spec seed by seed, writes each run's
// history and check into a folder of its own under the study's, and the
// table (StudyFile) last. A signal stops it between runs; what ran is
// written, marked interrupted.
func RunRedisStudy(ctx context.Context, spec RedisSpec) (*Study, error) {
	cells, err := spec.redisCells()
	if err != nil {
		return nil, err
	}
	var sc scenarios.Scenario
	if spec.EtcdLock != "" {
		if sc, err = scenarios.Lookup(EtcdFailoverScenario); err != nil {
			return nil, err
		}
	}
	for _, line := range spec.skipped {
		if spec.Progress != nil {
			spec.Progress(line)
		}
	}
	st := &Study{Dir: filepath.Join(spec.Out, "redis-"+time.Now().UTC().Format("20060102T150405Z"))}
	runErr := st.runCells(ctx, spec, cells, sc)
	st.Interrupted = ctx.Err() != nil
	if runErr != nil {
		st.Error = runErr.Error()
	}
	// The table is written also when a run failed: the cells before it
	// (their seeds' folders are written) are not lost with it.
	if err := os.MkdirAll(st.Dir, 0o755); err != nil {
		return nil, errors.Join(runErr, fmt.Errorf("study folder: %w", err))
	}
	if err := rundir.WriteJSON(filepath.Join(st.Dir, StudyFile), st); err != nil {
		return nil, errors.Join(runErr, err)
	}
	if runErr != nil {
		return st, fmt.Errorf("%w (the cells before it are in %s)", runErr, filepath.Join(st.Dir, StudyFile))
	}
	return st, nil
}

// runCells runs the Redis cells seed by seed, then the etcd cell.
func (st *Study) runCells(ctx context.Context, spec RedisSpec, cells [][2]string, sc scenarios.Scenario) error {
	for _, c := range cells {
		cell := StudyCell{Backend: "redis", Lock: c[0], Fault: c[1], Expect: redisrun.Expect(c[0], c[1]), Failed: map[string]int{}, AsExpected: true}
		for seed := range spec.Seeds {
			if ctx.Err() != nil {
				break
			}
			if err := st.redisRun(ctx, spec, &cell, seed); err != nil {
				st.Cells = append(st.Cells, cell)
				return err
			}
		}
		st.Cells = append(st.Cells, cell)
	}
	if spec.EtcdLock == "" || ctx.Err() != nil {
		return nil
	}
	cell, err := st.etcdCell(ctx, spec, sc)
	st.Cells = append(st.Cells, cell)
	return err
}

// redisRun runs one seed of a Redis cell and writes its folder.
func (st *Study) redisRun(ctx context.Context, spec RedisSpec, cell *StudyCell, seed int) error {
	rs := spec.Run
	rs.Lock, rs.Fault, rs.Cluster = cell.Lock, cell.Fault, spec.Redis
	res, err := redisrun.Run(ctx, rs)
	switch {
	case ctx.Err() != nil:
		return nil // interrupted: the seed did not finish, and is not counted
	case err != nil:
		return fmt.Errorf("%s under %s, seed %d: %w", cell.Lock, cell.Fault, seed, err)
	}
	rep := res.Checked.Report
	id := fmt.Sprintf("%s-%s-s%d", cell.Lock, cell.Fault, seed)
	if _, err := rundir.Write(st.Dir, id,
		rundir.File{Name: rundir.HistoryFile, Render: func(w io.Writer) error { return history.Write(w, res.Events) }},
		rundir.JSONFile("check.json", rep)); err != nil {
		return err
	}
	cell.record(rep, id)
	if cell.Example == "" {
		cell.Example = exclusionExample(id, rep, res.Events)
	}
	if spec.Progress != nil {
		spec.Progress(fmt.Sprintf("redis %s under %s, seed %d: %s", cell.Lock, cell.Fault, seed, failedChecks(rep)))
	}
	return nil
}

// record adds one seed's report to the cell.
func (c *StudyCell) record(rep check.Report, run string) {
	c.Seeds++
	c.Runs = append(c.Runs, run)
	for name, r := range rep.Checks {
		if r.Verdict == verdict.Fail {
			c.Failed[name]++
		}
	}
	for name, want := range c.Expect {
		if rep.Checks[name].Verdict != want { // a check absent is not as expected
			c.AsExpected = false
		}
	}
}

// exclusionExample is run's first exclusion violation and the faults
// that were in progress between the two holders' grants; "" for none.
func exclusionExample(run string, rep check.Report, events []history.Event) string {
	vs := rep.Checks[verdict.Exclusion].Violations
	if len(vs) == 0 || len(vs[0].Holders) < 2 {
		return ""
	}
	first, second := vs[0].Holders[0].From, vs[0].Holders[1].From
	var between []string
	began := map[string]int64{}
	for _, e := range events {
		if e.F != history.FFault {
			continue
		}
		var f history.Fault
		_ = json.Unmarshal(e.Value, &f) // written by redisrun: always a Fault
		if e.Type == history.Invoke {
			began[f.Fault] = e.Time
			continue
		}
		if from := began[f.Fault]; from < second && e.Time > first {
			between = append(between, fmt.Sprintf("%s %s–%s", f.Fault, time.Duration(from).Round(time.Millisecond), time.Duration(e.Time).Round(time.Millisecond)))
		}
	}
	if len(between) == 0 {
		between = []string{"none"}
	}
	return fmt.Sprintf("%s: %s; faults between the two grants: %s", run, vs[0].Message, strings.Join(between, ", "))
}

// etcdCell runs the etcd strategy under EtcdFailoverScenario for every
// seed, as `lockbench run` would.
func (st *Study) etcdCell(ctx context.Context, spec RedisSpec, sc scenarios.Scenario) (StudyCell, error) {
	ka := etcdlocks.EffectiveKeepAlive(spec.EtcdLock, etcdlocks.KeepAliveAuto)
	cell := StudyCell{Backend: "etcd", Lock: spec.EtcdLock, Fault: sc.Name, Failed: map[string]int{}, AsExpected: true,
		Expect: ExpectationsFor(sc, spec.EtcdLock, string(ka))}
	for seed := range spec.Seeds {
		res, err := Run(ctx, RunSpec{Lock: spec.EtcdLock, Scenario: sc, Seed: int64(seed + 1), KeepAlive: ka, Cluster: ClusterFor(spec.Cluster, sc), Out: st.Dir})
		if err != nil {
			return cell, fmt.Errorf("etcd %s under %s, seed %d: %w", spec.EtcdLock, sc.Name, seed+1, err)
		}
		if res.Summary.Interrupted {
			break
		}
		rel, _ := filepath.Rel(st.Dir, res.Dir)
		cell.record(check.Report{Verdict: res.Summary.Verdict, Checks: res.Summary.Checks}, rel)
		if spec.Progress != nil {
			spec.Progress(fmt.Sprintf("etcd %s under %s, seed %d: %s", spec.EtcdLock, sc.Name, seed+1, failedChecks(check.Report{Checks: res.Summary.Checks})))
		}
	}
	return cell, nil
}

// failedChecks names a report's failed checks, or says none failed.
func failedChecks(rep check.Report) string {
	var failed []string
	for _, n := range slices.Sorted(maps.Keys(rep.Checks)) {
		if rep.Checks[n].Verdict == verdict.Fail {
			failed = append(failed, n)
		}
	}
	if len(failed) == 0 {
		return "no check failed"
	}
	return fmt.Sprintf("failed %v", failed)
}
