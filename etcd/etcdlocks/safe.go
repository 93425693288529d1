package etcdlocks

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Minimum and relative part of DefaultSafeMargin.
const (
	minSafeMargin     = 50 * time.Millisecond
	safeMarginPercent = 2
)

// DefaultSafeMargin is the safe policy's default margin for a TTL:
// max(50 ms, 2% of the TTL).
//
// Why these figures: both ends measure the TTL on a monotonic clock (the
// server's lessor and the client's time.Now), so wall-clock steps do not
// matter; what does is (a) the rate difference of the two clocks over one
// TTL — crystal oscillators are within 100 ppm and NTP slews at most
// 500 ppm, so 2% is 40 times the worst slew, and it also covers a VM whose
// clock runs slow under steal — and (b) the lateness of the client's own
// timer and of the holder reacting to Lost (scheduling on a loaded host,
// GC), which does not shrink with the TTL: the 50 ms floor. The server's
// lateness (its expiry loop runs every 500 ms) only ever works in the
// client's favour and is not counted.
func DefaultSafeMargin(ttl time.Duration) time.Duration {
	return max(minSafeMargin, ttl*safeMarginPercent/100)
}

// SafeDeadline is the moment a client following the safe policy must stop
// believing it holds a lease: sent (when the client sent the last refresh
// that was answered, or the grant) + ttl (what the server granted) −
// margin. The server counts the same TTL from when the leader received
// that refresh, which is after sent, so the server's expiry is later —
// by a one-way trip at least — unless the clocks' rates differ by more
// than margin over ttl.
func SafeDeadline(sent time.Time, ttl, margin time.Duration) time.Time {
	return sent.Add(ttl - margin)
}

// SafeRefreshInterval is how often the safe policy sends a refresh: TTL/4,
// so that a healthy client has three more refreshes in flight or answered
// before its deadline (the auto policy refreshes every TTL/3, and then
// only after the previous answer).
func SafeRefreshInterval(ttl time.Duration) time.Duration { return ttl / 4 }

// nextRefresh is when the refresh after the one due at due is: one
// interval later, or one interval from now when that has passed already
// (the goroutine was late), so refreshes never bunch up.
func nextRefresh(due time.Time, interval time.Duration, now time.Time) time.Time {
	if n := due.Add(interval); n.After(now) {
		return n
	}
	return now.Add(interval)
}

// safeAnswer is the outcome of one refresh and when it was sent.
type safeAnswer struct {
	sent time.Time
	ttl  time.Duration
	// gone: the server answered that the lease no longer exists.
	gone bool
}

// safe keeps l alive under the safe policy: a KeepAliveOnce every
// SafeRefreshInterval from the grant's send, each sent without waiting for the previous one (a
// slow answer must not delay the next refresh reaching the server), its
// send time noted; an answer moves the deadline to SafeDeadline of its
// send time, and a timer set to the deadline closes l.lost. An answer
// that the lease is gone (TTL ≤ 0) closes it at once. grantSent is when
// the locks.Grant was sent, ttl what it granted.
func (k *leaseKeeper) safe(ctx context.Context, l *lease, grantSent time.Time, ttl time.Duration) {
	defer close(l.done)
	defer l.markLost()
	rctx, cancel := context.WithCancel(ctx)
	var inflight sync.WaitGroup
	// Runs before close(l.done): no refresh outlives the goroutine.
	defer inflight.Wait()
	defer cancel()
	deadline := SafeDeadline(grantSent, ttl, k.margin)
	expire := time.NewTimer(time.Until(deadline))
	defer expire.Stop()
	// Refreshes are due every interval from the grant's send, not from its
	// answer: over a slow network the first one goes out as soon as the
	// grant is answered.
	interval := SafeRefreshInterval(k.ttl)
	next := grantSent.Add(interval)
	tick := time.NewTimer(time.Until(next))
	defer tick.Stop()
	answers := make(chan safeAnswer)
	for {
		select {
		case <-ctx.Done():
			return
		case <-expire.C:
			if wait := time.Until(deadline); wait > 0 {
				// A stale firing from before the deadline moved.
				expire.Reset(wait)
				continue
			}
			// No refresh sent in time was answered: the server may expire
			// the lease from now on.
			return
		case a := <-answers:
			if a.gone {
				return
			}
			if d := SafeDeadline(a.sent, a.ttl, k.margin); d.After(deadline) {
				deadline = d
				expire.Reset(time.Until(deadline))
			}
		case <-tick.C:
			next = nextRefresh(next, interval, time.Now())
			tick.Reset(time.Until(next))
			inflight.Add(1)
			go func() {
				defer inflight.Done()
				k.refreshOnce(rctx, l.id, ttl, answers)
			}()
		}
	}
}

// refreshOnce sends one KeepAliveOnce and reports its answer on answers,
// unless ctx ends first. The send time is taken before the call: the
// client may re-send inside KeepAliveOnce, and an earlier time only makes
// the deadline earlier. An answer later than one TTL is of no use (the
// deadline from an earlier send has passed), so the call is bounded.
func (k *leaseKeeper) refreshOnce(ctx context.Context, id clientv3.LeaseID, ttl time.Duration, answers chan<- safeAnswer) {
	cctx, cancel := context.WithTimeout(ctx, ttl)
	defer cancel()
	sent := time.Now()
	resp, err := k.cli.KeepAliveOnce(cctx, id)
	var a safeAnswer
	switch {
	case err == nil && resp.TTL > 0:
		a = safeAnswer{sent: sent, ttl: time.Duration(resp.TTL) * time.Second}
	case err == nil, errors.Is(err, rpctypes.ErrLeaseNotFound):
		a = safeAnswer{gone: true}
	default:
		// No answer (cut network, timeout, leader change): the deadline
		// stays where the last answer put it.
		return
	}
	select {
	case answers <- a:
	case <-ctx.Done():
	}
}
