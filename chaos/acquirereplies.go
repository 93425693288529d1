package chaos

import (
	"context"
	"fmt"
	"time"
)

// delay-acquire-replies: the client's requests that take a lock's key
// reach the servers at once and are applied, and their replies reach
// the client `delay` late (default DefaultDelay), read at its relays in
// the Redis protocol (Needs.Protocol). From the client's side it is a
// pause between the servers' answers and its own reading of them:
// Redlock's validity check (TTL − elapsed − drift) is there to reject
// such a grant, which pause-client, after the grant, does not reach.
// Only the acquires are slower while it lasts (CostSlowdown).
func init() {
	register(spec{"delay-acquire-replies", ClientTarget, Needs{ClientProxy: true, Protocol: ProtocolRedis, Arg: ArgDelay}, CostSlowdown}, delayAcquireReplies)
}

// ProtocolRedis is Redis's client protocol, RESP (Needs.Protocol).
const ProtocolRedis = "redis"

// AcquireReplies are faults on the replies to a client's acquires, done
// at its relays.
type AcquireReplies interface {
	// DelayAcquireReplies holds the reply to each acquire client i sends
	// from now on for d before the client gets it; 0 ends it.
	DelayAcquireReplies(i int, d time.Duration) error
	// AcquireRepliesDelayed says how many replies were held since
	// DelayAcquireReplies armed it.
	AcquireRepliesDelayed(i int) (int, error)
}

// delayAcquireReplies' undo fails when no acquire's reply was held, so
// the history says whether the fault struck.
func delayAcquireReplies(_ context.Context, w AcquireReplies, t int, d time.Duration) (Undo, error) {
	if d <= 0 {
		d = DefaultDelay
	}
	if err := w.DelayAcquireReplies(t, d); err != nil {
		return nil, err
	}
	return func(context.Context) error {
		n, err := w.AcquireRepliesDelayed(t)
		if err != nil {
			return err
		}
		if err := w.DelayAcquireReplies(t, 0); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("client %d made no acquire while armed: no reply was held", t)
		}
		return nil
	}, nil
}
