package backend

import (
	"time"

	"github.com/lockbench/lockbench/relay"
)

// CreateReplies is a Backend whose clients' protocol lockbench's client
// relays can read frame by frame (chaos.Needs.Protocol), so that a fault
// can lose the reply to a create the server applied (lose-create-reply).
// Optional: the runner asks for it only when a scenario's faults read
// the protocol, and refuses the run when the backend is not one.
type CreateReplies interface {
	// Protocol is the client protocol the relays read, as the faults
	// name it (chaos.Needs.Protocol).
	Protocol() string
	// NewCreateReplyLoser makes what loses one client's create replies:
	// one per client, which all its relays read their connections
	// through.
	NewCreateReplyLoser() CreateReplyLoser
}

// CreateReplyLoser loses the replies to one client's creates at its
// relays: the create reaches the server, and the reply to one that
// succeeded is dropped and its connection cut, both sides.
type CreateReplyLoser interface {
	// Filter reads one relayed connection (relay.Relay.SetFilter).
	Filter() relay.Filter
	// Arm loses the replies to the next n creates that succeed (n < 0:
	// every one) until Disarm.
	Arm(n int)
	// Disarm loses no more and says how many replies were lost since
	// Arm.
	Disarm() int
}

// AcquireReplies is a Backend whose clients' protocol the relays can
// read frame by frame (chaos.Needs.Protocol), so that a fault can hold
// the reply to an acquire the server applied (delay-acquire-replies).
// Optional, as CreateReplies is.
type AcquireReplies interface {
	// Protocol is the client protocol the relays read, as the faults
	// name it (chaos.Needs.Protocol).
	Protocol() string
	// NewAcquireReplyDelayer makes what holds one client's acquire
	// replies: one per client, which all its relays read their
	// connections through.
	NewAcquireReplyDelayer() AcquireReplyDelayer
}

// AcquireReplyDelayer holds the replies to one client's acquires at its
// relays: the request reaches the server at once, its reply reaches the
// client late.
type AcquireReplyDelayer interface {
	// Filter reads one relayed connection (relay.Relay.SetFilter).
	Filter() relay.Filter
	// Delay holds each acquire's reply for d from now on; 0 ends it and
	// lets every held reply go.
	Delay(d time.Duration)
	// Delayed says how many replies were held since Delay armed it.
	Delayed() int
}
