package backend

import "github.com/lockbench/lockbench/relay"

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
