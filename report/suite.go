package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/lockbench/lockbench/verdict"
)

// Suite is suite.json: the summaries of a suite's cells (strategy ×
// scenario).
type Suite struct {
	Cells []Summary `json:"cells"`
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
}

// Mismatch reports whether the cell did not meet its expectation (an
// expected verdict, or a Note explaining why not, e.g. an interrupted run).
func (c Cell) Mismatch() bool { return !c.Matches && (c.Expected != "" || c.Note != "") }

// ErrNotSummary is wrapped by ReadSuiteFile for JSON that is neither a
// summary.json nor a suite.json.
var ErrNotSummary = errors.New("neither a summary.json nor a suite.json")

// ReadSuiteFile reads a suite.json ({"cells": [summary...]}) or a single
// summary.json, which becomes a suite of one cell.
func ReadSuiteFile(path string) (Suite, error) {
	b, err := os.ReadFile(path)
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

func validSummary(s Summary) error {
	if s.Lock == "" {
		return fmt.Errorf("%w: empty \"lock\"", ErrNotSummary)
	}
	switch s.Verdict {
	case verdict.Pass, verdict.Unknown, verdict.Fail:
	default:
		return fmt.Errorf("verdict %q is not one of pass, unknown, fail", s.Verdict)
	}
	return nil
}
