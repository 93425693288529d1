package etcdlocks

import (
	"context"
	"fmt"

	"github.com/lockbench/lockbench/locks"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// election-exits is concurrency.Election used as etcd's own examples use
// it: a Campaign error ends the program (log.Fatal), which neither
// resigns nor closes its Session, and a supervisor starts it again with a
// new Session. Campaign (v3.7.3) deletes its key only when its context is
// cancelled; on any other error, such as its watch being compacted, the
// key stays under the Session's lease (etcd #21128). Once it is the oldest
// key, every other candidate waits for it, that is until the dead
// program's lease runs out. Registered to reproduce that (make
// repro-etcd-21128); the election strategy revokes its lease on the error
// instead.
func init() {
	Register(locks.Strategy{
		Name:        "election-exits",
		Description: "election whose program exits on a Campaign error (no Resign, no Close: its lease lapses by itself) and restarts with a new Session; registered to reproduce etcd #21128 (make repro-etcd-21128), hidden from the default suite",
		Origin:      "etcd #21128 (docs/scenarios.md)",
		OwnLease:    true,
		Hidden:      true,
	}, func(ctx context.Context, cli *clientv3.Client, opts Options) (locks.Locker, error) {
		l, err := newElection(ctx, cli, opts)
		if err != nil {
			return nil, err
		}
		l.(*electionLocker).exits = true
		return l, nil
	})
}

// exit ends the Session s the way a process exit does after Campaign
// failed with err: its keepalive stops and its lease is not revoked, so
// whatever key Campaign left expires with the lease, a TTL later. The
// next Lock is the restarted program's, on a new Session.
func (l *electionLocker) exit(s *concurrency.Session, err error) error {
	s.Orphan()
	l.sess, l.held = nil, nil
	return notAcquired(fmt.Errorf("campaign: %w (the program exits; its key is left to its lease)", err))
}
