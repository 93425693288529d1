package suite

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
)

func metaSpec(t *testing.T) Spec {
	t.Helper()
	var scs []scenarios.Scenario
	for _, n := range []string{"contention", "holder-crash"} {
		sc, err := scenarios.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		scs = append(scs, sc)
	}
	return Spec{Locks: []string{"queue", "txn"}, Scenarios: scs, Seeds: 1, Reps: 3, QuickDuration: time.Second,
		InjectDelay: map[string]time.Duration{"queue": 2 * time.Millisecond}}
}

// suite.json's header names what a comparison needs: hashes of the
// scenarios as run (the quick cap included), each cell's asserted checks,
// the host and the injected delay.
func TestSuiteHeader(t *testing.T) {
	s := metaSpec(t)
	h := s.header([]suiteBin{{}})
	if h.Reps != 3 || h.Host == nil || h.Host.CPUs < 1 || h.InjectDelay["queue"] != "2ms" {
		t.Errorf("header: %+v", h)
	}
	if len(h.ScenarioHashes) != 2 || h.ScenarioHashes["contention"] != s.capped(s.Scenarios[0]).Hash() {
		t.Errorf("hashes: %v", h.ScenarioHashes)
	}
	if h.ScenarioHashes["contention"] == s.Scenarios[0].Hash() {
		t.Error("the hash ignores the quick-duration cap: it must hash the scenario as run")
	}
	if e := h.Expected["queue/holder-crash"]; len(e) == 0 {
		t.Errorf("no expectations for queue/holder-crash: %v", h.Expected)
	}
	changed := s.Scenarios[1]
	changed.Clients++
	if changed.Hash() == s.Scenarios[1].Hash() {
		t.Error("a changed scenario keeps its hash")
	}
}

func TestSuiteMarkInterrupted(t *testing.T) {
	s := metaSpec(t)
	r := &Result{Header: s.header([]suiteBin{{}})}
	sum := func(lock, sc string, interrupted bool) report.Cell {
		return report.Cell{Summary: report.Summary{Run: rundir.Run{Lock: lock}, Scenario: sc, Interrupted: interrupted}}
	}
	for range 3 {
		r.Cells = append(r.Cells, sum("queue", "contention", false))
	}
	r.Cells = append(r.Cells, sum("txn", "contention", false), sum("txn", "contention", true))
	r.markInterrupted(s, []suiteBin{{}}, nil)
	// txn/contention ran (once whole, once cut short): it is in the cells,
	// so not in not_run; each key is in exactly one list.
	want := []string{"queue/holder-crash", "txn/holder-crash"}
	if !r.Header.Interrupted || !slices.Equal(r.Header.NotRun, want) {
		t.Errorf("interrupted %v, not run %v, want %v", r.Header.Interrupted, r.Header.NotRun, want)
	}
}

// A suite stopped by a cell the harness could not run (a full disk)
// still writes suite.json with the cells that ran, the error and the
// cells not run; when even that cannot be written, the error says so and
// Written stays false.
func TestSuiteFinishAfterAFailedCell(t *testing.T) {
	s := metaSpec(t)
	dir := t.TempDir()
	r := &suiteRun{spec: s, dir: dir, bins: []suiteBin{{}}, res: &Result{Dir: dir, Header: s.header([]suiteBin{{}})}}
	sum := report.Summary{Run: rundir.Run{Lock: "queue"}, Scenario: "contention", Verdict: verdict.Pass,
		LatencyMS: map[string]report.Latency{}, Checks: map[string]check.Result{verdict.Exclusion: {Verdict: verdict.Pass}}}
	r.res.Cells = append(r.res.Cells, report.Cell{Summary: sum, Matches: true})
	cellErr := errors.New("txn × contention seed 1: write history.jsonl: no space left on device")
	err := r.finish(false, cellErr)
	if !errors.Is(err, cellErr) || !r.res.Written {
		t.Fatalf("err %v, written %v: want the cell's error and suite.json written", err, r.res.Written)
	}
	got, rerr := report.ReadSuiteFile(filepath.Join(dir, rundir.SuiteFile))
	if rerr != nil {
		t.Fatalf("suite.json of a suite stopped early: %v", rerr)
	}
	if len(got.Cells) != 1 || got.Error != cellErr.Error() || got.Interrupted {
		t.Errorf("cells %d, error %q, interrupted %v: want the one cell that ran and the error", len(got.Cells), got.Error, got.Interrupted)
	}
	if want := []string{"txn/contention", "queue/holder-crash", "txn/holder-crash"}; !slices.Equal(got.NotRun, want) {
		t.Errorf("not run %v, want %v", got.NotRun, want)
	}

	// A folder that cannot be written to (a file where the folder was).
	blocked := filepath.Join(t.TempDir(), "file")
	if werr := os.WriteFile(blocked, nil, 0o644); werr != nil {
		t.Fatal(werr)
	}
	r.dir = filepath.Join(blocked, "suite")
	r.res.Written = false
	err = r.finish(false, cellErr)
	if !errors.Is(err, cellErr) || r.res.Written || !strings.Contains(err.Error(), "not written") {
		t.Errorf("err %v, written %v: want the cell's error saying suite.json was not written", err, r.res.Written)
	}
}

func TestSuiteSpecValidatesRepsAndDelay(t *testing.T) {
	s := metaSpec(t)
	s.InjectDelay = map[string]time.Duration{"mutex": time.Millisecond}
	if err := s.Validate(); err == nil {
		t.Error("a delay for a lock the suite does not run accepted")
	}
	s = metaSpec(t)
	s.Reps = -1
	if err := s.Validate(); err == nil {
		t.Error("negative reps accepted")
	}
}

// TestSuiteSeeds: the seeds run from FirstSeed (0: 1), Seeds of them, and
// a first seed with no room for the rest is refused.
func TestSuiteSeeds(t *testing.T) {
	for _, tc := range []struct {
		first int64
		n     int
		want  []int64
	}{
		{0, 3, []int64{1, 2, 3}},
		{1, 2, []int64{1, 2}},
		{11, 3, []int64{11, 12, 13}},
	} {
		s := metaSpec(t)
		s.FirstSeed, s.Seeds, s.Out = tc.first, tc.n, t.TempDir()
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		if got := slices.Collect(s.seeds()); !slices.Equal(got, tc.want) {
			t.Errorf("first %d, %d seeds: %v, want %v", tc.first, tc.n, got, tc.want)
		}
		var cells []int64
		for c := range s.cells("queue") {
			cells = append(cells, c.seed)
		}
		if cells[0] != tc.want[0] || cells[len(cells)-1] != tc.want[len(tc.want)-1] {
			t.Errorf("first %d: cells run seeds %v", tc.first, cells)
		}
	}
	for _, first := range []int64{-1, math.MaxInt64} {
		s := metaSpec(t)
		s.FirstSeed, s.Seeds, s.Out = first, 2, t.TempDir()
		if err := s.Validate(); err == nil {
			t.Errorf("first seed %d accepted", first)
		}
	}
}

// TestSuiteFileCarriesItsVersion: suite.json names the build that wrote
// it and its format at its top level, as every file lockbench writes.
func TestSuiteFileCarriesItsVersion(t *testing.T) {
	b, err := json.Marshal(metaSpec(t).header([]suiteBin{{}}))
	if err != nil {
		t.Fatal(err)
	}
	var s report.Suite
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Schema != rundir.SchemaVersion || s.Lockbench == "" || s.Lockbench != rundir.ThisBuild() {
		t.Errorf("suite.json: schema_version %d, lockbench_version %q; want %d, %q", s.Schema, s.Lockbench, rundir.SchemaVersion, rundir.ThisBuild())
	}
}
