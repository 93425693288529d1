// Package check turns a history into verdicts. Every function here is a pure
// function of the events: no etcd, no clock, no I/O, so a history from any
// client or tool is checked the same way (DESIGN.md §4).
package check

import (
	"fmt"
	"sort"
	"time"

	"github.com/lockbench/lockbench/history"
)

// Verdict is three-valued, as in porcupine: a check that cannot decide says
// so rather than guessing.
type Verdict string

// Verdicts, ordered by severity: Fail > Unknown > Pass.
const (
	Pass    Verdict = "pass"
	Unknown Verdict = "unknown"
	Fail    Verdict = "fail"
)

func (v Verdict) rank() int {
	switch v {
	case Fail:
		return 2
	case Unknown:
		return 1
	}
	return 0
}

// Worst composes verdicts: fail beats unknown beats pass.
func Worst(vs ...Verdict) Verdict {
	w := Pass
	for _, v := range vs {
		if v.rank() > w.rank() {
			w = v
		}
	}
	return w
}

// Check names (keys of Report.Checks).
const (
	Exclusion = "exclusion"
)

// Options tune checks whose bounds are not in the history itself.
type Options struct {
	// MaxViolations caps how many violations each check lists (the count is
	// always exact). 0 means DefaultMaxViolations.
	MaxViolations int
}

// DefaultMaxViolations is how many violations a check lists by default.
const DefaultMaxViolations = 100

// Holder is one side of an exclusion violation: who held the lock, from
// when to when, with which token, and on which history lines (1-based
// event numbers: the file's line numbers when it has no blank lines).
type Holder struct {
	Process int   `json:"process"`
	From    int64 `json:"from_ns"`
	// To is the end of the interval; -1 means still held at the end of the
	// history.
	To       int64 `json:"to_ns"`
	Token    int64 `json:"token,omitempty"`
	FromLine int   `json:"from_line"`
	ToLine   int   `json:"to_line,omitempty"`
}

// Violation is one thing a check found wrong, explained for a human and
// located in the history for a tool.
type Violation struct {
	Check   string   `json:"check"`
	Lock    string   `json:"lock,omitempty"`
	Message string   `json:"message"`
	Holders []Holder `json:"holders,omitempty"`
	// Lines are the history lines that show the violation.
	Lines []int `json:"lines,omitempty"`
}

// Result is one check's verdict with its evidence.
type Result struct {
	Verdict    Verdict     `json:"verdict"`
	Violations []Violation `json:"violations,omitempty"`
	// Count is the exact number of violations, also when the list is cut.
	Count int `json:"count"`
	// Note explains an unknown verdict or qualifies a pass.
	Note string `json:"note,omitempty"`
}

// Report is the checker's output: one result per check and their composed
// verdict.
type Report struct {
	Verdict Verdict           `json:"verdict"`
	Checks  map[string]Result `json:"checks"`
}

// Violations lists every check's violations, in check-name order.
func (r Report) Violations() []Violation {
	names := make([]string, 0, len(r.Checks))
	for n := range r.Checks {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Violation
	for _, n := range names {
		out = append(out, r.Checks[n].Violations...)
	}
	return out
}

// Check runs every check over events.
func Check(events []history.Event, opts Options) Report {
	if opts.MaxViolations <= 0 {
		opts.MaxViolations = DefaultMaxViolations
	}
	r := Report{Checks: map[string]Result{}}
	r.Checks[Exclusion] = CheckExclusion(events, opts)
	vs := make([]Verdict, 0, len(r.Checks))
	for _, c := range r.Checks {
		vs = append(vs, c.Verdict)
	}
	r.Verdict = Worst(vs...)
	return r
}

// fmtNS renders a run time for messages.
func fmtNS(ns int64) string {
	if ns < 0 {
		return "end"
	}
	return time.Duration(ns).String()
}

// add appends v to r unless the list is full; the count stays exact.
func (r *Result) add(v Violation, max int) {
	r.Count++
	if len(r.Violations) < max {
		r.Violations = append(r.Violations, v)
	}
}

func holderString(h Holder) string {
	return fmt.Sprintf("process %d (token %d) held %s–%s [lines %d–%d]",
		h.Process, h.Token, fmtNS(h.From), fmtNS(h.To), h.FromLine, h.ToLine)
}
