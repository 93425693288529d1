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
	} {
		if got := matchString(tc.c); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.c, got, tc.want)
		}
	}
}
