package zklocks

import (
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/lockbench/lockbench/locks"
)

// NewUnprotectedQueue is zk-queue-unprotected, a lock that is wrong on
// purpose: zk-queue with a plain ephemeral sequential create that is made
// again when the connection is lost before its answer. That create may
// have been applied (ZOOKEEPER-1262): its node, ephemeral to a session
// that lives on, stands in the queue ahead of the one made again and is
// nobody's, so the client waits behind its own orphan, and every client
// queued later waits behind it too, for as long as the session lives.
// The recipe's protected create (a GUID in the name, looked up after a
// lost answer) is the fix zk-queue has.
func NewUnprotectedQueue(conn *Conn, opts locks.Options) (*Queue, error) {
	q, err := NewQueue(conn, opts)
	if err != nil {
		return nil, err
	}
	q.create = createRetrying
	return q, nil
}

// createRetrying makes a plain ephemeral sequential node, and makes it
// again (up to three times in all) when the connection was lost before
// the answer, as go-zookeeper's protected create does but without
// looking for the node the lost attempt may have made.
func createRetrying(zc *zk.Conn, prefix string) (string, error) {
	var err error
	for range 3 {
		var node string
		node, err = zc.Create(prefix, nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if !errors.Is(err, zk.ErrConnectionClosed) {
			return node, err
		}
	}
	return "", err
}
