package check

import (
	"fmt"
	"math/rand/v2"

	"github.com/lockbench/lockbench/history"
)

// genConfig describes a random sequential schedule: processes take turns
// holding one lock (one holder at a time), optionally running the counter
// workload inside, with waiters that time out, wake-ups, faults and the
// run's closing events.
type genConfig struct {
	procs      int
	grants     int
	counter    bool
	wakeAll    bool    // every waiter wakes on each handoff (herd) instead of one
	faultEvery int     // a short fault every this many grants (0: none)
	giveUp     float64 // chance per handoff that a waiter's acquire ends fail or info
	keys       bool    // add the diagnostic key/lease fields
	inject     string  // "", "overlap", "lost", "token"
}

// genHistory returns the history and the 1-based line of the injected fault
// (0 when nothing was injected).
func genHistory(rng *rand.Rand, c genConfig) ([]history.Event, int) {
	const lock = "bench"
	evs := make([]history.Event, 0, c.grants*10+c.procs*4+8)
	t := int64(0)
	emit := func(p int, ty history.Type, f history.Function, tok int64, v int64, hasV bool) {
		t += 1000 + rng.Int64N(40_000)
		e := history.Event{Time: t, Process: int32(p), Type: ty, F: f, Lock: lock, Token: tok}
		if hasV {
			e.Value = history.IntValue(v)
		}
		if c.keys && f == history.FAcquire && ty == history.OK {
			e.Key = fmt.Sprintf("%s/%d", lock, tok)
			e.Lease = fmt.Sprintf("%x", 0x7000+p)
		}
		evs = append(evs, e)
	}
	waiting := make([]int, 0, c.procs)
	for p := range c.procs {
		emit(p, history.Invoke, history.FAcquire, 0, 0, false)
		waiting = append(waiting, p)
	}
	injectAt := -1
	if c.inject != "" {
		injectAt = 3 + rng.IntN(max(c.grants-4, 1))
	}
	injectedLine := 0
	token, counter := int64(100), int64(0)
	pre := -1 // a process granted early by an injected overlap
	for g := range c.grants {
		if c.faultEvery > 0 && g > 0 && g%c.faultEvery == 0 {
			t += 1000
			v := history.FaultValue(history.Fault{Fault: "kill-leader", Target: "leader", Resolved: "m1"})
			evs = append(evs, history.Event{Time: t, Process: history.NemesisProcess, Type: history.Invoke, F: history.FFault, Value: v})
			t += 5000
			evs = append(evs, history.Event{Time: t, Process: history.NemesisProcess, Type: history.OK, F: history.FFault, Value: v})
		}
		if c.giveUp > 0 && len(waiting) > 1 && rng.Float64() < c.giveUp {
			j := rng.IntN(len(waiting))
			if w := waiting[j]; w != pre {
				ty := history.Fail
				if rng.IntN(4) == 0 {
					ty = history.Info
				}
				emit(w, ty, history.FAcquire, 0, 0, false)
				emit(w, history.Invoke, history.FAcquire, 0, 0, false)
			}
		}
		var h int
		if pre >= 0 {
			h = pre
			pre = -1
			waiting = remove(waiting, h)
		} else {
			j := rng.IntN(len(waiting))
			h = waiting[j]
			waiting = append(waiting[:j], waiting[j+1:]...)
			if c.wakeAll {
				emit(h, history.OK, history.FWakeup, 0, 0, false)
				for _, w := range waiting {
					emit(w, history.OK, history.FWakeup, 0, 0, false)
				}
			} else {
				emit(h, history.OK, history.FWakeup, 0, 0, false)
			}
			token++
			tok := token
			if g == injectAt && c.inject == "token" {
				tok = token - 2 - rng.Int64N(3)
				injectedLine = len(evs) + 1
			}
			emit(h, history.OK, history.FAcquire, tok, 0, false)
		}
		tok := evs[lastGrant(evs, h)].Token
		if c.counter {
			v := counter
			if g == injectAt && c.inject == "lost" && counter > 0 {
				v = counter - 1
				injectedLine = len(evs) + 2
			}
			emit(h, history.Invoke, history.FRead, 0, 0, false)
			emit(h, history.OK, history.FRead, 0, v, true)
			emit(h, history.Invoke, history.FWrite, tok, v+1, true)
			emit(h, history.OK, history.FWrite, 0, 0, false)
			counter = v + 1
		}
		if g == injectAt && c.inject == "overlap" && len(waiting) > 0 {
			pre = waiting[rng.IntN(len(waiting))]
			token++
			injectedLine = len(evs) + 1
			emit(pre, history.OK, history.FAcquire, token, 0, false)
		}
		emit(h, history.Invoke, history.FRelease, 0, 0, false)
		emit(h, history.OK, history.FRelease, 0, 0, false)
		emit(h, history.Invoke, history.FAcquire, 0, 0, false)
		waiting = append(waiting, h)
	}
	for _, w := range waiting { // the run stops: pending acquires are cancelled
		emit(w, history.Fail, history.FAcquire, 0, 0, false)
	}
	for p := range c.procs {
		emit(p, history.OK, FRPCs, 0, int64(c.grants/c.procs*3+p), true)
	}
	if c.counter {
		emit(history.NemesisProcess, history.OK, history.FRead, 0, counter, true)
		evs[len(evs)-1].Lock = ""
	}
	return evs, injectedLine
}

func remove(xs []int, x int) []int {
	for j, y := range xs {
		if y == x {
			return append(xs[:j], xs[j+1:]...)
		}
	}
	return xs
}

// lastGrant is the index of process p's last acquire ok.
func lastGrant(evs []history.Event, p int) int {
	for i := len(evs) - 1; i >= 0; i-- {
		if int(evs[i].Process) == p && evs[i].F == history.FAcquire && evs[i].Type == history.OK {
			return i
		}
	}
	return -1
}
