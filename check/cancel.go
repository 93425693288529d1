package check

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/stats"
	"github.com/lockbench/lockbench/verdict"
)

// Parts of the default Options.CancelBound: a cancelled Lock may settle its
// outcome with up to CancelCleanups requests (delete its key; revoke its
// lease when the delete did not answer), each given the longer of the
// per-request deadline and CleanupTimeout, plus CancelSlack for a loaded
// machine.
const (
	// CleanupTimeout is the least a cancelled call's cleanup request may
	// take: lockbench's strategies give a cleanup 2 s of its own once the
	// caller's context has ended (the locks package's settle timeout).
	CleanupTimeout = 2 * time.Second
	// CancelCleanups is how many cleanup requests, one after the other, a
	// cancelled call may make.
	CancelCleanups = 2
	// CancelSlack is the room left for scheduling on a loaded machine.
	CancelSlack = time.Second
)

// CheckCancel fails when a Lock whose context was cancelled did not return
// within Options.CancelBound of the cancellation, not counting time its
// process was paused (a frozen process cannot return). A caller that gives
// up must get its call back: etcd's concurrency.Mutex.Lock (etcd #18082)
// and Election.Campaign clean up a cancelled wait with the client's
// context instead of the caller's, so while the members are unreachable
// the call waits for them, however long that is.
//
// The history shows a cancellation by the fault that does it: a fault
// whose cost is chaos.CostCancelledWaits (cancel-waiters) that ended ok
// cancelled every acquire in flight when it was invoked, and the
// cancellation was done by the time it ended, so the time from its end to
// the acquire's completion (or its process's crash, or the history's end,
// when it never completed) is at most how long the call went on: a
// violation is certain. An acquire invoked while the fault was being
// applied may or may not have been cancelled, and is not judged.
//
// Metrics: cancelled (acquires judged), cancel_bound_ms, and
// cancel_return_ms_max / cancel_return_ms_p50 (how long after the
// cancellation they returned). Without such a fault the verdict is pass
// with a note.
func CheckCancel(events []history.Event, opts Options) Result {
	return prepare(events).cancel(opts.WithDefaults())
}

// cancelBoundOf is the default Options.CancelBound for a per-request
// deadline d (negative: none).
func cancelBoundOf(d time.Duration) time.Duration {
	return CancelSlack + CancelCleanups*max(d, CleanupTimeout)
}

func (p *prepared) cancel(opts Options) Result {
	res := Result{Verdict: verdict.Pass}
	o := p.ops()
	var returns []int64
	for _, f := range o.Faults {
		if f.Stop < 0 || o.Events[f.Stop].Type != history.OK || !cancelsWaits(o.Events[f.Start]) {
			continue
		}
		for _, a := range o.Acquires {
			if a.Invoke < 0 || a.From >= f.From || (a.To >= 0 && a.To <= f.From) {
				continue // not in flight when the fault was invoked
			}
			stop := a.To
			if stop < 0 {
				stop = o.End
			}
			took := max(stop-f.To-pausedWithin(o.Pauses, int(a.Process), f.To, stop), 0)
			returns = append(returns, took)
			if opts.CancelBound >= 0 && took > int64(opts.CancelBound) {
				res.add(Violation{Check: verdict.Cancel, Lock: a.Lock, Message: cancelMessage(a, f, took, opts.CancelBound),
					Lines: lines(int(a.Invoke+1), f.Stop+1, int(a.Done+1))}, opts.MaxViolations)
			}
		}
	}
	res.finish()
	res.metric("cancelled", float64(len(returns)))
	res.metric("cancel_bound_ms", ms(int64(opts.CancelBound)))
	if len(returns) == 0 {
		res.nothingToJudge("no acquire was cancelled")
		return res
	}
	slices.Sort(returns)
	res.metric("cancel_return_ms_max", ms(returns[len(returns)-1]))
	res.metric("cancel_return_ms_p50", ms(stats.NearestRank(returns, 0.5)))
	return res
}

// cancelsWaits reports whether a fault event is of a fault that cancels
// the waiting clients' calls, by what the fault says it costs.
func cancelsWaits(e history.Event) bool {
	var f history.Fault
	_ = json.Unmarshal(e.Value, &f) // unknown: not one
	return chaos.CostOf(f.Fault) == chaos.CostCancelledWaits
}

// cancelMessage says how long a cancelled acquire went on.
func cancelMessage(a Op, f Span, took int64, bound time.Duration) string {
	var how string
	switch a.Outcome {
	case OutcomePending:
		how = "had still not returned when the history ended"
	case OutcomeAborted:
		how = fmt.Sprintf("had still not returned when its process crashed or did something else at %s", fmtNS(a.To))
	default:
		how = fmt.Sprintf("returned only at %s", fmtNS(a.To))
	}
	return fmt.Sprintf("process %d's acquire of %q (invoked at %s) was cancelled by %s and %s — %s after the cancellation "+
		"(time paused not counted), past the %s a cancelled call may take to return",
		a.Process, a.Lock, fmtNS(a.From), fmtNS(f.To), how, time.Duration(took).Round(time.Millisecond), bound)
}
