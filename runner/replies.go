package runner

import (
	"fmt"
	"time"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/chaos"
)

// chaos.CreateReplies: the client's relays read its protocol, through
// the backend's loser (backend.CreateReplies), when the scenario's faults
// need it.
var _ chaos.CreateReplies = (*runner)(nil)

func (r *runner) LoseCreateReplies(i, n int) error {
	c := r.client(i)
	if err := c.needProxies("lose create replies"); err != nil {
		return err
	}
	if c.conn.loser == nil {
		return fmt.Errorf("client %d: its relays read no client protocol: invariant broken", i)
	}
	c.conn.loser.Arm(n)
	return nil
}

func (r *runner) KeepCreateReplies(i int) (int, error) {
	c := r.client(i)
	if c.conn.loser == nil {
		return 0, fmt.Errorf("client %d: its relays read no client protocol: invariant broken", i)
	}
	return c.conn.loser.Disarm(), nil
}

// makeLoser makes the loser the client's relays read each connection
// through (startProxies) when the scenario's faults read the client
// protocol (chaos.Needs.Protocol); it is made once and outlives a
// crash's relays. A backend whose relays cannot read that protocol
// refuses the run before any relay starts (its Deployer should have
// refused the scenario first).
func (c *client) makeLoser() error {
	want := c.r.cfg.Scenario.Needs().Protocol
	if want == "" || c.conn.loser != nil || c.conn.delayer != nil {
		return nil
	}
	if cr, ok := c.r.cfg.Backend.(backend.CreateReplies); ok && cr.Protocol() == want {
		c.conn.loser = cr.NewCreateReplyLoser()
		return nil
	}
	if ar, ok := c.r.cfg.Backend.(backend.AcquireReplies); ok && ar.Protocol() == want {
		c.conn.delayer = ar.NewAcquireReplyDelayer()
		return nil
	}
	return fmt.Errorf("scenario %s: its faults read %s's client protocol, which the %s backend's relays do not", c.r.cfg.Scenario.Name, want, c.r.cfg.Backend.Name())
}

// chaos.AcquireReplies: the client's relays read its protocol, through
// the backend's delayer (backend.AcquireReplies).
var _ chaos.AcquireReplies = (*runner)(nil)

func (r *runner) DelayAcquireReplies(i int, d time.Duration) error {
	c := r.client(i)
	if err := c.needProxies("delay acquire replies"); err != nil {
		return err
	}
	if c.conn.delayer == nil {
		return fmt.Errorf("client %d: its relays read no client protocol: invariant broken", i)
	}
	c.conn.delayer.Delay(d)
	return nil
}

func (r *runner) AcquireRepliesDelayed(i int) (int, error) {
	c := r.client(i)
	if c.conn.delayer == nil {
		return 0, fmt.Errorf("client %d: its relays read no client protocol: invariant broken", i)
	}
	return c.conn.delayer.Delayed(), nil
}
