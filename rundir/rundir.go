// Package rundir owns the run folder, the contract between lockbench and
// whoever reads its results later (people, scripts, `lockbench report`):
// the file names, config.json's schema (Config) with the run's identity
// (Run), writing a folder so that it is either complete or absent (Write,
// WriteFile, WriteJSON) and reading its bytes back (Load). Writer and
// reader share these, so they cannot drift. It sits below the code that
// checks and renders runs and imports none of it (only the history
// codec): package harness re-checks a folder, package report draws it.
//
// A run folder holds config.json, history.jsonl, summary.json and
// report.html (and a worker's, probes.jsonl); a suite folder holds suite.json and report.html beside its
// cells' run folders; a bench folder holds bench.json beside its cells'
// run folders (docs/design.md describes the contract).
package rundir

import "errors"

// File names inside run, suite and bench folders. They are a contract:
// tools read them, so they never change.
const (
	// ConfigFile is Config: what ran, where and how, to understand or
	// repeat a run.
	ConfigFile = "config.json"
	// HistoryFile is the run's history, one event per line, from which
	// every figure can be computed again.
	HistoryFile = "history.jsonl"
	// SummaryFile is report.Summary as computed when the run ended.
	SummaryFile = "summary.json"
	// HTMLFile is the self-contained page of a run or a suite, drawn from
	// the other files.
	HTMLFile = "report.html"
	// SuiteFile is a suite's summaries (report.Suite), beside its cells'
	// run folders.
	SuiteFile = "suite.json"
	// BenchFile is a benchmark's result (report.Bench), beside its cells'
	// run folders.
	BenchFile = "bench.json"
	// ProbesFile is a worker's probe writes (clocks.Probe, one per line),
	// beside its history: what the merge aligns the workers' clocks by.
	ProbesFile = "probes.jsonl"
)

// SchemaVersion is the version of the JSON files lockbench writes
// (config.json, summary.json, suite.json, bench.json), each of which
// carries it as "schema_version" beside "lockbench_version". It is bumped
// when a key changes meaning or goes away, not when one is added (readers
// ignore keys they do not know): a reader tells a file it may misread (a
// higher version) from an older one (a lower version, or none at all:
// files written before it existed, which every reader still accepts).
const SchemaVersion = 1

// ErrNotRunFolder is wrapped by Load when the folder is not a run folder
// at all (as opposed to a run folder with a broken file), so that callers
// can tell a wrong path from damaged results.
var ErrNotRunFolder = errors.New("not a run folder")
