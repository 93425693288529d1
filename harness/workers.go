package harness

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockbench/lockbench/clocks"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/scenarios"
)

// LoadWorkers loads the run folders of the workers of one run (run
// --worker I/N), by worker index. It refuses, as an *InputError naming
// them, a folder that is no worker's, workers of different runs (lock,
// seed, scenario, prefix or worker count differ), a worker given twice
// and a worker missing: without all of them the merged history lacks
// clients, and no check could tell.
func LoadWorkers(dirs []string) ([]*rundir.Folder, error) {
	var ws []*rundir.Folder
	for _, dir := range dirs {
		f, err := rundir.Load(dir)
		if err != nil {
			return nil, &InputError{err}
		}
		if f.Config.Worker == nil {
			return nil, inputErr("%s: the run of one process, not a worker's (lockbench run --worker I/N writes a worker's run folder)", dir)
		}
		if w := f.Config.Worker; CheckIndexOf(w.Index, w.Count) != nil {
			return nil, inputErr("%s: worker %d/%d: %v", filepath.Join(dir, rundir.ConfigFile), w.Index, w.Count, CheckIndexOf(w.Index, w.Count))
		}
		ws = append(ws, f)
	}
	first := ws[0].Config
	n := first.Worker.Count
	byIndex := make([]*rundir.Folder, n)
	for _, f := range ws {
		c := f.Config
		same := c.Lock == first.Lock && c.Seed == first.Seed && c.ScenarioHash == first.ScenarioHash &&
			c.Prefix == first.Prefix && c.Worker.Count == n
		if !same {
			return nil, inputErr("%s (%s × seed %d, prefix %s, worker %d/%d) and %s (%s × seed %d, prefix %s, worker %d/%d) are not workers of one run",
				ws[0].Dir, first.Lock, first.Seed, first.Prefix, first.Worker.Index, n, f.Dir, c.Lock, c.Seed, c.Prefix, c.Worker.Index, c.Worker.Count)
		}
		i := c.Worker.Index - 1
		if i < 0 || i >= n {
			return nil, inputErr("%s: worker %d of %d", f.Dir, c.Worker.Index, n)
		}
		if byIndex[i] != nil {
			return nil, inputErr("worker %d/%d given twice: %s and %s", i+1, n, byIndex[i].Dir, f.Dir)
		}
		byIndex[i] = f
	}
	var missing []string
	for i, f := range byIndex {
		if f == nil {
			missing = append(missing, fmt.Sprintf("%d/%d", i+1, n))
		}
	}
	if len(missing) > 0 {
		return nil, inputErr("missing worker %s of the run in %s: a merge needs every worker's run folder", strings.Join(missing, ", "), ws[0].Dir)
	}
	return byIndex, nil
}

// MergedRun is the run folder lockbench merge wrote from the workers'.
type MergedRun struct {
	*Result
	// Clocks are each worker's clock against worker 1's, by worker index
	// − 1, as the history's clock events carry them.
	Clocks []history.ClockValue
	// Events counts the merged history's events; Merge is how long
	// aligning the clocks and merging the histories took, without loading
	// the folders or checking and writing the result.
	Events int
	Merge  time.Duration
}

// WriteMergedRun joins the workers' histories (LoadWorkers) into one run
// folder under parent: each worker's times shifted onto worker 1's clock
// by the offset the probes give (clocks.Align), in time order, with a
// clock event per worker saying its offset, its uncertainty and its
// clients, which the exclusion check widens its overlaps by. The folder
// is checked and written as a run's.
func WriteMergedRun(parent string, ws []*rundir.Folder) (*MergedRun, error) {
	cfg := ws[0].Config
	var sc scenarios.Scenario
	if err := json.Unmarshal(cfg.Scenario, &sc); err != nil {
		return nil, fmt.Errorf("%s: scenario: %w", filepath.Join(ws[0].Dir, rundir.ConfigFile), err)
	}
	began := time.Now()
	probes := make([][]clocks.Probe, len(ws))
	for i, f := range ws {
		probes[i] = f.Probes
	}
	offsets, err := clocks.Align(probes)
	if err != nil {
		return nil, inputErr("align the workers' clocks: %v", err)
	}
	for w, o := range offsets {
		if d := time.Duration(o.Offset); d > maxWorkerOffset || d < -maxWorkerOffset {
			return nil, inputErr("%s: worker %d's clock is %s off worker 1's by its probes, more than the %s workers may start apart: its %s is not of this run", ws[w].Dir, w+1, d.Round(time.Millisecond), maxWorkerOffset, rundir.ProbesFile)
		}
	}
	m := &MergedRun{Clocks: workerClocks(offsets, sc.Clients)}
	events, base := mergeEvents(ws, offsets, m.Clocks)
	m.Events, m.Merge = len(events), time.Since(began)

	out := &runner.Outcome{Events: events}
	for _, f := range ws {
		var s report.Summary
		if err := json.Unmarshal(f.Summary, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(f.Dir, rundir.SummaryFile), err)
		}
		out.Elapsed = max(out.Elapsed, time.Duration(s.DurationS*float64(time.Second)))
		out.Interrupted = out.Interrupted || s.Interrupted
		if out.Stopped == "" && s.Stopped != "" {
			out.Stopped = fmt.Sprintf("worker %d: %s", f.Config.Worker.Index, s.Stopped)
		}
		out.Stuck = append(out.Stuck, s.Stuck...)
		cfg.MergedFrom = append(cfg.MergedFrom, f.Dir)
	}
	cfg.RunID = strings.TrimSuffix(cfg.RunID, fmt.Sprintf("-w1of%d", len(ws))) + "-merged"
	cfg.Worker = nil
	cfg.Started = cfg.Started.Add(-time.Duration(base))
	res, err := finishRun(parent, cfg, sc, out, nil, false)
	if err != nil {
		return nil, fmt.Errorf("merged run %s: %w", cfg.RunID, err)
	}
	m.Result = res
	return m, nil
}

// maxWorkerOffset bounds the offset between two workers' clocks: each
// counts from its own start, and workers start within --worker-wait of
// each other (5 min by default), so an hour apart is a folder of another
// run or an edited probes.jsonl.
const maxWorkerOffset = time.Hour

// workerClocks are the clock events' values: worker w's offset and the
// clients it drove (runner.Worker's share).
func workerClocks(offsets []clocks.Offset, clients int) []history.ClockValue {
	out := make([]history.ClockValue, len(offsets))
	for w, o := range offsets {
		v := history.ClockValue{Worker: fmt.Sprintf("%d/%d", w+1, len(offsets)), OffsetNS: int64(o.Offset), UncertaintyNS: int64(o.Uncertainty)}
		for id := w; id < clients; id += len(offsets) {
			v.Processes = append(v.Processes, id)
		}
		out[w] = v
	}
	return out
}

// mergeEvents merges the workers' histories, each already in time order,
// into one in time order on worker 1's clock moved by base (≥ 0, so that
// no time is negative), led by the clock events. Ties keep worker order.
func mergeEvents(ws []*rundir.Folder, offsets []clocks.Offset, cv []history.ClockValue) (events []history.Event, base int64) {
	total := len(cv)
	for w, f := range ws {
		total += len(f.Events)
		if len(f.Events) > 0 {
			base = max(base, -(f.Events[0].Time + int64(offsets[w].Offset)))
		}
	}
	events = make([]history.Event, 0, total)
	for _, v := range cv {
		b, _ := json.Marshal(v)
		events = append(events, history.Event{Process: history.NemesisProcess, Type: history.OK, F: history.FClock, Value: b})
	}
	next := make([]int, len(ws))
	for {
		pick, at := -1, int64(0)
		for w, f := range ws {
			if i := next[w]; i < len(f.Events) {
				if t := f.Events[i].Time + int64(offsets[w].Offset); pick < 0 || t < at {
					pick, at = w, t
				}
			}
		}
		if pick < 0 {
			return events, base
		}
		e := ws[pick].Events[next[pick]]
		e.Time = at + base
		events = append(events, e)
		next[pick]++
	}
}

// CheckIndexOf checks part i of n: 1 ≤ i ≤ n ≤ maxParts.
func CheckIndexOf(i, n int) error {
	switch {
	case n < 1 || n > maxParts:
		return fmt.Errorf("the count N must be 1..%d, not %d", maxParts, n)
	case i < 1 || i > n:
		return fmt.Errorf("the index I must be 1..%d, not %d", n, i)
	}
	return nil
}

// maxParts bounds N in I/N: no suite is split over more machines, nor a
// run over more processes, and a merge sizes its tables by N, which it
// reads from files (config.json, suite.json) that anyone may edit.
const maxParts = 10_000
