package redislocks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/locks"
)

// Redsync is go-redsync/redsync's Mutex (RedsyncVersion) used as its
// README shows: one pool per instance, rs.NewMutex(key,
// redsync.WithExpiry(ttl)), LockContext, ExtendContext, UnlockContext.
// Over several independent primaries it is the library's Redlock; over
// one (redsync-single) a single-instance lock.
//
// What the library leaves to its user is written here as a user writes
// it: Lock's loop until the caller's context ends (LockContext gives up
// after its 32 tries), and the goroutine that extends the key every
// TTL/3 and tells the holder when an extension fails. The library offers
// no fencing token (Grant.Token 0).
type Redsync struct {
	rs   *redsync.Redsync
	opts Options
	key  string
	// mutex is the held grant's, for Unlock (its extender has its own).
	mutex *redsync.Mutex
	grants
}

// NewRedsync makes one client's Redsync over one client per instance
// (which it does not close).
func NewRedsync(clis []*redis.Client, opts Options) (*Redsync, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if len(clis) == 0 {
		return nil, fmt.Errorf("redsync over no instance: want at least one")
	}
	pools := make([]redsyncredis.Pool, len(clis))
	for i, cli := range clis {
		pools[i] = goredis.NewPool(cli)
	}
	return &Redsync{rs: redsync.New(pools...), opts: opts, key: opts.Key(), grants: newGrants()}, nil
}

// Lock asks the library for the lock until it grants or ctx ends.
func (l *Redsync) Lock(ctx context.Context) (*locks.Grant, error) {
	// Step 1: a mutex per grant, with the run's TTL as its expiry (the
	// library's other defaults kept: 32 tries 50–250 ms apart, drift
	// factor 0.01, each request bounded by 5 % of the expiry).
	m := l.rs.NewMutex(l.key, redsync.WithExpiry(l.opts.TTL))
	for {
		// Step 2: the library's Redlock attempt: SET NX PX on every
		// instance, held with a majority within expiry − elapsed − drift.
		err := m.LockContext(ctx)
		if err == nil {
			l.mutex = m
			h := l.begin(m.Value(), func(h *holding) { l.extendRedsync(h, m) })
			return &locks.Grant{Key: l.key, Lost: h.lost}, nil
		}
		// Step 3 (the user's loop, not the library's): LockContext gave
		// up after its tries (ErrFailed, ErrTaken) or met an instance's
		// error; ask again while the caller still waits, after a retry
		// delay on an instance's error. The library released what the
		// failed attempt set.
		var taken *redsync.ErrTaken
		pause := l.opts.RetryDelay
		if errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) {
			pause = 0 // the library's tries waited already
		}
		if err := l.retry(ctx, "redsync", pause, err); err != nil {
			return nil, err
		}
	}
}

// extendRedsync is the user's renewal goroutine: ExtendContext every
// TTL/3, bounded by the key's validity (Mutex.Until); the grant is lost
// when an extension fails (no majority renewed, an error, or the validity
// left after it was gone) or the validity passed before one succeeded.
func (l *Redsync) extendRedsync(h *holding, m *redsync.Mutex) {
	h.renewEvery(l.opts.TTL/3, func() (lost bool) {
		// Step 1: the key's validity has passed: nothing to extend.
		until := m.Until()
		if !time.Now().Before(until) {
			return true
		}
		// Step 2: extend on every instance before the validity ends.
		ctx, cancel := context.WithDeadline(context.Background(), until)
		defer cancel()
		ok, err := m.ExtendContext(ctx)
		return !ok || err != nil
	})
}

// Unlock stops the extender, then UnlockContext: compare-and-delete on
// every instance. ErrNotHeld when fewer than a majority deleted the key
// and every instance answered; an instance's error when one did not.
func (l *Redsync) Unlock(ctx context.Context, _ *locks.Grant) error {
	if _, ok := l.end(); !ok {
		return fmt.Errorf("unlock %s: %w", l.key, ErrNotHeld)
	}
	m := l.mutex
	l.mutex = nil
	ctx, cancel := context.WithTimeout(ctx, l.opts.RequestTimeout)
	defer cancel()
	ok, err := m.UnlockContext(ctx)
	var unanswered *redsync.RedisError
	switch {
	case ok:
		return nil
	case errors.As(err, &unanswered):
		// An instance did not answer: whether it still has the key is
		// unknown.
		return fmt.Errorf("unlock %s: %w", l.key, err)
	}
	return fmt.Errorf("unlock %s: %w (%v)", l.key, ErrNotHeld, err)
}

// Close stops the extender of a grant still held (its key then expires
// within a TTL); the clients are the caller's.
func (l *Redsync) Close(context.Context) error {
	l.end()
	l.mutex = nil
	return nil
}
