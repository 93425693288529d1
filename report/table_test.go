package report

import (
	"bytes"
	"testing"
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
	if err := SuiteTable(&b, suiteCells()); err != nil {
		t.Fatal(err)
	}
	golden(t, "suite_table.golden", b.Bytes())
}

func TestBenchLinesGolden(t *testing.T) {
	var sums []Summary
	for _, c := range suiteCells() {
		sums = append(sums, c.Summary)
	}
	odd := sums[0]
	odd.Lock, odd.Scenario = "my lock", ""
	sums = append(sums, odd)
	var b bytes.Buffer
	if err := WriteBenchLines(&b, sums); err != nil {
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
