package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/clocks"
	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
)

// workerSkews are the test's clock skews, one per worker: each worker's
// history reads that far ahead, so the offsets the merge must find are
// tens to hundreds of milliseconds apart, either way against worker 1.
var workerSkews = []time.Duration{50 * time.Millisecond, 0, 500 * time.Millisecond, 550 * time.Millisecond}

// Four workers drive one run on one cluster, each with a skewed clock;
// the merge of their folders must give the single-process verdict on
// exclusion (queue passes waiter-crash, queue-naive fails it, as the
// scenario expects; queue in contention passes) and find every
// worker's true offset within its uncertainty. LOCKBENCH_WORKER_SEEDS=10 runs ten seeds (docs/scale.md).
func TestWorkersMergeToTheRunsVerdict(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	seeds := 1
	if s := os.Getenv("LOCKBENCH_WORKER_SEEDS"); s != "" {
		seeds, _ = strconv.Atoi(s)
	}
	// With fsync, as a production cluster: a handoff then takes a commit
	// (milliseconds), longer than the offsets' errors (well under one); on
	// a cluster without fsync a handoff between two workers can be
	// shorter than the error, and exclusion is unknown (docs/scale.md).
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() }) // after the parallel cells
	for _, tc := range []struct {
		lock, scenario string
		// want is the single process's exclusion verdict. In contention
		// (~600 handoffs in 3 s, most between two workers) some handoffs
		// are shorter than the offsets' error (a handoff is one commit,
		// < 1 ms here): etcd's revisions order them (history
		// Event.Revision), not the clocks.
		want verdict.Verdict
	}{
		{"queue", "waiter-crash", verdict.Pass},
		{"queue-naive", "waiter-crash", verdict.Fail},
		{"queue", "contention", verdict.Pass},
	} {
		for seed := int64(1); seed <= int64(seeds); seed++ {
			t.Run(fmt.Sprintf("%s/%s/seed%d", tc.lock, tc.scenario, seed), func(t *testing.T) {
				t.Parallel() // each cell its own prefix on the shared cluster
				sc, err := scenarios.Lookup(tc.scenario)
				if err != nil {
					t.Fatal(err)
				}
				if tc.scenario == "contention" {
					sc.Duration = scenarios.Duration(3 * time.Second)
				}
				ws := runWorkers(t, c.Endpoints(), tc.lock, sc, seed)
				m, err := WriteMergedRun(t.TempDir(), ws)
				if err != nil {
					t.Fatal(err)
				}
				ex := m.Summary.Checks["exclusion"]
				t.Logf("merged exclusion %s: %v clock-uncertain overlaps, %v ordered by revisions", ex.Verdict,
					ex.Metrics["clock_uncertain_overlaps"], ex.Metrics["revision_ordered_overlaps"])
				if ex.Verdict != tc.want {
					t.Errorf("merged exclusion %s, want %s: %v %v", ex.Verdict, tc.want, ex.Metrics, m.Summary.Violations)
				}
				for i, cv := range m.Clocks {
					truth := trueOffset(ws[0].Config, ws[i].Config)
					if d := (cv.OffsetNS - int64(truth)); d > cv.UncertaintyNS || -d > cv.UncertaintyNS {
						t.Errorf("worker %s: offset %s ± %s, true %s", cv.Worker, time.Duration(cv.OffsetNS), time.Duration(cv.UncertaintyNS), truth)
					}
					t.Logf("worker %s: offset %s ± %s, true %s", cv.Worker, time.Duration(cv.OffsetNS), time.Duration(cv.UncertaintyNS), truth)
				}
			})
		}
	}
}

// trueOffset is what must be added to worker w's history times to read
// worker 1's: the difference of their true starts (config.json's
// started is the wall clock's, one clock on this machine) less the
// difference of their skews.
func trueOffset(one, w rundir.Config) time.Duration {
	return w.Started.Sub(one.Started) + time.Duration(one.Worker.ClockSkewNS-w.Worker.ClockSkewNS)
}

// runWorkers runs the four workers of one run at once and loads their
// folders, by worker index.
func runWorkers(t *testing.T, endpoints []string, lock string, sc scenarios.Scenario, seed int64) []*rundir.Folder {
	t.Helper()
	out := t.TempDir()
	prefix := fmt.Sprintf("/lockbench/test-workers/%s-%s-%d/", lock, sc.Name, seed)
	dirs := make([]string, len(workerSkews))
	errs := make([]error, len(workerSkews))
	var wg sync.WaitGroup
	for i, skew := range workerSkews {
		wg.Go(func() {
			spec := RunSpec{Lock: lock, Scenario: sc, Seed: seed, Out: out, ClockSkew: skew,
				Worker: runner.Worker{Index: i + 1, Count: len(workerSkews), Wait: time.Minute}}
			res, err := RunExternal(context.Background(), External{Endpoints: endpoints, Prefix: prefix}, spec)
			if err == nil && res.Summary.Stopped != "" {
				err = errors.New(res.Summary.Stopped)
			}
			if err == nil {
				dirs[i] = res.Dir
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	ws, err := LoadWorkers(dirs)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// The merge refuses what is not one run's workers, naming the folders.
func TestLoadWorkersRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, w *rundir.Worker, seed int64) string {
		cfg := rundir.Config{Run: rundir.Run{RunID: name, Lock: "queue", Seed: seed}, Prefix: "/p/", Worker: w}
		d, err := rundir.Write(dir, name, rundir.JSONFile(rundir.ConfigFile, cfg),
			rundir.File{Name: rundir.HistoryFile, Render: func(w io.Writer) error {
				_, err := io.WriteString(w, `{"time":1,"process":0,"type":"invoke","f":"acquire"}`+"\n")
				return err
			}},
			rundir.JSONFile(rundir.SummaryFile, map[string]any{}),
			rundir.File{Name: rundir.ProbesFile, Render: func(io.Writer) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	one := write("w1", &rundir.Worker{Index: 1, Count: 3}, 1)
	two := write("w2", &rundir.Worker{Index: 2, Count: 3}, 1)
	three := write("w3", &rundir.Worker{Index: 3, Count: 3}, 1)
	otherSeed := write("w3s2", &rundir.Worker{Index: 3, Count: 3}, 2)
	single := write("single", nil, 1)
	// Counts read from a file are bounded before anything is sized by
	// them (2e9 drove a merge out of memory, -1 panicked).
	huge := write("huge", &rundir.Worker{Index: 1, Count: 2_000_000_000}, 1)
	negative := write("negative", &rundir.Worker{Index: 1, Count: -1}, 1)
	beyond := write("beyond", &rundir.Worker{Index: 4, Count: 3}, 1)
	for _, tc := range []struct {
		dirs []string
		want string
	}{
		{[]string{huge, one}, "huge/config.json: worker 1/2000000000: the count N must be 1..10000"},
		{[]string{negative}, "negative/config.json: worker 1/-1: the count N must be 1..10000"},
		{[]string{one, beyond}, "beyond/config.json: worker 4/3: the index I must be 1..3"},
		{[]string{one, two}, "missing worker 3/3"},
		{[]string{one, two, two}, "worker 2/3 given twice"},
		{[]string{one, two, otherSeed}, "are not workers of one run"},
		{[]string{one, single}, "not a worker's"},
	} {
		_, err := LoadWorkers(tc.dirs)
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an input error saying %q", tc.dirs, err, tc.want)
		}
	}
	if _, err := LoadWorkers([]string{three, one, two}); err != nil {
		t.Errorf("the three workers in any order: %v", err)
	}
}

// A merge refuses workers whose probes put their clocks an hour or more
// apart (a probes.jsonl of another run, or edited: 31 years was taken),
// naming the folder.
func TestMergeRefusesAClockYearsOff(t *testing.T) {
	dir := t.TempDir()
	sc, err := json.Marshal(scenarios.Scenario{Name: "contention", Clients: 2})
	if err != nil {
		t.Fatal(err)
	}
	const years = int64(31 * 365 * 24 * time.Hour)
	write := func(name string, w int, probes []clocks.Probe) *rundir.Folder {
		cfg := rundir.Config{Run: rundir.Run{RunID: name, Lock: "queue", Seed: 1}, Prefix: "/p/", Scenario: sc, Worker: &rundir.Worker{Index: w, Count: 2}}
		d, err := rundir.Write(dir, name, rundir.JSONFile(rundir.ConfigFile, cfg),
			rundir.File{Name: rundir.HistoryFile, Render: func(w io.Writer) error {
				_, err := io.WriteString(w, `{"time":1,"process":0,"type":"invoke","f":"acquire"}`+"\n")
				return err
			}},
			rundir.JSONFile(rundir.SummaryFile, map[string]any{}),
			rundir.File{Name: rundir.ProbesFile, Render: rundir.ProbesRender(probes)})
		if err != nil {
			t.Fatal(err)
		}
		f, err := rundir.Load(d)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	one := write("w1", 1, []clocks.Probe{{Sent: 0, Received: 10, Revision: 1}, {Sent: 100, Received: 110, Revision: 3}})
	two := write("w2", 2, []clocks.Probe{{Sent: years + 50, Received: years + 60, Revision: 2}, {Sent: years + 150, Received: years + 160, Revision: 4}})
	_, err = WriteMergedRun(t.TempDir(), []*rundir.Folder{one, two})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "w2: worker 2's clock is") || !strings.Contains(err.Error(), "is not of this run") {
		t.Errorf("merge of a worker 31 years off: %v, want an input error naming it", err)
	}
}
