package report

import (
	"bytes"
	"testing"

	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/verdict"
)

func TestRunTableGolden(t *testing.T) {
	var b bytes.Buffer
	s := goldenSummary()
	if err := RunTable(&b, s); err != nil {
		t.Fatal(err)
	}
	if err := ChecksTable(&b, s); err != nil {
		t.Fatal(err)
	}
	golden(t, "run_table.golden", b.Bytes())
}

func TestSuiteTableGolden(t *testing.T) {
	var b bytes.Buffer
	// A cell whose scenario does not judge a check that failed
	// (late-unlock's exclusion): expected says "exclusion: any", never a
	// bare "pass", and the reason the scenario gives is under the table.
	late := suiteCells()[1]
	late.Summary.Lock, late.Summary.Scenario = "queue", "late-unlock"
	late.ExpectedChecks = map[string]verdict.Verdict{verdict.Symmetry: verdict.Pass, verdict.Liveness: verdict.Fail}
	late.Expected, late.Matches = verdict.Fail, true
	late.AnyReasons = map[string]string{verdict.Exclusion: "The holder believes it holds until its client notices the lease is gone. The rest stays in the scenario file."}
	if err := SuiteTable(&b, append(suiteCells(), late)); err != nil {
		t.Fatal(err)
	}
	golden(t, "suite_table.golden", b.Bytes())
}

func TestBenchLinesGolden(t *testing.T) {
	var sums []Summary
	for _, c := range suiteCells() {
		sums = append(sums, c.Summary)
	}
	// Every dimension of a cell is a key=value part of its name: the same
	// cell under another keepalive policy or etcd release is another
	// benchmark (and a benchstat column), never a sample of this one.
	for i := range sums {
		sums[i].KeepAlive = "auto"
	}
	safe, old := sums[0], sums[0]
	safe.KeepAlive = "safe"
	old.EtcdVersion = "3.4.23"
	odd := sums[0]
	odd.Lock, odd.Scenario, odd.KeepAlive = "my lock", "", ""
	sums = append(sums, safe, old, odd)
	var b bytes.Buffer
	if err := WriteBenchLines(&b, rundir.HostInfo{OS: "linux", Arch: "amd64", CPUModel: "Test CPU @ 2.00GHz"}, sums); err != nil {
		t.Fatal(err)
	}
	golden(t, "bench.golden", b.Bytes())
}

func TestMatchString(t *testing.T) {
	for _, tc := range []struct {
		c    Cell
		want string
	}{
		{Cell{}, "-"},
		{Cell{Matches: true}, "-"},
		{Cell{Expected: "pass", Matches: true}, "yes"},
		{Cell{Expected: "pass"}, "NO"},
		{Cell{Matches: false, Note: "interrupted"}, "NO"},
		{Cell{Summary: Summary{Interrupted: true}, Expected: "pass", Matches: false, Note: "interrupted"}, "NO (interrupted)"},
	} {
		if got := matchString(tc.c); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.c, got, tc.want)
		}
	}
}

// The suite table has an etcd column only when its cells ran on more than
// one binary, and then each row names its binary.
func TestSuiteTableEtcdColumn(t *testing.T) {
	cells := suiteCells()[:1]
	var one bytes.Buffer
	if err := SuiteTable(&one, cells); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(one.Bytes(), []byte("etcd")) {
		t.Errorf("one binary, yet an etcd column:\n%s", one.String())
	}
	a, b := cells[0], cells[0]
	a.Summary.Etcd, a.Summary.EtcdVersion = "self", "3.7.3"
	b.Summary.Etcd, b.Summary.EtcdVersion = "/usr/bin/etcd", "3.4.23"
	var two bytes.Buffer
	if err := SuiteTable(&two, []Cell{a, b}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{" etcd ", "3.7.3 (self)", "3.4.23 (/usr/bin/etcd)"} {
		if !bytes.Contains(two.Bytes(), []byte(want)) {
			t.Errorf("two binaries: no %q in\n%s", want, two.String())
		}
	}
}

// TestFirstSentence keeps a reason to its first sentence, which "i.e."
// and "e.g." do not end.
func TestFirstSentence(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"One. Two.", "One."},
		{"no stop", "no stop"},
		{"a Session, i.e. auto's keepalive: a race. More.", "a Session, i.e. auto's keepalive: a race."},
		{"e.g. this. And that.", "e.g. this."},
		{"ends with i.e. ", "ends with i.e. "},
	} {
		if got := firstSentence(tc.in); got != tc.want {
			t.Errorf("firstSentence(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
