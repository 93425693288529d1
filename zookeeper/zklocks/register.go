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
	// UnprotectedQueueName is a known-buggy lock, kept on purpose (as
	// etcd's queue-naive is): zk-queue without the protected create.
	UnprotectedQueueName = "zk-queue-unprotected"
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
		"ZooKeeper's recipes (zookeeper.apache.org/doc/current/recipes.html#sc_recipes_Locks)", nil,
		func(c *Conn, o locks.Options) (locks.Locker, error) { return NewQueue(c, o) })
	register(UnprotectedQueueName,
		"zk-queue with a plain ephemeral sequential create, made again after a connection lost before its answer (known-buggy: a lost answer leaves an orphan node that stalls the queue while its session lives, ZOOKEEPER-1262)",
		"lockbench (a mutant of zk-queue)", nil,
		func(c *Conn, o locks.Options) (locks.Locker, error) { return NewUnprotectedQueue(c, o) })
	register(GoZKName,
		"github.com/go-zookeeper/zk v1.0.4's zk.Lock as documented: NewLock, Lock, Unlock; no context, no loss signal",
		"go-zookeeper's lock.go", goZKExpect,
		func(c *Conn, o locks.Options) (locks.Locker, error) { return NewGoZK(c, o) })
}

// goZKExpect is what zk.Lock is known to do in the built-in scenarios
// (docs/backends.md), over each scenario's own expectations.
var goZKExpect = map[string]map[string]verdict.Verdict{
	// The isolated holder's session expires; its Unlock then fails
	// (zk: node does not exist) and zk.Lock keeps the node's path, so
	// every later Lock of that client fails at once with "trying to
	// acquire a lock twice": the client never takes the lock again.
	"client-isolation": {verdict.Progress: verdict.Fail},
	// A release whose connection went with the crashed leader fails
	// (zk.Lock's Delete), and leaves zk.Lock wedged as above, while the
	// holder's session, moved to another member, keeps its node: the
	// others wait behind it and the client's next Locks are refused.
	// Whether the holder was on the crashed member is a race (progress
	// failed 7 of 10 seeds, docs/backends.md).
	"leader-kill": {verdict.Progress: verdict.Any},
	// zk.Lock takes no context: the waits the run's end cuts are of
	// unknown outcome (the library waits on), and with the two grants of
	// this scenario they outnumber what progress allows.
	"waiter-crash": {verdict.Progress: verdict.Any},
}

// register registers a ZooKeeper strategy made by make over a ZooKeeper
// session.
func register(name, description, origin string, expect map[string]map[string]verdict.Verdict, make func(*Conn, locks.Options) (locks.Locker, error)) {
	locks.Register(locks.Strategy{
		Name: name, Description: description, Origin: origin, Expect: expect,
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
