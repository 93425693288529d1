package redislocks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/locks"
)

// acquireScript is SET key value NX PX ttl with a counter beside the key,
// INCRed on every grant for a token. A value already ours (an acquire
// whose answer was lost, retried) is granted again with a new token.
var acquireScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return redis.call('INCR', KEYS[2])
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0`)

// setScript is acquireScript without the counter, for a lock that offers
// no token (Redlock): 1 set (or already ours), 0 held by another.
var setScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
return 0`)

// extendScript renews the key's expiry only while it still holds our
// value (compare-and-expire): 1 renewed, 0 not ours.
var extendScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)

// releaseScript deletes the key only while it still holds our value
// (compare-and-delete), so that a holder whose key expired never removes
// its successor's: 1 deleted, 0 not ours.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)

// ErrNotHeld is Unlock's error when the key no longer held the grant's
// value: it expired, or the server that had it lost it (a failover).
var ErrNotHeld = errors.New("the lock key no longer holds this grant's value")

// SetNX is the canonical single-instance Redis lock (`SET key value NX PX
// ttl`, released and extended by compare-and-delete scripts) over one
// client, which follows the Sentinels' primary through failovers.
//
// Its token is a counter INCRed in the acquire script on the same server.
// It does not fence across a failover: the promoted replica may not have
// the last INCRs, and hands out a token already given (docs/redis.md).
type SetNX struct {
	cli   redis.UniversalClient
	opts  Options
	key   string
	fence string
	grants
}

// NewSetNX makes one client's SetNX over cli (which it does not close).
func NewSetNX(cli redis.UniversalClient, opts Options) (*SetNX, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	return &SetNX{cli: cli, opts: opts, key: opts.Key(), fence: opts.TokenKey(), grants: newGrants()}, nil
}

// Lock polls the acquire script every RetryDelay (± half, jittered) until
// it grants or ctx ends.
func (l *SetNX) Lock(ctx context.Context) (*locks.Grant, error) {
	value := l.nextValue()
	unsure := false
	for {
		// Step 1: SET NX PX and INCR the token, in one script. The key's
		// TTL runs from no earlier than now, so the loss clock does too.
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, l.opts.RequestTimeout)
		token, err := acquireScript.Run(rctx, l.cli, []string{l.key, l.fence}, value, l.opts.TTL.Milliseconds()).Int64()
		cancel()
		switch {
		case err == nil && token > 0:
			h := l.begin(value, func(h *holding) { l.extend(h, sent) })
			return &locks.Grant{Key: l.key, Token: token, Lost: h.lost}, nil
		case err != nil:
			// The script may have run: until a release confirms it did
			// not, the outcome is unknown.
			unsure = true
		}
		// Step 2: held by another (or no answer): wait, then ask again.
		select {
		case <-ctx.Done():
			return nil, l.giveUp(value, unsure, ctx.Err())
		case <-time.After(l.jitter(l.opts.RetryDelay)):
		}
	}
}

// giveUp ends a Lock whose context ended: certain when no acquire went
// unanswered, or when compare-and-delete removed whatever it left.
func (l *SetNX) giveUp(value string, unsure bool, cause error) error {
	if !unsure {
		return fmt.Errorf("%w: %w", locks.ErrNotAcquired, cause)
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.RequestTimeout)
	defer cancel()
	if err := releaseScript.Run(ctx, l.cli, []string{l.key}, value).Err(); err != nil {
		return fmt.Errorf("acquire unanswered and its cleanup failed (%v): %w", err, cause)
	}
	return fmt.Errorf("%w: %w", locks.ErrNotAcquired, cause)
}

// extend renews the key every TTL/3 until stopped. The grant is lost
// when the key is no longer ours, or the moment a whole TTL has passed
// since the last confirmed renewal was sent (the server may have expired
// it), even while a renewal is unanswered. An unanswered renewal is not
// retried sooner: a client cannot tell a dead primary from a slow one,
// and the key lives its TTL either way.
func (l *SetNX) extend(h *holding, lastSent time.Time) {
	h.renewWithin(l.opts.TTL/3, l.opts.TTL, lastSent, func() (time.Time, bool) {
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), l.opts.RequestTimeout)
		defer cancel()
		n, err := extendScript.Run(ctx, l.cli, []string{l.key}, h.value, l.opts.TTL.Milliseconds()).Int64()
		if err == nil && n == 1 {
			return sent, false
		}
		return time.Time{}, err == nil
	})
}

// Unlock deletes the key if it still holds the grant's value. ErrNotHeld
// (certain: nothing was deleted) when it did not.
func (l *SetNX) Unlock(ctx context.Context, g *locks.Grant) error {
	value, ok := l.end()
	if !ok {
		return fmt.Errorf("unlock %s: %w", l.key, ErrNotHeld)
	}
	ctx, cancel := context.WithTimeout(ctx, l.opts.RequestTimeout)
	defer cancel()
	n, err := releaseScript.Run(ctx, l.cli, []string{l.key}, value).Int64()
	switch {
	case err != nil:
		return fmt.Errorf("unlock %s: %w", l.key, err)
	case n == 0:
		return fmt.Errorf("unlock %s: %w", l.key, ErrNotHeld)
	}
	return nil
}

// Close stops the extender of a grant still held (its key then expires
// within a TTL); the client is the caller's.
func (l *SetNX) Close(context.Context) error {
	l.end()
	return nil
}
