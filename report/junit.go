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
// Jenkins): one testsuite, one testcase per cell named lock/scenario/seed.
// A cell that did not meet its expectation is a <failure>; the others
// pass. Types mirror the elements and attributes they encode.
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
		Failure    *junitFailure   `xml:"failure,omitempty"`
		SystemOut  string          `xml:"system-out,omitempty"`
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

// WriteJUnit writes a suite's cells as JUnit XML, so CI shows each cell as
// a test: named lock/scenario/seed (classname lockbench.<lock>), its run's
// duration as its time, its run folder (suiteDir joined with Cell.Dir) as
// the property "run_folder", and, when it did not meet its expectation, a
// <failure> whose message names the checks that differ and the first
// violation. name names the testsuite (e.g. the suite folder's name).
func WriteJUnit(w io.Writer, name, suiteDir string, cells []Cell) error {
	s := junitSuite{Name: name, Tests: len(cells)}
	if suiteDir != "" {
		s.Properties = []junitProperty{{"suite_folder", suiteDir}}
	}
	total := 0.0
	for _, c := range cells {
		tc := junitTestCase(c, suiteDir)
		if tc.Failure != nil {
			s.Failures++
		}
		total += c.Summary.DurationS
		s.Cases = append(s.Cases, tc)
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

// junitTestCase is one cell as a testcase.
func junitTestCase(c Cell, suiteDir string) junitCase {
	s := c.Summary
	name := fmt.Sprintf("%s/%s/%d", s.Lock, s.Scenario, s.Seed)
	if s.Etcd != "" {
		// Member processes: the release tells a version matrix's cells apart.
		name += "/etcd-" + s.EtcdVersion
	}
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
	if c.Mismatch() {
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
		parts = append(parts, "first violation: "+vs[0].Message)
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
		fmt.Fprintf(&b, "%s: %s (%s)\n", n, r.Verdict, countNoun(r.Count, "violation"))
		for _, v := range r.Violations[:min(len(r.Violations), 3)] {
			fmt.Fprintf(&b, "  - %s\n", v.Message)
		}
	}
	return b.String()
}

// secs renders seconds as JUnit's time attribute wants: a decimal.
func secs(s float64) string { return strconv.FormatFloat(max(s, 0), 'f', 3, 64) }
