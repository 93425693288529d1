package chaos

import (
	"context"
	"fmt"
	"time"
)

// The reply faults: a client's request reaches the server and is
// applied, and its reply never reaches the client, because the
// connection is lost at that moment (ZOOKEEPER-1262: a create whose reply
// was lost and that the client makes again leaves a node nobody deletes).
// The client's relays read its protocol to find the reply, so a fault
// names the protocol it reads (Needs.Protocol) and only a backend whose
// clients speak it takes the fault. Losing a connection costs a correct
// client a reconnection within its session, which a client fault's
// excuse (CostLease) covers.
func init() {
	zk := Needs{ClientProxy: true, Protocol: ProtocolZooKeeper}
	register(spec{"lose-create-reply", ClientTarget, zk, CostLease}, loseCreateReply)
	register(spec{"lose-create-replies", ClientTarget, zk, CostLease}, loseCreateReplies)
}

// ProtocolZooKeeper is ZooKeeper's client protocol (Needs.Protocol).
const ProtocolZooKeeper = "zookeeper"

// CreateReplies are faults on the replies to a client's creates, done at
// its relays.
type CreateReplies interface {
	// LoseCreateReplies arms client i's relays: the reply to each of its
	// next n creates that succeed (n < 0: every one) is dropped and the
	// connection it came on cut, both sides, as it arrives.
	LoseCreateReplies(i, n int) error
	// KeepCreateReplies disarms them and says how many replies were lost
	// since they were armed.
	KeepCreateReplies(i int) (int, error)
}

// loseCreateReply: the reply to the client's next create that succeeds
// is lost with its connection. The step lasts until then, at most its
// `for` (else the run); its undo fails when no create came meanwhile, so
// the history says whether the fault struck.
func loseCreateReply(_ context.Context, w CreateReplies, t int, _ time.Duration) (Undo, error) {
	return armReplies(w, t, 1)
}

// loseCreateReplies: the reply to every create of the client that
// succeeds while the step lasts is lost with its connection, so that a
// client that makes its create again loses that reply too.
func loseCreateReplies(_ context.Context, w CreateReplies, t int, _ time.Duration) (Undo, error) {
	return armReplies(w, t, -1)
}

func armReplies(w CreateReplies, t, n int) (Undo, error) {
	if err := w.LoseCreateReplies(t, n); err != nil {
		return nil, err
	}
	return func(context.Context) error {
		lost, err := w.KeepCreateReplies(t)
		if err != nil {
			return err
		}
		if lost == 0 {
			return fmt.Errorf("client %d made no create while armed: no reply was lost", t)
		}
		return nil
	}, nil
}
