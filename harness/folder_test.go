package harness

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
)

// sampleDir is a run folder written before the run identity became one
// record (report's TestSampleRunFolder keeps it): old folders must load.
var sampleDir = filepath.Join("..", "report", "testdata", "run-violation")

// TestRecheckSample: the sample folder loads and re-checks to its known
// violation, with its identity from the folder.
func TestRecheckSample(t *testing.T) {
	r, err := Recheck(sampleDir)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Summary
	if s.Verdict != verdict.Fail || s.Checks[verdict.Exclusion].Count == 0 {
		t.Errorf("the sample run has no exclusion violation: %s", s.Verdict)
	}
	if s.Clients != 8 || s.Lock != "queue" || s.RunID == "" || s.Scenario == "" || s.Verdict != r.Saved.Verdict {
		t.Errorf("identity from the folder: %+v", s.Run)
	}
	// The sample folder predates schema_version; the summary computed
	// again is in this build's format.
	if r.Folder.Config.Schema != 0 || s.Schema != rundir.SchemaVersion {
		t.Errorf("schema: folder %d, re-checked summary %d; want 0 and %d", r.Folder.Config.Schema, s.Schema, rundir.SchemaVersion)
	}
	var page bytes.Buffer
	if err := report.WriteRunHTML(&page, r.Folder.Config, r.Checked, report.RunContext{Cell: report.Cell{Summary: s}}); err != nil || !bytes.Contains(page.Bytes(), []byte(`class="lane"`)) {
		t.Errorf("run page: %v", err)
	}
}

// finishSample writes the sample run folder's history again as a run of
// contention, its config.json changed by edit, into a temporary folder.
func finishSample(t *testing.T, edit func(*rundir.Config)) *Result {
	t.Helper()
	f, err := rundir.Load(sampleDir)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenarios.Lookup("contention")
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.Config
	edit(&cfg)
	res, err := finishRun(t.TempDir(), cfg, sc, &runner.Outcome{Events: f.Events, Elapsed: time.Second}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestRunPairsItsHistoryOnce: checking, summarizing and writing a run
// folder (history, summary, page) pair the history once, and so does
// re-checking a folder and drawing its page again.
func TestRunPairsItsHistoryOnce(t *testing.T) {
	before := check.Pairings()
	res := finishSample(t, func(cfg *rundir.Config) { cfg.RunID = "pairs-once" })
	if n := check.Pairings() - before; n != 1 {
		t.Errorf("a run paired its history %d times, want 1", n)
	}
	before = check.Pairings()
	r, err := Recheck(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(filepath.Join(t.TempDir(), rundir.HTMLFile)); err != nil {
		t.Fatal(err)
	}
	if n := check.Pairings() - before; n != 1 {
		t.Errorf("a re-check and its page paired the history %d times, want 1", n)
	}
	if r.Summary.Verdict != res.Summary.Verdict || r.Summary.Acquisitions != res.Summary.Acquisitions {
		t.Errorf("re-check %s/%d, run %s/%d", r.Summary.Verdict, r.Summary.Acquisitions, res.Summary.Verdict, res.Summary.Acquisitions)
	}
}

// TestFilesCarryTheirVersions: every JSON file lockbench writes names the
// build that wrote it (lockbench_version) and its format
// (schema_version): config.json and summary.json through the run's
// identity (suite.json and bench.json: packages suite's and bench's
// tests).
func TestFilesCarryTheirVersions(t *testing.T) {
	res := finishSample(t, func(cfg *rundir.Config) {
		cfg.Run = identity("versions", RunSpec{Lock: "queue", Seed: 1}, target{})
	})
	files := map[string][]byte{}
	for _, name := range []string{rundir.ConfigFile, rundir.SummaryFile} {
		var err error
		if files[name], err = os.ReadFile(filepath.Join(res.Dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for name, b := range files {
		var top struct {
			Schema    int    `json:"schema_version"`
			Lockbench string `json:"lockbench_version"`
		}
		if err := json.Unmarshal(b, &top); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if top.Schema != rundir.SchemaVersion || top.Lockbench == "" || top.Lockbench != rundir.ThisBuild() {
			t.Errorf("%s: schema_version %d, lockbench_version %q; want %d and %q", name, top.Schema, top.Lockbench, rundir.SchemaVersion, rundir.ThisBuild())
		}
	}
}

// TestFileFormatsKeepTheirKeys: config.json, summary.json and suite.json
// are contracts; every key of files written before this build (the
// sample run folder, the committed baseline suite) survives reading them
// with today's types and writing them again.
func TestFileFormatsKeepTheirKeys(t *testing.T) {
	for _, tc := range []struct {
		path string
		into any
	}{
		{filepath.Join(sampleDir, rundir.ConfigFile), &rundir.Config{}},
		{filepath.Join(sampleDir, rundir.SummaryFile), &report.Summary{}},
		{filepath.Join("..", "results", "baseline.json"), &report.Suite{}},
	} {
		old, err := os.ReadFile(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(old, tc.into); err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		again, err := json.Marshal(tc.into)
		if err != nil {
			t.Fatal(err)
		}
		if missing := rundir.MissingKeys(old, again); len(missing) > 0 {
			t.Errorf("%s: keys lost when read and written again: %v", tc.path, missing)
		}
	}
}

// TestCheckOptions: a client fault's bound is the lease TTL plus the
// election timeout, a member fault's reads the election timeout and the
// request deadline, each defaulted when config.json lacks it; durations
// read as text, nanoseconds or ""; the order is the strategy's.
func TestCheckOptions(t *testing.T) {
	for _, tc := range []struct {
		cfg             string
		bound, election time.Duration
		request         time.Duration
		order           verdict.Order
	}{
		{`{}`, check.DefaultLivenessBound, check.DefaultElectionTimeout, -1, verdict.OrderUnknown},
		{`{"lock":"queue","rpc_timeout_ms":700,"scenario":{"lease_ttl":"10s"},"cluster":{"election_ms":1000}}`,
			11 * time.Second, time.Second, 700 * time.Millisecond, verdict.FIFO},
		{`{"lock":"txn","scenario":{"lease_ttl":2000000000}}`, 2*time.Second + check.DefaultElectionTimeout, check.DefaultElectionTimeout, -1, verdict.NoOrder},
		{`{"lock":"no-such-lock","scenario":{"lease_ttl":""}}`, check.DefaultLivenessBound, check.DefaultElectionTimeout, -1, verdict.OrderUnknown},
	} {
		var c rundir.Config
		if err := json.Unmarshal([]byte(tc.cfg), &c); err != nil {
			t.Fatalf("%s: %v", tc.cfg, err)
		}
		var sc scenarios.Scenario
		if len(c.Scenario) > 0 {
			if err := json.Unmarshal(c.Scenario, &sc); err != nil {
				t.Fatalf("%s: %v", tc.cfg, err)
			}
		}
		got := checkOptions(sc, c)
		if got.LivenessBound != tc.bound || got.ElectionTimeout != tc.election || got.RequestTimeout != tc.request || got.Order != tc.order {
			t.Errorf("%s: bound %s, election %s, request %s, order %q; want %s, %s, %s, %q", tc.cfg,
				got.LivenessBound, got.ElectionTimeout, got.RequestTimeout, got.Order, tc.bound, tc.election, tc.request, tc.order)
		}
	}
}

// TestRecheckBrokenScenario: a config.json whose scenario does not decode
// is named in the error.
func TestRecheckBrokenScenario(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	os.MkdirAll(dir, 0o755)
	for _, name := range []string{rundir.HistoryFile, rundir.SummaryFile} {
		b, _ := os.ReadFile(filepath.Join(sampleDir, name))
		os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	os.WriteFile(filepath.Join(dir, rundir.ConfigFile), []byte(`{"scenario":{"lease_ttl":"junk"}}`), 0o644)
	if _, err := Recheck(dir); err == nil || !bytes.Contains([]byte(err.Error()), []byte(rundir.ConfigFile)) {
		t.Errorf("Recheck = %v, want an error naming %s", err, rundir.ConfigFile)
	}
}

// TestSuitePageLinksRuns: the suite page links to each cell's run page by
// the run folder's file name.
func TestSuitePageLinksRuns(t *testing.T) {
	r, err := Recheck(sampleDir)
	if err != nil {
		t.Fatal(err)
	}
	suite := filepath.Join(t.TempDir(), "suite.html")
	cells := []report.Cell{{Summary: r.Saved, Dir: "cell-1"}}
	if err := rundir.WriteFile(suite, func(w io.Writer) error { return report.WriteSuiteHTML(w, report.Suite{}, cells) }); err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(suite)
	if !bytes.Contains(page, []byte("cell-1/"+rundir.HTMLFile)) {
		t.Errorf("the suite page does not link to cell-1/%s", rundir.HTMLFile)
	}
}

// TestOverrunBoundOfThePolicy: a run is held to the belief overrun its
// keepalive policy states at the scenario's TTL; a config.json without a
// policy (from before it was recorded) and a strategy that keeps its own
// lease are held to auto's, which at the checker's default TTL is the
// checker's default.
func TestOverrunBoundOfThePolicy(t *testing.T) {
	for _, tc := range []struct {
		keepalive string
		ttl       time.Duration
		want      time.Duration
	}{
		{"safe", time.Second, 750 * time.Millisecond},
		{"auto", time.Second, 1500 * time.Millisecond},
		{"auto", 3 * time.Second, 2 * time.Second},
		{"seed", time.Second, 1300 * time.Millisecond},
		{"own", time.Second, 1500 * time.Millisecond},
		{"", time.Second, 1500 * time.Millisecond},
		{"auto", check.DefaultLeaseTTL, check.DefaultOverrunBound},
	} {
		sc := scenarios.Scenario{LeaseTTL: scenarios.Duration(tc.ttl)}
		if got := checkOptions(sc, rundir.Config{Run: rundir.Run{KeepAlive: tc.keepalive}}).OverrunBound; got != tc.want {
			t.Errorf("%q at TTL %s: overrun bound %s, want %s", tc.keepalive, tc.ttl, got, tc.want)
		}
	}
}

// TestRunPageSaysWhatWasExpected: a run's page says what its scenario
// expected of its strategy and whether the run met it, the command that
// runs it again, and links to its files.
func TestRunPageSaysWhatWasExpected(t *testing.T) {
	res := finishSample(t, func(cfg *rundir.Config) { cfg.RunID, cfg.Seed, cfg.KeepAlive = "expected", 7, "auto" })
	page, err := os.ReadFile(filepath.Join(res.Dir, rundir.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		// The sample overlaps: contention expects every check to pass.
		`<p class="outcome not-as-expected">not as expected: the scenario expects pass`,
		`<code class="reproduce">lockbench run --lock queue --scenario contention --seed 7 --keepalive auto</code>`,
		`<a href="history.jsonl">history.jsonl</a>`,
	} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if bytes.Contains(page, []byte("the suite's page")) {
		t.Error("a run outside a suite links a suite page")
	}
}

func TestReproduceCommand(t *testing.T) {
	cases := []struct {
		name   string
		cfg    rundir.Config
		source string
		want   string
	}{
		{"built in, default policy", rundir.Config{Run: rundir.Run{Lock: "queue", Seed: 3, KeepAlive: "safe"}}, "builtin:contention.yaml",
			"lockbench run --lock queue --scenario contention --seed 3"},
		{"own lease, member binary", rundir.Config{Run: rundir.Run{Lock: "mutex", Seed: 1, KeepAlive: "own", Etcd: "/opt/etcd 3.5/etcd"}}, "builtin:contention.yaml",
			"lockbench run --lock mutex --scenario contention --seed 1 --etcd-bin '/opt/etcd 3.5/etcd'"},
		{"a file with a quote", rundir.Config{Run: rundir.Run{Lock: "redis-setnx", Seed: 2}}, "my scenarios/it's.yaml",
			`lockbench run --lock redis-setnx --scenario 'my scenarios/it'\''s.yaml' --seed 2`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := reproduceCommand(tc.cfg, scenarios.Scenario{Name: "contention", Source: tc.source}); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
