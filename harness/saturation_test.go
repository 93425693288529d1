package harness

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/verdict"
)

// lagsOf is n wake-ups of which late ones were d late and the rest on time.
func lagsOf(n, late int, d time.Duration) []time.Duration {
	lags := make([]time.Duration, n)
	for i := range late {
		lags[i*n/late] = d
	}
	return lags
}

func TestJudgeSaturation(t *testing.T) {
	tests := []struct {
		name      string
		lags      []time.Duration
		saturated bool
		reason    string
	}{
		{"no samples", nil, false, ""},
		{"on time", lagsOf(1000, 0, 0), false, ""},
		{"ordinary jitter", lagsOf(1000, 500, 9*time.Millisecond), false, ""},
		{"0.5% at 500ms: below p99, under the stall bound", lagsOf(1000, 5, 500*time.Millisecond), false, ""},
		{"1% at 99ms: just under the lag bound", lagsOf(1000, 10, 99*time.Millisecond), false, ""},
		{"1% at 100ms: p99 at the lag bound", lagsOf(1000, 10, 100*time.Millisecond), true, "≥100ms late on 1.0% of its 1000 wake-ups"},
		{"5% at 700ms (5,000 clients measured)", lagsOf(240, 12, 700*time.Millisecond), true, "on 5.0% of its 240 wake-ups (p99 700ms"},
		{"one 1s stall", lagsOf(1000, 1, time.Second), true, "stalled 1s"},
		{"one 999ms stall", lagsOf(1000, 1, 999*time.Millisecond), false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := judgeSaturation(tc.lags, probeInterval)
			if s.Saturated != tc.saturated || !strings.Contains(s.Reason, tc.reason) || (s.Reason != "") != tc.saturated {
				t.Errorf("saturated %v, reason %q; want %v, %q", s.Saturated, s.Reason, tc.saturated, tc.reason)
			}
			if s.Samples != len(tc.lags) || s.LagThresholdMS != 100 || s.StallThresholdMS != 1000 || s.IntervalMS != 10 {
				t.Errorf("figures %+v", s)
			}
		})
	}
}

// A cell that fails its expectation on a saturated harness is its own
// outcome: not a mismatch, said in its note, its row and its JUnit case;
// one that passes on a saturated harness is as expected.
func TestJudgeSaturatedCell(t *testing.T) {
	sat := judgeSaturation(lagsOf(100, 10, 700*time.Millisecond), probeInterval)
	expect := map[string]verdict.Verdict{verdict.Exclusion: verdict.Pass, verdict.Progress: verdict.Pass}
	failed := report.Summary{Verdict: verdict.Fail, Saturation: sat, Checks: map[string]check.Result{
		verdict.Exclusion: {Verdict: verdict.Pass}, verdict.Progress: {Verdict: verdict.Fail}}}
	c := Judge(failed, expect)
	if !c.Saturated() || c.Mismatch() || !strings.HasPrefix(c.Note, "harness saturated: the harness's scheduler probe") {
		t.Errorf("failed on a saturated harness: saturated %v, mismatch %v, note %q", c.Saturated(), c.Mismatch(), c.Note)
	}
	var table, junit bytes.Buffer
	if err := report.SuiteTable(&table, []report.Cell{c}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "harness saturated") {
		t.Errorf("table:\n%s", table.String())
	}
	if err := report.WriteJUnit(&junit, "s", "", []report.Cell{c}, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(junit.String(), "<skipped message=\"harness saturated, not judged") || strings.Contains(junit.String(), "<failure") {
		t.Errorf("junit:\n%s", junit.String())
	}
	passed := failed
	passed.Verdict, passed.Checks = verdict.Pass, map[string]check.Result{verdict.Exclusion: {Verdict: verdict.Pass}, verdict.Progress: {Verdict: verdict.Pass}}
	if c := Judge(passed, expect); !c.Matches || c.Saturated() {
		t.Errorf("passed on a saturated harness: %+v", c)
	}
	unsaturated := failed
	unsaturated.Saturation = judgeSaturation(lagsOf(100, 0, 0), probeInterval)
	if c := Judge(unsaturated, expect); !c.Mismatch() || c.Saturated() {
		t.Errorf("failed on an idle harness: mismatch %v, saturated %v", c.Mismatch(), c.Saturated())
	}
}
