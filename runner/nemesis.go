package runner

import (
	"context"
	"strconv"
	"time"

	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/history"
)

// activeFault is a fault in effect, waiting for its undo.
type activeFault struct {
	undoAt time.Duration // 0: at the end of the run
	undo   chaos.Undo
	value  history.Fault
}

// nemesis runs the fault plan: each step at its time, undone after its
// `for`; every fault still in effect is undone when the run ends. The
// steps timed to a call (triggers) are struck by the clients, and
// handed here to be undone.
func (r *runner) nemesis(ctx context.Context, plan []chaos.PlannedStep) error {
	var pending []*activeFault
	next := 0
	for {
		// The next thing to do: a step, or an undo, whichever is first.
		wake := time.Duration(-1)
		if next < len(plan) {
			wake = plan[next].At
		}
		var due *activeFault
		for _, a := range pending {
			if a.undoAt > 0 && (wake < 0 || a.undoAt < wake) {
				wake, due = a.undoAt, a
			}
		}
		a, ok := r.sleepUnlessStruck(ctx, wake)
		switch {
		case !ok:
		case a != nil:
			pending = append(pending, a)
			continue
		case due != nil:
			r.undo(due)
			pending = remove(pending, due)
			continue
		default:
			if a := r.strike(ctx, plan[next]); a != nil {
				pending = append(pending, a)
			}
			next++
			continue
		}
		break
	}
	if r.triggers != nil {
		r.triggers.close()
		for len(r.triggers.struck) > 0 {
			pending = append(pending, <-r.triggers.struck)
		}
	}
	for _, a := range pending {
		r.undo(a)
	}
	return nil
}

// sleepUnlessStruck waits until wake (run time; < 0: no end) and reports
// true, or returns sooner with a fault a client's call struck (triggers);
// false once ctx ends.
func (r *runner) sleepUnlessStruck(ctx context.Context, wake time.Duration) (*activeFault, bool) {
	var struck chan *activeFault
	if r.triggers != nil {
		struck = r.triggers.struck
	}
	var timer <-chan time.Time
	if wake >= 0 {
		t := time.NewTimer(max(0, wake-time.Duration(r.rec.Now())))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
		return nil, false
	case a := <-struck:
		return a, true
	case <-timer:
		return nil, ctx.Err() == nil
	}
}

// strike injects one step's fault, recording its start and, unless it
// lasts, its end. It returns the fault in effect, or nil when it was
// instantaneous or failed.
func (r *runner) strike(ctx context.Context, st chaos.PlannedStep) *activeFault {
	return r.strikeOn(ctx, st, "")
}

// strikeOn is strike, recording on: the call that struck a step timed
// to one (triggers), "" for the clock.
func (r *runner) strikeOn(ctx context.Context, st chaos.PlannedStep, on string) *activeFault {
	v := history.Fault{Fault: st.Fault.Name(), Target: st.Target.String(), ForNS: int64(st.For), ArgNS: int64(st.Arg), On: on}
	event := func(typ history.Type, err error) {
		r.record(history.Event{Process: history.NemesisProcess, Type: typ, F: history.FFault, Value: history.FaultValue(v), Error: errString(err, "")})
	}
	// Resolve the target now: the leader or the holder is whoever it is at
	// this moment. An unresolved target is recorded as a failed fault.
	target, err := r.resolve(ctx, st)
	if err == nil && st.Fault.Targets() == chaos.ClientTarget && r.client(target) == nil {
		return nil // another worker's client: that worker strikes it
	}
	if err == nil {
		v.Resolved = describe(st.Fault.Targets(), target)
	}
	event(history.Invoke, nil)
	if err != nil {
		event(history.Fail, err)
		return nil
	}
	u, err := st.Fault.Inject(ctx, r, target, st.Arg)
	switch {
	case err != nil:
		event(history.Fail, err)
		return nil
	case u == nil: // instantaneous
		event(history.OK, nil)
		return nil
	}
	a := &activeFault{undo: u, value: v}
	if st.For > 0 {
		a.undoAt = st.At + st.For
	}
	return a
}

// undo ends a fault in effect, with its own time bound: the run may have
// ended. A fault that could not be undone ends unknown (info).
func (r *runner) undo(a *activeFault) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	typ, msg := history.OK, ""
	if err := a.undo(ctx); err != nil {
		typ, msg = history.Info, err.Error()
	}
	r.record(history.Event{Process: history.NemesisProcess, Type: typ, F: history.FFault, Value: history.FaultValue(a.value), Error: msg})
}

// resolveWait bounds how long a fault waits for its target to exist (a
// holder between grants, enough waiters).
const resolveWait = 2 * time.Second

// resolve finds the step's target, waiting up to resolveWait for a client
// target to appear: a holder is only a holder while inside its hold.
func (r *runner) resolve(ctx context.Context, st chaos.PlannedStep) (int, error) {
	deadline := time.Now().Add(resolveWait)
	for {
		t, err := chaos.Resolve(st.Target, st.Fault.Targets(), r, st.Draw)
		if err == nil || st.Fault.Targets() != chaos.ClientTarget || time.Now().After(deadline) {
			return t, err
		}
		if !Sleep(ctx, 5*time.Millisecond) {
			return -1, err
		}
	}
}

// remove drops x from xs.
func remove[T comparable](xs []T, x T) []T {
	for i, y := range xs {
		if y == x {
			return append(xs[:i], xs[i+1:]...)
		}
	}
	return xs
}

// describe names the resolved target for the history, next to the
// target as written (holder → client:3).
func describe(class chaos.TargetClass, i int) string {
	switch {
	case i < 0:
		return ""
	case class == chaos.MemberTarget:
		return "member:" + strconv.Itoa(i)
	}
	return "client:" + strconv.Itoa(i)
}
