// Package myredislock is an example of a Redis lock of one's own,
// written only against lockbench's public API (locks, redislocks) and
// go-redis, and run through the whole lockbench CLI by a three-line main
// (cmd/lockbench-myredislock) that imports it and calls cli.Main.
//
// The lock is the Redis documentation's single-instance lock: SET key
// value NX PX ttl on the Sentinels' primary, polled while another holds
// it; PEXPIRE every TTL/3 while the value is still ours; DEL only while
// it is. It offers no fencing token.
package myredislock

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/redis/redislocks"
)

// Name is the strategy's name in lockbench's list, run and suite.
const Name = "myredislock"

// Registered on import over one instance: a run of it gets a primary
// with replicas behind Sentinels, and its Conn one client that follows
// the Sentinels' primary.
func init() {
	redislocks.Register(Name,
		"example: SET NX PX on the Sentinels' primary, polled every 50 ms; PEXPIRE every TTL/3, DEL, both only while the value is ours",
		"examples/myredislock", 1, nil, New)
}

// Compare-and-act scripts: they touch the key only while it holds our
// value, so that a holder whose key expired never renews or deletes its
// successor's.
var (
	renewScript   = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`)
	releaseScript = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
)

// poll is the wait between two tries while another client holds the lock.
const poll = 50 * time.Millisecond

// New is the strategy's factory: one Locker per client.
func New(c *redislocks.Conn, opts redislocks.Options) (locks.Locker, error) {
	ttl := opts.TTL
	if ttl == 0 {
		ttl = redislocks.DefaultTTL
	}
	if ttl < 30*time.Millisecond {
		return nil, fmt.Errorf("ttl %s: must be ≥30ms (the key is renewed every TTL/3)", ttl)
	}
	return &Locker{cli: c.Instances[0], key: opts.Key(), ttl: ttl}, nil
}

// Locker is one client's handle on the lock.
type Locker struct {
	cli *redis.Client
	key string
	ttl time.Duration
	// value is the held grant's; stop and done end its renewal.
	value      string
	stop, done chan struct{}
}

// Lock sets the key if it is absent; otherwise it waits and tries again.
func (l *Locker) Lock(ctx context.Context) (*locks.Grant, error) {
	value := randomValue()
	for {
		// Step 1: SET NX PX, our value, the TTL.
		ok, err := l.cli.SetNX(ctx, l.key, value, l.ttl).Result()
		if err == nil && ok {
			lost := make(chan struct{})
			l.value, l.stop, l.done = value, make(chan struct{}), make(chan struct{})
			go l.renew(value, lost)
			return &locks.Grant{Key: l.key, Lost: lost}, nil
		}
		// Step 2: held by another (or no answer): wait, then try again;
		// when the caller gives up, delete what an unanswered SET may
		// have left.
		select {
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := releaseScript.Run(cctx, l.cli, []string{l.key}, value).Err(); err != nil {
				return nil, fmt.Errorf("lock %s: gave up (%w) and its cleanup failed: %v", l.key, ctx.Err(), err)
			}
			return nil, fmt.Errorf("%w: lock %s: %w", locks.ErrNotAcquired, l.key, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// renew extends the key every TTL/3 while it holds value, and closes lost
// when it no longer does or a renewal goes unanswered.
func (l *Locker) renew(value string, lost chan struct{}) {
	defer close(l.done)
	tick := time.NewTicker(l.ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		n, err := renewScript.Run(ctx, l.cli, []string{l.key}, value, l.ttl.Milliseconds()).Int64()
		cancel()
		if err != nil || n != 1 {
			close(lost)
			return
		}
	}
}

// end stops the held grant's renewal and returns its value.
func (l *Locker) end() (string, bool) {
	if l.stop == nil {
		return "", false
	}
	close(l.stop)
	<-l.done
	value := l.value
	l.value, l.stop, l.done = "", nil, nil
	return value, true
}

// Unlock stops the renewal and deletes the key only while it is ours.
func (l *Locker) Unlock(ctx context.Context, _ *locks.Grant) error {
	value, ok := l.end()
	if !ok {
		return fmt.Errorf("unlock %s: not held", l.key)
	}
	n, err := releaseScript.Run(ctx, l.cli, []string{l.key}, value).Int64()
	switch {
	case err != nil:
		return fmt.Errorf("unlock %s: %w", l.key, err)
	case n == 0:
		return fmt.Errorf("unlock %s: %w", l.key, redislocks.ErrNotHeld)
	}
	return nil
}

// Close stops the renewal of a grant still held; its key then expires.
func (l *Locker) Close(context.Context) error {
	l.end()
	return nil
}

// randomValue is a value no other client's Lock uses.
func randomValue() string {
	b := make([]byte, 16)
	_, _ = crand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
