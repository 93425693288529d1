package chaos

import (
	"context"
	"fmt"
	"time"
)

// clock-jump: a member's wall clock jumps forward (an operator's date
// -s, an NTP step, a VM resumed on another host). A store that keeps its
// keys' expiry as a wall-clock time (Redis) expires at once every key
// with less than the jump left, on that member alone: Redlock's critics'
// first failure (Kleppmann, "How to do distributed locking", 2016). A
// store whose leases run on a monotonic clock cannot be made to see it
// (Needs.Clock), and refuses the fault. Undone (after the step's `for`),
// the clock steps back to the machine's, as NTP would set it.
func init() {
	register(spec{"clock-jump", MemberTarget, Needs{Members: true, Clock: true, Arg: ArgBy}, CostElection}, clockJump)
}

// ArgBy is the step field of a fault that moves something by an amount:
// how far clock-jump moves the member's clock.
const ArgBy = "by"

// Clocks are faults of the members' wall clocks; the machine's own is
// never touched.
type Clocks interface {
	// JumpClock makes member i's wall clock read by ahead of the
	// machine's from now on; 0 sets it back to the machine's.
	JumpClock(i int, by time.Duration) error
}

func clockJump(_ context.Context, w Clocks, t int, by time.Duration) (Undo, error) {
	if by <= 0 {
		return nil, fmt.Errorf("clock-jump of member %d: by %s: must be >0", t, by)
	}
	if err := w.JumpClock(t, by); err != nil {
		return nil, err
	}
	return func(context.Context) error { return w.JumpClock(t, 0) }, nil
}
