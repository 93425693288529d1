package report

import (
	"bytes"
	"encoding/xml"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/verdict"
)

// xmlNode is any element, to check a document's structure against the
// JUnit schema without trusting the types that wrote it.
type xmlNode struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []xmlNode  `xml:",any"`
	Text     string     `xml:",chardata"`
}

func (n xmlNode) attr(k string) (string, bool) {
	for _, a := range n.Attrs {
		if a.Name.Local == k {
			return a.Value, true
		}
	}
	return "", false
}

func (n xmlNode) children(name string) []xmlNode {
	var out []xmlNode
	for _, c := range n.Children {
		if c.XMLName.Local == name {
			out = append(out, c)
		}
	}
	return out
}

// requireAttrs checks that n has each attribute, and that the numeric
// ones parse (tests, failures, errors: integers; time: a decimal ≥ 0).
func requireAttrs(t *testing.T, n xmlNode, keys ...string) {
	t.Helper()
	for _, k := range keys {
		v, ok := n.attr(k)
		if !ok {
			t.Errorf("<%s> lacks the required attribute %q", n.XMLName.Local, k)
			continue
		}
		switch k {
		case "tests", "failures", "errors", "skipped":
			if _, err := strconv.Atoi(v); err != nil {
				t.Errorf("<%s %s=%q>: not an integer", n.XMLName.Local, k, v)
			}
		case "time":
			if f, err := strconv.ParseFloat(v, 64); err != nil || f < 0 || strings.ContainsAny(v, "eE") {
				t.Errorf("<%s time=%q>: not a decimal", n.XMLName.Local, v)
			}
		}
	}
}

// TestWriteJUnit validates the XML against the JUnit schema's required
// structure: <testsuites> (tests, failures, errors, time) holding
// <testsuite>s (name, tests, failures, errors, time) holding <testcase>s
// (name, classname, time), a failed one with a <failure message>; the
// counts add up.
func TestWriteJUnit(t *testing.T) {
	cells := suiteCells()
	cells[2].ExpectedChecks = map[string]verdict.Verdict{verdict.Liveness: verdict.Pass, verdict.Herd: verdict.Pass}
	cells[2].Summary.Checks = maps.Clone(cells[2].Summary.Checks)
	cells[2].Summary.Checks[verdict.Liveness] = goldenSummary().Checks[verdict.Liveness]
	var b bytes.Buffer
	if err := WriteJUnit(&b, "suite-x", "/tmp/results/suite-x", cells, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), xml.Header) {
		t.Error("no XML header")
	}
	var root xmlNode
	if err := xml.Unmarshal(b.Bytes(), &root); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b.String())
	}
	if root.XMLName.Local != "testsuites" {
		t.Fatalf("root <%s>, want <testsuites>", root.XMLName.Local)
	}
	requireAttrs(t, root, "tests", "failures", "errors", "time")
	suites := root.children("testsuite")
	if len(suites) != 1 {
		t.Fatalf("%d <testsuite>, want 1", len(suites))
	}
	ts := suites[0]
	requireAttrs(t, ts, "name", "tests", "failures", "errors", "time")
	cases := ts.children("testcase")
	failures := 0
	names := map[string]bool{}
	for _, c := range cases {
		requireAttrs(t, c, "name", "classname", "time")
		n, _ := c.attr("name")
		names[n] = true
		for _, f := range c.children("failure") {
			failures++
			requireAttrs(t, f, "message")
		}
		props := c.children("properties")
		if len(props) != 1 || len(props[0].children("property")) == 0 {
			t.Errorf("testcase %s: no properties", n)
			continue
		}
		found := false
		for _, p := range props[0].children("property") {
			requireAttrs(t, p, "name", "value")
			if k, _ := p.attr("name"); k == "run_folder" {
				v, _ := p.attr("value")
				found = strings.HasPrefix(v, "/tmp/results/suite-x/runs/")
			}
		}
		if !found {
			t.Errorf("testcase %s: no run_folder property in the suite folder", n)
		}
	}
	if tests, _ := ts.attr("tests"); tests != strconv.Itoa(len(cases)) || len(cases) != len(cells) {
		t.Errorf("tests=%s, %d testcases, %d cells", tests, len(cases), len(cells))
	}
	if f, _ := ts.attr("failures"); f != strconv.Itoa(failures) || failures != 1 {
		t.Errorf("failures=%s, %d <failure>s, want 1 (txn-watch: unknown, expected pass)", f, failures)
	}
	if f, _ := root.attr("failures"); f != "1" {
		t.Errorf("<testsuites failures=%s>", f)
	}
	for _, want := range []string{"queue/contention/1", "txn-watch/contention/1", "mutex/leader-kill/1"} {
		if !names[want] {
			t.Errorf("no testcase %q (have %v)", want, names)
		}
	}
	for _, want := range []string{`message="expected pass, got unknown; checks: liveness unknown (expected pass)`, `classname="lockbench.txn-watch"`, `type="expectation"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("XML lacks %q:\n%s", want, b.String())
		}
	}
}

func TestJUnitMessageNamesFirstViolation(t *testing.T) {
	c := suiteCells()[1] // queue-naive: fail, with an exclusion violation
	c.Expected, c.Matches = verdict.Pass, false
	msg := junitMessage(c)
	for _, want := range []string{"expected pass, got fail", "checks: exclusion fail", "first violation: lock \"l\" held by two processes at once"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	var b bytes.Buffer
	if err := WriteJUnit(&b, "empty", "", nil, nil); err != nil || !strings.Contains(b.String(), `tests="0"`) {
		t.Errorf("empty suite: %v\n%s", err, b.String())
	}
}

// TestJUnitNamesAreUniqueAndSkips: a suite with --keepalive safe,auto,
// --reps 2 and two etcd releases gives every run its own testcase name
// (keepalive when not the default, etcd when set, rep when several runs
// share the rest); an interrupted run and the cells that never ran are
// <skipped>, not failures and not passes.
func TestJUnitNamesAreUniqueAndSkips(t *testing.T) {
	base := suiteCells()[0] // queue × contention, seed 1, as expected
	var cells []Cell
	for _, ka := range []string{"safe", "auto"} {
		for _, etcd := range []string{"", "3.4.23"} {
			for range 2 { // --reps 2
				c := base
				c.Summary.KeepAlive = ka
				if etcd != "" {
					c.Summary.Etcd, c.Summary.EtcdVersion = "/usr/bin/etcd", etcd
				}
				cells = append(cells, c)
			}
		}
	}
	cut := base
	cut.Summary.Seed, cut.Summary.Interrupted, cut.Matches, cut.Note = 2, true, false, "interrupted"
	cells = append(cells, cut)
	var b bytes.Buffer
	if err := WriteJUnit(&b, "s", "", cells, []string{"txn/contention/keepalive=auto"}); err != nil {
		t.Fatal(err)
	}
	var root xmlNode
	if err := xml.Unmarshal(b.Bytes(), &root); err != nil {
		t.Fatal(err)
	}
	ts := root.children("testsuite")[0]
	var names []string
	skipped := map[string]string{}
	for _, c := range ts.children("testcase") {
		n, _ := c.attr("name")
		names = append(names, n)
		for _, s := range c.children("skipped") {
			skipped[n], _ = s.attr("message")
		}
		if len(c.children("skipped")) > 0 && len(c.children("failure")) > 0 {
			t.Errorf("%s: both skipped and failed", n)
		}
	}
	want := []string{
		"queue/contention/1/rep=1", "queue/contention/1/rep=2",
		"queue/contention/1/etcd=3.4.23/rep=1", "queue/contention/1/etcd=3.4.23/rep=2",
		"queue/contention/1/keepalive=auto/rep=1", "queue/contention/1/keepalive=auto/rep=2",
		"queue/contention/1/keepalive=auto/etcd=3.4.23/rep=1", "queue/contention/1/keepalive=auto/etcd=3.4.23/rep=2",
		"queue/contention/2", "txn/contention/keepalive=auto/not-run",
	}
	if !slices.Equal(names, want) {
		t.Errorf("testcase names\n%q\nwant\n%q", names, want)
	}
	if !strings.Contains(skipped["queue/contention/2"], "interrupted") || !strings.Contains(skipped["txn/contention/keepalive=auto/not-run"], "not run") || len(skipped) != 2 {
		t.Errorf("skipped: %q", skipped)
	}
	if n, _ := ts.attr("skipped"); n != "2" {
		t.Errorf(`skipped="%s", want 2`, n)
	}
	if n, _ := ts.attr("failures"); n != "0" {
		t.Errorf(`failures="%s", want 0: an interrupted run is skipped, not failed`, n)
	}
	if n, _ := ts.attr("tests"); n != strconv.Itoa(len(want)) {
		t.Errorf(`tests="%s", want %d`, n, len(want))
	}
}
