package zkwire

import (
	"sync"

	"github.com/lockbench/lockbench/relay"
)

// CreateReplyLoser loses the replies to one client's creates at its
// relays (the fault lose-create-reply): the create passes to the
// ensemble, which applies it, and when the reply to one that succeeded
// comes back it is dropped and the connection cut, both sides, at that
// moment — the client never hears, the node exists. Each of the
// client's relays reads its connections through Filter; the arming is
// shared, so the client's next create is struck whichever member it
// talks to.
type CreateReplyLoser struct {
	mu   sync.Mutex
	left int // replies still to lose; < 0: every one until Disarm
	lost int // replies lost since Arm
}

// NewCreateReplyLoser is a loser that loses nothing until armed.
func NewCreateReplyLoser() *CreateReplyLoser { return &CreateReplyLoser{} }

// Arm loses the replies to the next n creates that succeed (n < 0: every
// one) until Disarm.
func (l *CreateReplyLoser) Arm(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.left, l.lost = n, 0
}

// Disarm loses no more and says how many replies were lost since Arm.
func (l *CreateReplyLoser) Disarm() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.left = 0
	return l.lost
}

// claim says whether the reply at hand is to be lost, and counts it.
func (l *CreateReplyLoser) claim() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.left == 0 {
		return false
	}
	if l.left > 0 {
		l.left--
	}
	l.lost++
	return true
}

// Filter reads one relayed connection of the client (relay.SetFilter).
func (l *CreateReplyLoser) Filter() relay.Filter {
	return &connFilter{l: l, creates: map[int32]struct{}{}}
}

// connFilter is one connection's reader: it remembers the xids of the
// creates sent on it until their replies come.
type connFilter struct {
	l       *CreateReplyLoser
	mu      sync.Mutex
	shook   [2]bool // each way's handshake packet has passed
	creates map[int32]struct{}
}

func (c *connFilter) Split(_ relay.Way, buf []byte) (int, error) { return Split(buf) }

// Frame passes every packet but the reply to an armed create. A packet
// it cannot read passes as it is: the fault strikes only what it knows
// to be a create.
func (c *connFilter) Frame(w relay.Way, packet []byte) relay.Verdict {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.shook[w] {
		c.shook[w] = true // the handshake: no header
		return relay.Pass
	}
	if w == relay.Tx {
		if r, err := ParseRequest(packet); err == nil {
			if ok, _ := r.Creates(); ok {
				c.creates[r.Xid] = struct{}{}
			}
		}
		return relay.Pass
	}
	r, err := ParseReply(packet)
	if err != nil {
		return relay.Pass
	}
	if _, ok := c.creates[r.Xid]; !ok {
		return relay.Pass
	}
	delete(c.creates, r.Xid)
	if r.Err == 0 && c.l.claim() {
		return relay.Cut
	}
	return relay.Pass
}
