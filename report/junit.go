package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lockbench/lockbench/verdict"
)

// JUnit XML (the schema CI systems read: GitHub test reporters, GitLab,
// Jenkins): one testsuite, one testcase per run, named lock/scenario/seed
// and the cell's other dimensions (junitNames), so that no two share a
// name. A cell that did not meet its expectation is a <failure>, one that
// was interrupted or never ran is <skipped>; the others pass. Types mirror
// the elements and attributes they encode.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Time     string       `xml:"time,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name       string          `xml:"name,attr"`
		Tests      int             `xml:"tests,attr"`
		Failures   int             `xml:"failures,attr"`
		Errors     int             `xml:"errors,attr"`
		Skipped    int             `xml:"skipped,attr"`
		Time       string          `xml:"time,attr"`
		Properties []junitProperty `xml:"properties>property,omitempty"`
		Cases      []junitCase     `xml:"testcase"`
	}
	junitCase struct {
		Name       string          `xml:"name,attr"`
		Classname  string          `xml:"classname,attr"`
		Time       string          `xml:"time,attr"`
		Properties []junitProperty `xml:"properties>property,omitempty"`
		Skipped    *junitSkipped   `xml:"skipped,omitempty"`
		Failure    *junitFailure   `xml:"failure,omitempty"`
		SystemOut  string          `xml:"system-out,omitempty"`
	}
	junitSkipped struct {
		Message string `xml:"message,attr"`
	}
	junitProperty struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	junitFailure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
)

// WriteJUnit writes a suite's cells as JUnit XML, so CI shows each run as
// a test: named by junitNames (classname lockbench.<lock>), its run's
// duration as its time, its run folder (suiteDir joined with Cell.Dir) as
// the property "run_folder", and, when it did not meet its expectation, a
// <failure> whose message names the checks that differ and the first
// violation. An interrupted run is <skipped> (what ran of it is not a
// verdict), and so is each cell of notRun (suite.json's not_run: cells a
// suite stopped early never ran), so CI does not count a cut suite as
// passing. name names the testsuite (e.g. the suite folder's name).
func WriteJUnit(w io.Writer, name, suiteDir string, cells []Cell, notRun []string) error {
	s := junitSuite{Name: name, Tests: len(cells) + len(notRun)}
	if suiteDir != "" {
		s.Properties = []junitProperty{{"suite_folder", suiteDir}}
	}
	total := 0.0
	for i, n := range junitNames(cells) {
		c := cells[i]
		tc := junitTestCase(n, c, suiteDir)
		switch {
		case tc.Skipped != nil:
			s.Skipped++
		case tc.Failure != nil:
			s.Failures++
		}
		total += c.Summary.DurationS
		s.Cases = append(s.Cases, tc)
	}
	for _, key := range notRun {
		lock, _, _ := strings.Cut(key, "/")
		s.Cases = append(s.Cases, junitCase{Name: key + "/not-run", Classname: "lockbench." + lock, Time: secs(0),
			Skipped: &junitSkipped{Message: "not run: the suite stopped before this cell's runs (all or some)"}})
		s.Skipped++
	}
	s.Time = secs(total)
	doc := junitSuites{Name: name, Tests: s.Tests, Failures: s.Failures, Time: s.Time, Suites: []junitSuite{s}}
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("encode JUnit XML: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s%s\n", xml.Header, b)
	return err
}

// junitNames names each cell's testcase uniquely: lock/scenario/seed,
// then the dimensions Summary.Key adds (keepalive=K when not the
// default, etcd=V for member processes), then rep=N (from 1, in order)
// when several runs share all of those (suite --reps).
func junitNames(cells []Cell) []string {
	names := make([]string, len(cells))
	count := map[string]int{}
	for i, c := range cells {
		s := c.Summary
		names[i] = fmt.Sprintf("%s/%s/%d%s", s.Lock, s.Scenario, s.Seed, strings.TrimPrefix(s.Key(), s.Lock+"/"+s.Scenario))
		count[names[i]]++
	}
	rep := map[string]int{}
	for i, n := range names {
		if count[n] > 1 {
			rep[n]++
			names[i] = fmt.Sprintf("%s/rep=%d", n, rep[n])
		}
	}
	return names
}

// junitTestCase is one cell as the testcase name.
func junitTestCase(name string, c Cell, suiteDir string) junitCase {
	s := c.Summary
	tc := junitCase{Name: name, Classname: "lockbench." + s.Lock, Time: secs(s.DurationS)}
	if c.Dir != "" {
		dir := c.Dir
		if suiteDir != "" && !filepath.IsAbs(dir) {
			dir = filepath.Join(suiteDir, dir)
		}
		tc.Properties = append(tc.Properties, junitProperty{"run_folder", dir})
	}
	tc.Properties = append(tc.Properties, junitProperty{"verdict", string(s.Verdict)})
	if c.Expected != "" {
		tc.Properties = append(tc.Properties, junitProperty{"expected", string(c.Expected)})
	}
	tc.SystemOut = fmt.Sprintf("%s × %s seed %d: verdict %s, %.1f acq/s, %s", s.Lock, s.Scenario, s.Seed, s.Verdict, s.ThroughputPerS, countNoun(s.TotalViolations(), "violation"))
	switch {
	case s.Interrupted:
		tc.Skipped = &junitSkipped{Message: fmt.Sprintf("interrupted after %.1fs: what ran is in the run folder, not judged", s.DurationS)}
	case c.Saturated():
		tc.Skipped = &junitSkipped{Message: "harness saturated, not judged: " + s.Saturation.Reason}
	case c.Mismatch():
		tc.Failure = &junitFailure{Message: junitMessage(c), Type: "expectation", Text: junitDetail(c)}
	}
	return tc
}

// junitMessage says what differed: the expectation, the checks that
// differ, and the first violation.
func junitMessage(c Cell) string {
	s := c.Summary
	var parts []string
	if c.Expected != "" {
		parts = append(parts, fmt.Sprintf("expected %s, got %s", c.Expected, s.Verdict))
	} else {
		parts = append(parts, "verdict "+string(s.Verdict))
	}
	if cs := differingChecks(c); len(cs) > 0 {
		parts = append(parts, "checks: "+strings.Join(cs, ", "))
	}
	if vs := summaryViolations(s); len(vs) > 0 {
		parts = append(parts, "first violation: "+vs[0].Explained())
	}
	if c.Note != "" {
		parts = append(parts, c.Note)
	}
	return strings.Join(parts, "; ")
}

// differingChecks are "check verdict (expected v)" for each check the
// cell's expectation asserts and the run did not meet, or, when it asserts
// none, each check that did not pass.
func differingChecks(c Cell) []string {
	var out []string
	for _, n := range checkNames(c.Summary.Checks) {
		got := c.Summary.Checks[n].Verdict
		want, asserted := c.ExpectedChecks[n]
		switch {
		case asserted && want != verdict.Any && want != got:
			out = append(out, fmt.Sprintf("%s %s (expected %s)", n, got, want))
		case len(c.ExpectedChecks) == 0 && got != verdict.Pass:
			out = append(out, fmt.Sprintf("%s %s", n, got))
		}
	}
	for _, n := range checkNames(c.ExpectedChecks) {
		if _, ran := c.Summary.Checks[n]; !ran && c.ExpectedChecks[n] != verdict.Any {
			out = append(out, fmt.Sprintf("%s not run (expected %s)", n, c.ExpectedChecks[n]))
		}
	}
	return out
}

// junitDetail is the failure's body: every check's verdict and first
// violations, as the suite page lists them.
func junitDetail(c Cell) string {
	var b strings.Builder
	for _, n := range checkNames(c.Summary.Checks) {
		r := c.Summary.Checks[n]
		fmt.Fprintf(&b, "%s: %s (%s)\n", n, r.Outcome(), countNoun(r.Count, "violation"))
		for _, v := range r.Violations[:min(len(r.Violations), 3)] {
			fmt.Fprintf(&b, "  - %s\n", v.Explained())
		}
	}
	return b.String()
}

// secs renders seconds as JUnit's time attribute wants: a decimal.
func secs(s float64) string { return strconv.FormatFloat(max(s, 0), 'f', 3, 64) }
