package runner

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/lockbench/lockbench/chaos"
)

// triggers are the steps timed to a call (chaos.Step.On): armed from
// their At, each struck once, by the first call that matches, in the
// calling client's goroutine, so that the call's requests meet it. The
// nemesis undoes what they struck (struck), and at the run's end closes
// them and waits for the strikes under way.
type triggers struct {
	mu     sync.Mutex
	armed  []chaos.PlannedStep // not struck yet, in At order
	closed bool
	busy   sync.WaitGroup    // strikes under way
	struck chan *activeFault // faults in effect, for the nemesis to undo
}

// newTriggers takes the steps timed to a call out of plan, and returns
// the rest (the steps the clock strikes) with them.
func newTriggers(plan []chaos.PlannedStep) ([]chaos.PlannedStep, *triggers) {
	t := &triggers{}
	var timed []chaos.PlannedStep
	for _, st := range plan {
		if st.On == "" {
			timed = append(timed, st)
		} else {
			t.armed = append(t.armed, st)
		}
	}
	t.struck = make(chan *activeFault, len(t.armed))
	return timed, t
}

// take disarms and returns the first armed step that client id's call
// strikes now: its At passed, its On is call, and, for a fault that
// takes a client, its target names id at this moment (w resolves it).
func (t *triggers) take(w chaos.Positions, id int, call string, now time.Duration) (chaos.PlannedStep, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return chaos.PlannedStep{}, false
	}
	for i, st := range t.armed {
		if st.At > now || st.On != call {
			continue
		}
		if st.Fault.Targets() == chaos.ClientTarget {
			if c, err := chaos.Resolve(st.Target, chaos.ClientTarget, w, st.Draw); err != nil || c != id {
				continue
			}
		}
		t.armed = append(t.armed[:i:i], t.armed[i+1:]...)
		t.busy.Add(1)
		return st, true
	}
	return chaos.PlannedStep{}, false
}

// close stops every later call from striking and waits for the strikes
// under way; what they struck is then in struck.
func (t *triggers) close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.busy.Wait()
}

// fire strikes the step, if any, that client id's call (chaos.OnAcquire,
// chaos.OnRelease) triggers, and returns once the fault is in place or
// ctx (the client's) ends: a fault may crash the very client that
// struck it. The fault is undone by the nemesis, For after it struck.
func (r *runner) fire(ctx context.Context, id int, call string) {
	if r.triggers == nil {
		return
	}
	st, ok := r.triggers.take(r, id, call, time.Duration(r.rec.Now()))
	if !ok {
		return
	}
	done := make(chan struct{})
	go func() {
		defer r.triggers.busy.Done()
		defer close(done)
		a := r.strikeOn(r.life, st, call+" client:"+strconv.Itoa(id))
		if a != nil && st.For > 0 {
			a.undoAt = time.Duration(r.rec.Now()) + st.For
		}
		if a != nil {
			r.triggers.struck <- a // room for every armed step
		}
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
