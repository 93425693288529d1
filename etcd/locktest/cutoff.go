package locktest

import (
	"context"
	"errors"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/locks"
	conformance "github.com/lockbench/lockbench/locktest"
)

// cancelCutOff: B waits behind A; then B is cut off from every member (its
// traffic held, as a partition does: nothing lost, nothing delivered) and
// its Lock is cancelled. The Lock must return within the cancel check's
// bound (check.Options.CancelBound for clients without a per-request
// deadline), not when the network comes back: etcd's concurrency.Mutex
// cleans up a cancelled wait with the client's context (etcd #18082) and
// waits for the members as long as they are away. Then A, cut off the same
// way, releases with a context cancelled 100 ms in: its Unlock must
// return within the bound too.
func (s *suite) cancelCutOff() {
	t := s.t
	if !s.env.CutOff {
		t.Skip("Env.CutOff not set")
	}
	bound := check.Options{RequestTimeout: -1}.WithDefaults().CancelBound
	a, ra := s.cutLocker()
	b, rb := s.cutLocker()
	ga := s.MustLock(a)
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		g, err := b.Lock(ctx)
		if err == nil {
			err = errors.New("granted " + g.Key)
		}
		done <- err
	}()
	time.Sleep(500 * time.Millisecond) // B is queued behind A
	rb.Cut(true)
	time.Sleep(100 * time.Millisecond)
	cancel()
	took, err := returnWithin(done, bound+5*time.Second)
	rb.Cut(false)
	switch {
	case err == nil:
		t.Fatalf("B's Lock, cancelled while cut off, did not return within %s", bound+5*time.Second)
	case took > bound:
		t.Errorf("B's Lock, cancelled while cut off from every member, returned %s after the cancel (%v): past the %s a cancelled call may take", took.Round(time.Millisecond), err, bound)
	}
	ra.Cut(true)
	uctx, ucancel := context.WithTimeout(s.ctx, 100*time.Millisecond)
	defer ucancel()
	udone := make(chan error, 1)
	start := time.Now()
	go func() { udone <- a.Unlock(uctx, ga) }()
	_, uerr := returnWithin(udone, bound+5*time.Second)
	took = time.Since(start) - 100*time.Millisecond
	ra.Cut(false)
	if uerr == nil && took > bound {
		t.Errorf("A's Unlock, its context ended while cut off, returned %s after its end: past the %s a cancelled call may take", took.Round(time.Millisecond), bound)
	}
}

// returnWithin waits up to d for a call's error; err is nil when it did not
// return (a nil error is turned into a non-nil one by the caller's send).
func returnWithin(done <-chan error, d time.Duration) (time.Duration, error) {
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		if err == nil {
			err = errors.New("returned nil")
		}
		return time.Since(start), err
	case <-t.C:
		return d, nil
	}
}

// cutLocker makes a Locker whose client reaches the members through
// relays that can hold its traffic.
func (s *suite) cutLocker() (locks.Locker, *conformance.Client) {
	s.t.Helper()
	c := s.CutClient()
	return s.LockerOn(c.Session().Conn(), s.opts.Options), c
}
