package zkbackend

import (
	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/zookeeper/zkwire"
)

// A ZooKeeper client's relays read its protocol (package zkwire), so
// that lose-create-reply can lose the reply to one create the ensemble
// applied, as ZOOKEEPER-1262's connection loss did.
var _ backend.CreateReplies = Backend{}

// Protocol is ZooKeeper's client protocol.
func (Backend) Protocol() string { return chaos.ProtocolZooKeeper }

// NewCreateReplyLoser is one client's loser, over all its relays.
func (Backend) NewCreateReplyLoser() backend.CreateReplyLoser {
	return zkwire.NewCreateReplyLoser()
}
