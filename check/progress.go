package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// CheckProgress fails a history in which clients asked for locks and were
// not served: no acquire was granted at all, or more acquires ended with
// an unknown outcome (info: errors the lock could not settle) than were
// granted, at least three. A certain failure (fail) alone does not count
// against progress: a try-lock that finds the lock held fails certainly. A harness that
// cannot reach etcd, lacks permission, or runs a lock that can no longer
// take a lease must not pass because nothing it did was wrong.
//
// Not counted: an acquire still pending at the end of the history, and a
// wait the caller cancelled ("context canceled": the run's end, or a
// cancel-waiters fault) — giving up is the caller's choice, not a failure
// of the lock.
//
// Metrics: requests, grants, failed, unknown, cancelled.
func CheckProgress(events []history.Event, opts Options) Result {
	return prepare(events).progress(opts.WithDefaults())
}

func (p *prepared) progress(opts Options) Result {
	res := Result{Verdict: verdict.Pass}
	var grants, failed, unknown, cancelled, requests int
	var firstErrs []string
	var firstLines []int
	for i := range p.n() {
		if p.op(i) != opAcquire || p.ev[i].Process < 0 || (p.ty(i) != tyInvoke && p.ended[i] >= 0) {
			continue // not an acquire's start (an invoke, or a completion without one)
		}
		requests++
		done, outcome := i, outcomeOfType(p.ty(i))
		if p.ty(i) == tyInvoke {
			done, outcome = int(p.pair[i]), p.outcome(i)
		}
		var errText string
		if done >= 0 {
			errText = p.ev[done].Error
		}
		switch {
		case outcome == OutcomeOK:
			grants++
			continue
		case outcome == OutcomePending:
			continue
		case strings.Contains(errText, "context canceled"):
			cancelled++
			continue
		case outcome == OutcomeFail:
			failed++
		default:
			unknown++
		}
		if len(firstErrs) < 3 && errText != "" && !slices.Contains(firstErrs, errText) {
			firstErrs = append(firstErrs, errText)
			firstLines = append(firstLines, done+1)
		}
	}
	if requests > 0 && (grants == 0 && failed+unknown+cancelled > 0 || unknown > grants && unknown >= 3) {
		msg := fmt.Sprintf("%s granted, %d failed and %d of unknown outcome (of %s, %d cancelled by the caller)",
			count(grants, "acquire", "acquires"), failed, unknown, count(requests, "request", "requests"), cancelled)
		if len(firstErrs) > 0 {
			msg += "; first errors: " + strings.Join(firstErrs, " | ")
		}
		res.add(Violation{Check: verdict.Progress, Message: msg, Lines: lines(firstLines...)}, opts.MaxViolations)
	}
	if requests == 0 {
		res.nothingToJudge("no acquire operations")
	}
	res.finish()
	res.metric("requests", float64(requests))
	res.metric("grants", float64(grants))
	res.metric("failed", float64(failed))
	res.metric("unknown", float64(unknown))
	res.metric("cancelled", float64(cancelled))
	return res
}
