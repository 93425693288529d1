package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lockbench/lockbench/internal/wholefile"
	"github.com/lockbench/lockbench/verdict"
)

// Suite is suite.json: the summaries of a suite's cells (strategy ×
// scenario), one per run (seed × repetition), and what a comparison needs
// to know whether two suites can be compared at all. Every field but Cells
// is optional: older suite.json files and summary.json files lack them.
type Suite struct {
	// Schema is rundir.SchemaVersion when written (0: an older file, or a
	// summary.json read as a suite) and Lockbench the build that ran the
	// suite (rundir.ThisBuild): compare tells a file it may misread from
	// an older one by it.
	Schema    int    `json:"schema_version,omitempty"`
	Lockbench string `json:"lockbench_version,omitempty"`
	// Started is when the suite began (RFC 3339, UTC) and WallS how long
	// it took, in seconds: the page says when and how long, and a reader
	// of two suites knows which is newer.
	Started string    `json:"started,omitempty"`
	WallS   float64   `json:"wall_s,omitempty"`
	Cells   []Summary `json:"cells"`
	// Reps is how many times each seed of each cell ran (0: once).
	Reps int `json:"reps,omitempty"`
	// Host is the machine the suite ran on: figures from different hosts
	// are compared only after dividing by each side's Floor.
	Host *Host `json:"host,omitempty"`
	// Floor is the commit floor measured on the suite's cluster before its
	// first cell (one writer): what this machine's etcd can do at all.
	Floor *Floor `json:"floor,omitempty"`
	// Interrupted is set when a signal ended the suite before its last
	// cell; NotRun names the cells (lock/scenario) it never started (a
	// cell cut short is in Cells, its summary interrupted).
	Interrupted bool     `json:"interrupted,omitempty"`
	NotRun      []string `json:"not_run,omitempty"`
	// Error is why the harness stopped the suite before its last cell
	// (e.g. a full disk), NotRun then naming the cells not run: what ran
	// is kept, and a comparison knows the suite is incomplete.
	Error string `json:"error,omitempty"`
	// ScenarioHashes is a hash of each scenario's canonical JSON (as run),
	// by scenario name: a changed definition makes its cells incomparable.
	ScenarioHashes map[string]string `json:"scenario_hashes,omitempty"`
	// Expected is, by cell key (lock/scenario), the verdict each asserted
	// check must have; a check not listed can race or is not judged.
	Expected map[string]map[string]verdict.Verdict `json:"expected,omitempty"`
	// InjectDelay is the test-only delay before every grant, by strategy
	// (e.g. "queue": "2ms"): a suite with one is a deliberate regression.
	InjectDelay map[string]string `json:"inject_delay,omitempty"`
	// Matrix is the whole matrix the suite is part of (every shard of a
	// sharded suite records the same one), so that lockbench merge joins
	// only parts of one matrix, in its order.
	Matrix *Matrix `json:"matrix,omitempty"`
	// Shard is set in a shard's suite.json (suite --shard I/N): which part
	// of Matrix it ran.
	Shard *Shard `json:"shard,omitempty"`
	// Shards is set in a merged suite.json (lockbench merge): the shards it
	// joined, each with its folder; Error and NotRun then name a shard not
	// given to the merge and its cells.
	Shards []Shard `json:"shards,omitempty"`
}

// Matrix is a suite's matrix: its dimensions in run order and an id that
// changes with anything that changes what its cells run.
type Matrix struct {
	// ID is a hash of the dimensions below with the scenario hashes, the
	// expectations, the seeds and the options every cell runs with.
	ID        string   `json:"id"`
	Scenarios []string `json:"scenarios"`
	Locks     []string `json:"locks"`
	// KeepAlives are the policies (as keyed), Etcd the releases of a
	// version matrix (none: one binary).
	KeepAlives []string `json:"keepalives"`
	Etcd       []string `json:"etcd,omitempty"`
	Seeds      int      `json:"seeds"`
	FirstSeed  int64    `json:"first_seed"`
	// Keys are every cell key of the matrix, in run order.
	Keys []string `json:"keys"`
}

// Shard is one part of a sharded suite.
type Shard struct {
	// Index is the shard, 1..Count.
	Index int `json:"index"`
	Count int `json:"count"`
	// Keys are the matrix's cell keys this shard runs, in matrix order.
	Keys []string `json:"keys"`
	// WallS is how long the shard's suite took, in seconds.
	WallS float64 `json:"wall_s,omitempty"`
	// Dir, in a merged suite, is the shard's suite folder relative to the
	// merged one: its cells' run folders are there.
	Dir string `json:"dir,omitempty"`
}

// Host fingerprints a machine: two suites with equal Hosts ran on the
// same kind of machine, so their absolute figures compare.
type Host struct {
	CPUModel string `json:"cpu_model,omitempty"`
	CPUs     int    `json:"cpus"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Kernel   string `json:"kernel,omitempty"`
}

// String is the fingerprint on one line, for compare's output.
func (h *Host) String() string {
	if h == nil {
		return "(unknown host)"
	}
	return fmt.Sprintf("%s, %d CPUs, %s/%s, kernel %s", h.CPUModel, h.CPUs, h.OS, h.Arch, h.Kernel)
}

// Merge joins suites run apart into one: lockbench regress runs each side
// as several interleaved suites of one repetition each. Cells and NotRun
// are concatenated, Interrupted is any part's, Error the first part's, Reps the sum; Host, Floor,
// hashes and expectations are the first part's that has them (the parts
// ran the same binary on the same machine).
func Merge(parts ...Suite) Suite {
	var m Suite
	for i, p := range parts {
		// The merge is no newer than its oldest part: a key that part
		// lacks, the merge lacks too.
		if i == 0 || p.Schema < m.Schema {
			m.Schema = p.Schema
		}
		if m.Lockbench == "" {
			m.Lockbench = p.Lockbench
		}
		for _, c := range p.Cells {
			if c.SuiteFloor == nil {
				c.SuiteFloor = p.Floor
			}
			m.Cells = append(m.Cells, c)
		}
		m.NotRun = append(m.NotRun, p.NotRun...)
		m.Interrupted = m.Interrupted || p.Interrupted
		if m.Error == "" {
			m.Error = p.Error
		}
		m.Reps += max(p.Reps, 1)
		if m.Host == nil {
			m.Host = p.Host
		}
		if m.Floor == nil {
			m.Floor = p.Floor
		}
		if m.ScenarioHashes == nil {
			m.ScenarioHashes = p.ScenarioHashes
		}
		if m.Expected == nil {
			m.Expected = p.Expected
		}
		if m.InjectDelay == nil {
			m.InjectDelay = p.InjectDelay
		}
	}
	return m
}

// Cell is one row of a suite report: a run's summary and what the scenario
// expected of that strategy. The suite command fills it.
type Cell struct {
	Summary Summary `json:"summary"`
	// Expected is the verdict the scenario expects ("" when it expects
	// nothing).
	Expected verdict.Verdict `json:"expected,omitempty"`
	// ExpectedChecks is the verdict the scenario expects of each check it
	// asserts; checks not listed are reported but not judged.
	ExpectedChecks map[string]verdict.Verdict `json:"expected_checks,omitempty"`
	// Matches says whether the run met the expectation.
	Matches bool `json:"matches"`
	// Dir is the cell's run folder relative to the suite report, for links
	// (optional).
	Dir string `json:"dir,omitempty"`
	// Note explains a mismatch (optional), e.g. which check differed.
	Note string `json:"note,omitempty"`
	// AnyReasons is, by check, why the scenario does not judge it ("any"),
	// where it says why (scenarios.Scenario.AnyReason): the suite table
	// shows it under a not-judged check that did not pass.
	AnyReasons map[string]string `json:"any_reasons,omitempty"`
}

// Mismatch reports whether the cell did not meet its expectation (an
// expected verdict, or a Note explaining why not, e.g. an interrupted run).
// A cell that did not meet it on a saturated harness (Saturated) is not a
// mismatch: its verdicts are no evidence about the lock.
func (c Cell) Mismatch() bool {
	return !c.Matches && !c.Saturated() && (c.Expected != "" || c.Note != "")
}

// Saturated reports whether the cell did not meet its expectation and its
// run was saturated (Summary.Saturation): the harness overloaded, which is
// the suite's own outcome, not the lock's (docs/design.md §9). An
// interrupted run is interrupted first.
func (c Cell) Saturated() bool {
	return !c.Matches && !c.Summary.Interrupted && c.Summary.Saturated()
}

// ErrNotSummary is wrapped by ReadSuiteFile for JSON that is neither a
// summary.json nor a suite.json.
var ErrNotSummary = errors.New("neither a summary.json nor a suite.json")

// ReadSuiteFile reads a suite.json ({"cells": [summary...]}) or a single
// summary.json, which becomes a suite of one cell. A path that is not a
// regular file or is over wholefile.JSONLimit is refused before it is
// read, with a *wholefile.Error.
func ReadSuiteFile(path string) (Suite, error) {
	b, err := wholefile.Read(path, "suite.json or summary.json", wholefile.JSONLimit)
	if err != nil {
		return Suite{}, err
	}
	s, err := ParseSuite(b)
	if err != nil {
		return Suite{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseSuite decodes a suite.json or a summary.json (see ReadSuiteFile).
func ParseSuite(b []byte) (Suite, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return Suite{}, fmt.Errorf("not JSON: %w", err)
	}
	if raw, ok := probe["cells"]; ok {
		var s Suite
		if err := json.Unmarshal(b, &s); err != nil {
			return Suite{}, fmt.Errorf("suite: %w", err)
		}
		if raw == nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return Suite{}, fmt.Errorf("suite: %w: \"cells\" is null", ErrNotSummary)
		}
		for i, c := range s.Cells {
			if err := validSummary(c); err != nil {
				return Suite{}, fmt.Errorf("suite cell %d: %w", i, err)
			}
		}
		return s, nil
	}
	var sum Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		return Suite{}, err
	}
	for _, k := range []string{"lock", "verdict", "latency_ms"} {
		if _, ok := probe[k]; !ok {
			return Suite{}, fmt.Errorf("%w: no %q field", ErrNotSummary, k)
		}
	}
	if err := validSummary(sum); err != nil {
		return Suite{}, err
	}
	return Suite{Cells: []Summary{sum}}, nil
}

// ErrMalformed is wrapped by ReadSuiteFile for a summary (alone or a
// suite's cell) that lacks what a comparison reads: its checks or its
// latencies. Without them compare would find nothing to compare and pass.
var ErrMalformed = errors.New("malformed summary")

func validSummary(s Summary) error {
	if s.Lock == "" {
		return fmt.Errorf("%w: empty \"lock\"", ErrNotSummary)
	}
	switch s.Verdict {
	case verdict.Pass, verdict.Unknown, verdict.Fail:
	default:
		return fmt.Errorf("verdict %q is not one of pass, unknown, fail", s.Verdict)
	}
	if len(s.Checks) == 0 {
		return fmt.Errorf("%w: \"checks\" is missing, null or empty (want each check's verdict, e.g. \"checks\": {\"exclusion\": {\"verdict\": \"pass\"}})", ErrMalformed)
	}
	if s.LatencyMS == nil {
		return fmt.Errorf("%w: \"latency_ms\" is missing or null (want an object of latencies, e.g. \"latency_ms\": {\"acquire\": {...}})", ErrMalformed)
	}
	return nil
}
