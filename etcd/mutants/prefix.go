package mutants

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/locks"
)

// A mutant of the key-prefix class, which shows only with several lock
// names where one name is a string prefix of another (job1 and job10:
// scenarios' `locks: N` from 10 on, the many-locks built-in).
const (
	// unlockPrefix releases with a range delete on the bare lock key,
	// clientv3.WithPrefix() on ".../locks/job1" without the trailing "/",
	// "to clear the lock and anything under it": the range also holds
	// ".../locks/job10" … job19, so releasing job1 removes the keys other
	// clients hold for job10–job19 (symmetry: a held key deleted by
	// another client; exclusion: a job10 waiter then takes job10 while its
	// holder still believes). With one name nothing shares the range, and
	// the mutant looks correct; locktest's SiblingName ("lock0" held
	// beside "lock") catches it.
	unlockPrefix bug = "unlock-prefix"
)

// unlockByPrefix is unlockPrefix's release: the compare guards the
// holder's own key, the delete then takes the whole bare-prefix range.
func (l *locker) unlockByPrefix(ctx context.Context, g *locks.Grant) error {
	cmp := clientv3.Compare(clientv3.CreateRevision(g.Key), "=", g.Token)
	if _, err := l.cli.Txn(ctx).If(cmp).Then(clientv3.OpDelete(g.Key, clientv3.WithPrefix())).Commit(); err != nil {
		l.dropLease(ctx, clientv3.LeaseID(g.Lease))
		return fmt.Errorf("unlock %s: %w", g.Key, err)
	}
	return nil
}
