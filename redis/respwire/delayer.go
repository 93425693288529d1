package respwire

import (
	"sync"
	"time"

	"github.com/lockbench/lockbench/relay"
)

// AcquireReplyDelayer holds the replies to one client's acquires at its
// relays (the fault delay-acquire-replies): each request that takes a
// lock's key (Acquires) reaches the server at once and is applied, and
// its reply, when it comes, is held for the delay before the client
// gets it — from the client's side, as if it had paused between the
// servers' answers and its own reading of them. Every reply behind it on
// the connection waits too (RESP answers in order). Each of the client's
// relays reads its connections through Filter; the arming is shared.
type AcquireReplyDelayer struct {
	mu      sync.Mutex
	delay   time.Duration
	delayed int
	// stop ends every hold at once (Delay(0)): nothing waits out a
	// fault that has ended.
	stop chan struct{}
}

// NewAcquireReplyDelayer is a delayer that holds nothing until armed.
func NewAcquireReplyDelayer() *AcquireReplyDelayer {
	return &AcquireReplyDelayer{stop: make(chan struct{})}
}

// Delay holds the reply to each acquire sent from now on for d; 0 holds
// no more and lets every held reply go.
func (a *AcquireReplyDelayer) Delay(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if d <= 0 {
		if a.delay > 0 {
			close(a.stop)
			a.stop = make(chan struct{})
		}
		a.delay = 0
		return
	}
	a.delay, a.delayed = d, 0
}

// Delayed says how many replies were held since Delay armed it.
func (a *AcquireReplyDelayer) Delayed() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.delayed
}

// armed is the hold for an acquire sent now (0: none), and what ends it
// early.
func (a *AcquireReplyDelayer) armed() (time.Duration, chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.delay, a.stop
}

// Filter reads one relayed connection of the client (relay.SetFilter).
func (a *AcquireReplyDelayer) Filter() relay.Filter { return &connFilter{a: a} }

// hold is what a request's reply waits for.
type hold struct {
	d    time.Duration
	stop chan struct{}
}

// connFilter is one connection's reader: a queue of what each request
// sent on it asks of its reply, in order, since RESP answers in order.
type connFilter struct {
	a       *AcquireReplyDelayer
	mu      sync.Mutex
	pending []hold
}

func (c *connFilter) Split(_ relay.Way, buf []byte) (int, error) { return Split(buf) }

// Frame passes every frame; the reply to an armed acquire after its
// hold. A push (RESP3's out-of-band '>') answers no request. A request
// it cannot read gets no hold.
func (c *connFilter) Frame(w relay.Way, frame []byte) relay.Verdict {
	if w == relay.Tx {
		var h hold
		if args, err := Command(frame); err == nil && Acquires(args) {
			h.d, h.stop = c.a.armed()
		}
		c.mu.Lock()
		c.pending = append(c.pending, h)
		c.mu.Unlock()
		return relay.Pass
	}
	if len(frame) > 0 && frame[0] == '>' {
		return relay.Pass
	}
	c.mu.Lock()
	var h hold
	if len(c.pending) > 0 {
		h, c.pending = c.pending[0], c.pending[1:]
	}
	c.mu.Unlock()
	if h.d > 0 {
		c.a.mu.Lock()
		c.a.delayed++
		c.a.mu.Unlock()
		t := time.NewTimer(h.d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-h.stop:
		}
	}
	return relay.Pass
}
