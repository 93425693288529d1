package redisbackend

import (
	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/redis/respwire"
)

// A Redis client's relays read RESP (package respwire), so that
// delay-acquire-replies can hold the reply to each acquire the servers
// applied: a pause between their answers and the client's reading of
// them, which Redlock's validity check is there to catch.
var _ backend.AcquireReplies = Backend{}

// Protocol is Redis's client protocol.
func (Backend) Protocol() string { return chaos.ProtocolRedis }

// NewAcquireReplyDelayer is one client's delayer, over all its relays.
func (Backend) NewAcquireReplyDelayer() backend.AcquireReplyDelayer {
	return respwire.NewAcquireReplyDelayer()
}
