package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockbench/lockbench/verdict"
)

// outcomeLine is a suite's result as its page opens with it: Class is
// "as-expected", "not-as-expected" or "incomplete" (the page's colour),
// Line the result, Detail what the cells hold beside it.
type outcomeLine struct {
	Class, Line string
	Detail      []string
}

// suiteOutcome is the suite's result: not as expected when any cell is a
// mismatch, incomplete when it was interrupted or stopped, as expected
// otherwise; with how many cells failed as expected (known bugs shown),
// left checks unasserted, or ran on a saturated harness.
func suiteOutcome(h Suite, cells []Cell) outcomeLine {
	var mismatch, expectedFail, unasserted, saturated, noExpect int
	for _, c := range cells {
		switch {
		case c.Mismatch():
			mismatch++
		case c.Saturated():
			saturated++
		case c.Expected == "":
			noExpect++
		case c.Summary.Verdict == verdict.Fail:
			expectedFail++
		}
		unasserted += len(unjudgedFailures(c))
	}
	out := outcomeLine{Class: "as-expected", Line: fmt.Sprintf("%s, all as expected", countNoun(len(cells), "cell"))}
	switch {
	case mismatch > 0:
		out = outcomeLine{Class: "not-as-expected", Line: fmt.Sprintf("%d of %s not as expected", mismatch, countNoun(len(cells), "cell"))}
	case noExpect == len(cells):
		out = outcomeLine{Class: "incomplete", Line: fmt.Sprintf("%s, no expectations to meet", countNoun(len(cells), "cell"))}
	}
	if h.Interrupted || h.Error != "" {
		out.Class = "incomplete"
		why := "interrupted"
		if h.Error != "" {
			why = "stopped: " + h.Error
		}
		out.Line += fmt.Sprintf(" — %s, %s not run", why, countNoun(len(h.NotRun), "cell"))
	}
	if expectedFail > 0 {
		out.Detail = append(out.Detail, fmt.Sprintf("%s failed as their scenarios expect (known bugs, shown muted)", countNoun(expectedFail, "cell")))
	}
	if unasserted > 0 {
		out.Detail = append(out.Detail, fmt.Sprintf("%s did not pass where the scenario does not assert them (races, said per cell)", countNoun(unasserted, "check")))
	}
	if saturated > 0 {
		out.Detail = append(out.Detail, fmt.Sprintf("%s missed their expectation on a saturated harness: no evidence about the lock", countNoun(saturated, "cell")))
	}
	if noExpect > 0 && noExpect < len(cells) {
		out.Detail = append(out.Detail, fmt.Sprintf("%s had no expectation", countNoun(noExpect, "cell")))
	}
	return out
}

// suiteIdentity is what ran the suite, each as a short phrase: the
// lockbench build, when and for how long, the systems the cells ran on
// and the host. A field the header lacks (an older suite.json) is left
// out.
func suiteIdentity(h Suite, cells []Cell) []string {
	var out []string
	if h.Lockbench != "" {
		out = append(out, "lockbench "+h.Lockbench)
	}
	if t, err := time.Parse(time.RFC3339, h.Started); err == nil {
		out = append(out, "started "+t.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if h.WallS > 0 {
		out = append(out, "took "+time.Duration(h.WallS*float64(time.Second)).Round(time.Second).String())
	}
	var systems []string
	for _, c := range cells {
		b := c.Summary.Backend
		if b == "" {
			b = "etcd" // files written before the backend was recorded
		}
		if l := c.Summary.EtcdLabel(); l != "" && b == "etcd" {
			b += " " + l
		}
		if !slices.Contains(systems, b) {
			systems = append(systems, b)
		}
	}
	if len(systems) > 0 {
		out = append(out, "on "+strings.Join(systems, ", "))
	}
	if h.Host != nil {
		out = append(out, "host "+h.Host.String())
	}
	return out
}
