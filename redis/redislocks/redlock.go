package redislocks

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/locks"
)

// Redlock is the Redlock algorithm of the Redis documentation over N
// independent primaries: the same SET NX PX on every instance (side by
// side, as redsync does), granted when a majority took it within the
// key's validity, TTL − elapsed − the clock-drift allowance (TTL × 1% +
// 2 ms); otherwise every instance is released and the attempt retried
// after a jittered delay.
//
// It offers no fencing token (Grant.Token 0): N counters, one per
// instance, give no number that grows across holders (a counter INCRed by
// an attempt that then failed to win a majority runs ahead of the
// others), which is the first of the criticisms the Redis documentation
// cites. The fencing check then has nothing to judge and says so.
type Redlock struct {
	clis []*redis.Client
	opts Options
	key  string
	grants
	// stragglers are the requests still waiting for an instance (ask),
	// e.g. a renewal's after a majority answered; Close waits for them.
	stragglers sync.WaitGroup
}

// NewRedlock makes one client's Redlock over one client per instance
// (which it does not close); at least three instances.
func NewRedlock(clis []*redis.Client, opts Options) (*Redlock, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if len(clis) < 3 {
		return nil, fmt.Errorf("redlock over %d instances: want at least 3 (5 in the Redis documentation)", len(clis))
	}
	return &Redlock{clis: clis, opts: opts, key: opts.Key(), grants: newGrants()}, nil
}

func (l *Redlock) quorum() int { return len(l.clis)/2 + 1 }

// drift is the Redlock description's clock-drift allowance.
func (l *Redlock) drift() time.Duration { return l.opts.TTL/100 + 2*time.Millisecond }

// onEach runs script on every instance side by side (ask) and returns
// every instance's integer answer (-1 for an error), in the order they
// came.
func (l *Redlock) onEach(script *redis.Script, keys []string, args ...any) []int64 {
	answers := l.ask(script, keys, args...)
	out := make([]int64, len(l.clis))
	for i := range out {
		out[i] = <-answers
	}
	return out
}

// ask runs script on every instance side by side, each within the
// request timeout, and sends each instance's integer answer (-1 for an
// error) as it comes; the channel holds them all, so a caller that stops
// reading leaves no request blocked (Close waits for them).
func (l *Redlock) ask(script *redis.Script, keys []string, args ...any) <-chan int64 {
	answers := make(chan int64, len(l.clis))
	for _, cli := range l.clis {
		l.stragglers.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), l.opts.RequestTimeout)
			defer cancel()
			n, err := script.Run(ctx, cli, keys, args...).Int64()
			if err != nil {
				n = -1
			}
			answers <- n
		})
	}
	return answers
}

// Lock tries every instance until a majority grants within the validity,
// or ctx ends.
func (l *Redlock) Lock(ctx context.Context) (*locks.Grant, error) {
	value := l.nextValue()
	for {
		// Step 1: SET NX PX on every instance, timed from before the first.
		start := time.Now()
		granted, _ := ones(l.onEach(setScript, []string{l.key}, value, l.opts.TTL.Milliseconds()))
		// Step 2: held only with a majority and validity left.
		validity := l.opts.TTL - time.Since(start) - l.drift()
		if granted >= l.quorum() && validity > 0 {
			h := l.begin(value, func(h *holding) { l.extend(h, start) })
			return &locks.Grant{Key: l.key, Lost: h.lost}, nil
		}
		// Step 3: otherwise release every instance (a lost answer may
		// have set the key) before waiting to try again.
		release := l.onEach(releaseScript, []string{l.key}, value)
		select {
		case <-ctx.Done():
			for _, n := range release {
				if n < 0 {
					return nil, fmt.Errorf("redlock: a release after a failed attempt went unanswered: %w", ctx.Err())
				}
			}
			return nil, fmt.Errorf("%w: %w", locks.ErrNotAcquired, ctx.Err())
		case <-time.After(l.jitter(l.opts.RetryDelay)):
		}
	}
}

// extend renews the key on every instance every TTL/3. The grant is lost
// when a majority answer that the key is not ours, or the moment the
// validity (TTL − drift) of the last send a majority confirmed runs out —
// the grant's own validity first, which a slow acquire may have left
// shorter than TTL/3. A renewal counts once a majority confirmed it, not
// when the last instance answered: an instance that is down answers only
// at the request timeout, longer than the validity may last.
func (l *Redlock) extend(h *holding, lastSent time.Time) {
	h.renewWithin(l.opts.TTL/3, l.opts.TTL-l.drift(), lastSent, func() (time.Time, bool) {
		sent := time.Now()
		ok, notOurs := l.quorumOf(extendScript, []string{l.key}, h.value, l.opts.TTL.Milliseconds())
		if ok >= l.quorum() {
			return sent, false
		}
		return time.Time{}, notOurs >= l.quorum()
	})
}

// quorumOf asks every instance (ask) and counts the answers 1 and 0
// until a majority answered 1 or too many did not for a majority to; the
// rest finish in the background.
func (l *Redlock) quorumOf(script *redis.Script, keys []string, args ...any) (one, zero int) {
	answers := l.ask(script, keys, args...)
	q := l.quorum()
	for answered := 1; answered <= len(l.clis); answered++ {
		switch <-answers {
		case 1:
			one++
		case 0:
			zero++
		}
		if one >= q || answered-one > len(l.clis)-q {
			break
		}
	}
	return one, zero
}

// ones counts the instances that answered 1 and those that answered 0.
func ones(answers []int64) (one, zero int) {
	for _, n := range answers {
		switch n {
		case 1:
			one++
		case 0:
			zero++
		}
	}
	return one, zero
}

// Unlock deletes the key on every instance that still holds the grant's
// value. ErrNotHeld when a majority no longer did; an error when too
// few answered to tell.
func (l *Redlock) Unlock(_ context.Context, g *locks.Grant) error {
	value, ok := l.end()
	if !ok {
		return fmt.Errorf("unlock %s: %w", l.key, ErrNotHeld)
	}
	deleted, notOurs := ones(l.onEach(releaseScript, []string{l.key}, value))
	switch {
	case deleted >= l.quorum():
		return nil
	case notOurs >= l.quorum():
		return fmt.Errorf("unlock %s: %w on %d of %d instances", l.key, ErrNotHeld, notOurs, len(l.clis))
	}
	return fmt.Errorf("unlock %s: %d of %d instances confirmed the delete", l.key, deleted, len(l.clis))
}

// Close stops the extender of a grant still held.
func (l *Redlock) Close(context.Context) error {
	l.end()
	l.stragglers.Wait()
	return nil
}
