// Package redislocks holds the Redis lock strategies lockbench runs beside
// etcd's (issue #31): the canonical single-instance lock (SetNX) and
// Redlock over independent primaries. Each is a locks.Locker, so that one
// history, one checker and one report judge Redis and etcd locks alike;
// a grant's Key is the Redis key, its Token the strategy's counter and
// its Lost the extender's verdict. Nothing here imports etcd.
package redislocks

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/locks"
)

// Defaults of Options.
const (
	// DefaultTTL is the key's expiry: redsync's default, 8 s.
	DefaultTTL = 8 * time.Second
	// DefaultRetryDelay is the mean wait between acquire attempts
	// (jittered ± half: 75–225 ms, about redsync's 50–250 ms).
	DefaultRetryDelay = 150 * time.Millisecond
	// DefaultRequestTimeout bounds each command.
	DefaultRequestTimeout = time.Second
)

// Options shape one client's Locker. Zero values take the defaults.
type Options struct {
	// Name is the lock's name; Prefix begins its key.
	Name, Prefix string
	// TTL is the key's expiry, renewed every TTL/3 while held.
	TTL time.Duration
	// RetryDelay is the mean wait between attempts of a held lock.
	RetryDelay time.Duration
	// RequestTimeout bounds each Redis command.
	RequestTimeout time.Duration
}

func (o *Options) defaults() error {
	if o.Name == "" {
		return fmt.Errorf("no lock name")
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.RetryDelay == 0 {
		o.RetryDelay = DefaultRetryDelay
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	switch {
	case o.TTL < 30*time.Millisecond:
		return fmt.Errorf("ttl %s: must be ≥30ms (it is renewed every TTL/3)", o.TTL)
	case o.RetryDelay < time.Millisecond:
		return fmt.Errorf("retry delay %s: must be ≥1ms", o.RetryDelay)
	case o.RequestTimeout <= 0:
		return fmt.Errorf("request timeout %s: must be > 0", o.RequestTimeout)
	}
	return nil
}

// Key is the lock's Redis key: locks.Options.Key() of the same name and
// prefix, the key every backend's strategies derive theirs from (the
// conformance suite looks for a lock's keys there).
func (o Options) Key() string { return locks.Options{Name: o.Name, Prefix: o.Prefix}.Key() }

// TokenKey is the counter beside Key that the acquire script INCRs for a
// grant's token: a server whose counter is below a grant's token has not
// seen that grant.
func (o Options) TokenKey() string { return o.Key() + ":token" }

// QuietLogs drops go-redis's log lines. Its logger is process-wide, and
// what it prints during a run (dials refused by a server a fault killed)
// is the fault working, which the history already holds.
func QuietLogs() { quietOnce.Do(func() { redis.SetLogger(quiet{}) }) }

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

var quietOnce sync.Once

// holding is one grant's extender goroutine.
type holding struct {
	value string
	stop  chan struct{}
	done  chan struct{}
	lost  chan struct{}
	// loseOnce closes lost once: a renewal's answer and the validity's
	// end may both say so.
	loseOnce sync.Once
}

// lose closes the grant's Lost.
func (h *holding) lose() { h.loseOnce.Do(func() { close(h.lost) }) }

// grants is what a Locker keeps between Lock and Unlock: the grant held
// and its extender, and the jitter of its retries. One goroutine uses a
// Locker at a time; mu is for the extender's end.
type grants struct {
	id  string
	seq int
	rng *rand.Rand

	mu   sync.Mutex
	held *holding
}

func newGrants() grants {
	return grants{id: randomID(), rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
}

// nextValue is a value no other Lock call of any client uses.
func (g *grants) nextValue() string {
	g.seq++
	return fmt.Sprintf("%s-%d", g.id, g.seq)
}

// randomID names a Locker in its keys' values.
func randomID() string {
	b := make([]byte, 8)
	_, _ = crand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// jitter is d ± half, so that waiting clients do not ask in step.
func (g *grants) jitter(d time.Duration) time.Duration {
	return d/2 + time.Duration(g.rng.Int64N(int64(d)))
}

// retry is a library's caller's step after a failed attempt (the user's
// loop, not the library's): after a jittered pause (when pause > 0, so
// that an instance that errs is not asked in a spin), an error wrapping
// ErrNotAcquired and cause once ctx has ended; nil to try again.
func (g *grants) retry(ctx context.Context, lib string, pause time.Duration, cause error) error {
	if pause > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(g.jitter(pause)):
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %s: %w (%w)", locks.ErrNotAcquired, lib, err, cause)
	}
	return nil
}

// begin records a grant of value and runs extend for it.
func (g *grants) begin(value string, extend func(*holding)) *holding {
	h := &holding{value: value, stop: make(chan struct{}), done: make(chan struct{}), lost: make(chan struct{})}
	g.mu.Lock()
	g.held = h
	g.mu.Unlock()
	go func() {
		defer close(h.done)
		extend(h)
	}()
	return h
}

// renewEvery calls renew every period until the grant is released or
// renew says it is lost; then it closes the grant's Lost.
func (h *holding) renewEvery(period time.Duration, renew func() (lost bool)) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-tick.C:
		}
		if renew() {
			h.lose()
			return
		}
	}
}

// renewWithin renews as renewEvery does, and also closes the grant's
// Lost the moment the validity of the last confirmed send runs out
// (valid after sent; renew confirms a send by returning its time), even
// while a renewal's answer is still on its way: a holder must not
// believe past the time the key may expire, whenever its renewals are
// due. A renewal confirmed after that is too late: the grant stays lost.
func (h *holding) renewWithin(period, valid time.Duration, sent time.Time, renew func() (confirmed time.Time, lost bool)) {
	var mu sync.Mutex
	deadline := sent.Add(valid)
	watched := make(chan struct{})
	quit := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			mu.Lock()
			d := deadline
			mu.Unlock()
			t := time.NewTimer(time.Until(d))
			select {
			case <-quit:
				t.Stop()
				return
			case <-t.C:
			}
			mu.Lock()
			moved := deadline.After(d)
			mu.Unlock()
			if !moved {
				h.lose()
				return
			}
		}
	}()
	defer func() { close(quit); <-watched }()
	h.renewEvery(period, func() bool {
		confirmed, lost := renew()
		select {
		case <-h.lost:
			return true // the validity ran out first
		default:
		}
		if !confirmed.IsZero() {
			mu.Lock()
			deadline = confirmed.Add(valid)
			mu.Unlock()
		}
		return lost
	})
}

// end stops the held grant's extender, if any, and returns its value.
func (g *grants) end() (value string, ok bool) {
	g.mu.Lock()
	h := g.held
	g.held = nil
	g.mu.Unlock()
	if h == nil {
		return "", false
	}
	close(h.stop)
	<-h.done
	return h.value, true
}
