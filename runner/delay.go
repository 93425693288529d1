package runner

import (
	"context"
	"time"

	"github.com/lockbench/lockbench/locks"
)

// delayedFactory wraps a strategy's Factory so that each Locker it makes
// waits d after every grant before returning it (Config.GrantDelay). The
// strategy itself is untouched: the delay is the runner's, test-only.
func delayedFactory(f locks.Factory, d time.Duration) locks.Factory {
	return func(ctx context.Context, conn locks.Conn, o locks.Options) (locks.Locker, error) {
		l, err := f(ctx, conn, o)
		if err != nil {
			return nil, err
		}
		return &delayedLocker{Locker: l, d: d}, nil
	}
}

// delayedLocker is a Locker whose grants arrive d late: the lock is held
// during the delay, so acquire and handoff latency rise by d and
// throughput falls, as a slower strategy's would.
type delayedLocker struct {
	locks.Locker
	d time.Duration
}

// Lock acquires through the wrapped Locker, then waits d (or until ctx
// ends: the grant is returned either way, since the lock is held).
func (l *delayedLocker) Lock(ctx context.Context) (*locks.Grant, error) {
	g, err := l.Locker.Lock(ctx)
	if err != nil {
		return g, err
	}
	t := time.NewTimer(l.d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return g, nil
}
