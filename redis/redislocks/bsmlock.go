package redislocks

import (
	"context"
	"errors"
	"fmt"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/locks"
)

// Bsm is bsm/redislock's Lock (BsmVersion) used as its README shows:
// redislock.New(client).Obtain(ctx, key, ttl, &redislock.Options{
// RetryStrategy: redislock.LinearBackoff(...)}), lock.Refresh, and
// lock.Release, on one client that follows the Sentinels' primary (as
// redis-setnx's).
//
// What the library leaves to its user is written here as a user writes
// it: Lock's loop until the caller's context ends (Obtain gives up at
// its context's end, or after one TTL when that context has no
// deadline, and at once on a Redis error), and the goroutine that
// refreshes the key every TTL/3 and tells the holder when a refresh
// fails. The library offers no fencing token (Grant.Token 0): its
// "token" is the key's random value.
type Bsm struct {
	client *redislock.Client
	opts   Options
	key    string
	// lock is the held grant's, for Unlock (its refresher has its own).
	lock *redislock.Lock
	grants
}

// NewBsm makes one client's Bsm over cli (which it does not close).
func NewBsm(cli *redis.Client, opts Options) (*Bsm, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	return &Bsm{client: redislock.New(cli), opts: opts, key: opts.Key(), grants: newGrants()}, nil
}

// Lock asks the library for the lock until it grants or ctx ends.
func (l *Bsm) Lock(ctx context.Context) (*locks.Grant, error) {
	// Step 1: the retry strategy the README shows: a fixed backoff
	// between the library's own tries (the run's retry delay).
	opts := &redislock.Options{RetryStrategy: redislock.LinearBackoff(l.opts.RetryDelay)}
	for {
		// Step 2: the library's obtain script: SET key value NX PX ttl,
		// tried every backoff until ctx ends (or one TTL passes, when
		// ctx has no deadline).
		lock, err := l.client.Obtain(ctx, l.key, l.opts.TTL, opts)
		if err == nil {
			l.lock = lock
			h := l.begin(lock.Token(), func(h *holding) { l.refresh(h, lock) })
			return &locks.Grant{Key: l.key, Lost: h.lost}, nil
		}
		// Step 3 (the user's loop, not the library's): not obtained
		// (ErrNotObtained, or Obtain's own one-TTL deadline) or a Redis
		// error (the primary down during a failover): ask again while
		// the caller still waits, after a retry delay on an error so
		// that a dead primary is not asked in a spin.
		pause := l.opts.RetryDelay
		if errors.Is(err, redislock.ErrNotObtained) || errors.Is(err, context.DeadlineExceeded) {
			pause = 0 // the library's tries waited already
		}
		if err := l.retry(ctx, "redislock", pause, err); err != nil {
			return nil, err
		}
	}
}

// refresh is the user's renewal goroutine: Refresh every TTL/3 (the
// library's compare-and-PEXPIRE script), each within the request
// timeout; the grant is lost as soon as one fails, not ours any more
// (ErrNotObtained) or unanswered.
func (l *Bsm) refresh(h *holding, lock *redislock.Lock) {
	h.renewEvery(l.opts.TTL/3, func() (lost bool) {
		ctx, cancel := context.WithTimeout(context.Background(), l.opts.RequestTimeout)
		defer cancel()
		return lock.Refresh(ctx, l.opts.TTL, nil) != nil
	})
}

// Unlock stops the refresher, then Release: the library's
// compare-and-delete script. ErrNotHeld when the key no longer held the
// grant's value (ErrLockNotHeld); the error when the primary did not
// answer.
func (l *Bsm) Unlock(ctx context.Context, _ *locks.Grant) error {
	if _, ok := l.end(); !ok {
		return fmt.Errorf("unlock %s: %w", l.key, ErrNotHeld)
	}
	lock := l.lock
	l.lock = nil
	ctx, cancel := context.WithTimeout(ctx, l.opts.RequestTimeout)
	defer cancel()
	switch err := lock.Release(ctx); {
	case errors.Is(err, redislock.ErrLockNotHeld):
		return fmt.Errorf("unlock %s: %w", l.key, ErrNotHeld)
	case err != nil:
		return fmt.Errorf("unlock %s: %w", l.key, err)
	}
	return nil
}

// Close stops the refresher of a grant still held (its key then expires
// within a TTL); the client is the caller's.
func (l *Bsm) Close(context.Context) error {
	l.end()
	l.lock = nil
	return nil
}
