package zklocks

import (
	"context"
	"fmt"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/verdict"
	"github.com/lockbench/lockbench/zookeeper/zkcluster"
)

// The strategies' registered names.
const (
	QueueName = "zk-queue"
	GoZKName  = "go-zookeeper"
)

// Both are registered Hidden with a Runtime: they need ZooKeeper, which
// lockbench does not bring (make zk-deps), so they stay out of the
// default etcd suite while `lockbench list` shows them with their backend
// and whether ZooKeeper is installed here. The session is the client's
// (OwnLease: no etcd keepalive policy applies); both queue in creation
// order (FIFO).
func init() {
	register(QueueName,
		"ZooKeeper's lock recipe: a protected ephemeral sequential node, watch the predecessor, re-check the own node after each wake; Lost when the session expires or stays suspended past TTL/6; token = the node's creation zxid",
		"ZooKeeper's recipes (zookeeper.apache.org/doc/current/recipes.html#sc_recipes_Locks)",
		func(c *Conn, o locks.Options) (locks.Locker, error) { return NewQueue(c, o) })
	register(GoZKName,
		"github.com/go-zookeeper/zk v1.0.4's zk.Lock as documented: NewLock, Lock, Unlock; no context, no loss signal",
		"go-zookeeper's lock.go",
		func(c *Conn, o locks.Options) (locks.Locker, error) { return NewGoZK(c, o) })
}

// register registers a ZooKeeper strategy made by make over a ZooKeeper
// session.
func register(name, description, origin string, make func(*Conn, locks.Options) (locks.Locker, error)) {
	locks.Register(locks.Strategy{
		Name: name, Description: description, Origin: origin,
		Backend: Backend, Hidden: true, OwnLease: true, Order: verdict.FIFO,
		Runtime: func(context.Context) error { return zkcluster.Available(zkcluster.Options{}) },
		New: func(_ context.Context, conn locks.Conn, opts locks.Options) (locks.Locker, error) {
			c, ok := conn.(*Conn)
			if !ok {
				return nil, fmt.Errorf("a ZooKeeper strategy needs a ZooKeeper session, not %s's", conn.Backend())
			}
			return make(c, opts)
		},
	})
}
