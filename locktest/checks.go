package locktest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/locks"
)

// Exclusion: Env.Clients clients each take the lock Env.Rounds times and
// increment the shared counter under it (read, write +1, through their own
// connection): no update is lost, no two hold at once, tokens grow in the
// order the lock was held, and no key is left after every release.
func (s *Suite) Exclusion() {
	t := s.t
	counter := s.opts.Prefix + "counter"
	if err := s.admin.InitCounter(s.ctx, counter); err != nil {
		t.Fatalf("initialise the counter: %v", err)
	}
	var (
		holders atomic.Int32
		mu      sync.Mutex
		tokens  []int64
		wg      sync.WaitGroup
	)
	type worker struct {
		l locks.Locker
		c *Client
	}
	workers := make([]worker, s.env.Clients)
	for i := range workers {
		workers[i].l, workers[i].c = s.Locker()
	}
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	for i, w := range workers {
		wg.Go(func() {
			fail := func(format string, args ...any) {
				t.Errorf("client %d: "+format, append([]any{i}, args...)...)
				cancel()
			}
			for r := 0; r < s.env.Rounds && ctx.Err() == nil; r++ {
				g, err := w.l.Lock(ctx)
				if err != nil {
					fail("Lock: %v", err)
					return
				}
				if n := holders.Add(1); n != 1 {
					fail("%d holders at once (token %d)", n, g.Token)
				}
				mu.Lock()
				tokens = append(tokens, g.Token)
				mu.Unlock()
				// The critical section: read, write +1.
				n, err := w.c.conn.ReadCounter(ctx, counter)
				if err != nil {
					fail("read counter: %v", err)
					return
				}
				if ok, err := w.c.conn.WriteCounter(ctx, counter, n+1, nil); err != nil || !ok {
					fail("write counter: accepted %v, %v", ok, err)
					return
				}
				holders.Add(-1)
				if err := w.l.Unlock(ctx, g); err != nil {
					fail("Unlock: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	got, err := s.admin.ReadCounter(s.ctx, counter)
	if err != nil {
		t.Fatalf("read counter: %v", err)
	}
	if want := int64(s.env.Clients * s.env.Rounds); got != want {
		t.Errorf("counter = %d after %d increments under the lock: updates were lost", got, want)
	}
	s.increasing(tokens, "in the order the lock was held")
	s.noKeys("after every release")
}

// increasing checks that tokens strictly increase; all 0 (a strategy with
// no tokens) is not judged, and some 0 among others is a failure.
func (s *Suite) increasing(tokens []int64, order string) {
	s.t.Helper()
	zero := 0
	for _, tk := range tokens {
		if tk == 0 {
			zero++
		}
	}
	switch {
	case zero == len(tokens):
		s.t.Logf("no grant carried a fencing token: their order is not judged")
		return
	case zero > 0:
		s.t.Errorf("%d of %d grants carried no fencing token (0): a strategy gives every grant a token or none", zero, len(tokens))
		return
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			s.t.Errorf("token %d held after token %d (%s): tokens must increase", tokens[i], tokens[i-1], order)
		}
	}
}

// tokenAbove checks that later's token is above earlier's, where grants carry
// tokens.
func (s *Suite) tokenAbove(earlier, later *locks.Grant, what string) {
	s.t.Helper()
	if earlier.Token > 0 && later.Token > 0 && later.Token <= earlier.Token {
		s.t.Errorf("%s: token %d is not above %d", what, later.Token, earlier.Token)
	}
}

// Tokens: one client's successive grants, and another's after them, carry
// strictly increasing tokens. A strategy whose grants carry none has
// nothing to judge here, and the subtest says so.
func (s *Suite) Tokens() {
	a, _ := s.Locker()
	b, _ := s.Locker()
	var held []int64
	for _, l := range []locks.Locker{a, a, a, b, a} {
		g := s.MustLock(l)
		held = append(held, g.Token)
		s.MustUnlock(l, g)
		if g.Token == 0 {
			s.t.Skip("nothing to judge: the strategy's grants carry no fencing token (Grant.Token is 0)")
		}
	}
	s.increasing(held, "one client's grants, then another's")
}

// StaleUnlock: A's grant is lost (Lose) and B takes the lock; A, unaware,
// releases its lost grant, which must leave B's key alone; then A's next
// Lock works, on a new lease or session where there is one.
func (s *Suite) StaleUnlock() {
	t := s.t
	a, ca := s.Locker()
	b, _ := s.Locker()
	ga := s.MustLock(a)
	heal := s.Lose(ca, ga)
	gb := s.MustLock(b)
	s.tokenAbove(ga, gb, "B's grant after A's was lost")
	heal()
	if err := a.Unlock(s.ctx, ga); err != nil {
		t.Logf("A's Unlock of its lost grant: %v", err)
	}
	s.OnlyKey(gb, "after the stale Unlock")
	s.MustUnlock(b, gb)
	ga2 := s.MustLock(a)
	if ga.Lease != 0 && ga2.Lease == ga.Lease {
		t.Errorf("A's next grant reuses the lost lease or session %x", ga.Lease)
	}
	s.tokenAbove(gb, ga2, "A's new grant after B's")
	s.MustUnlock(a, ga2)
}

// Cancel: B waits behind A, then its context ends: its Lock returns an
// error wrapping ErrNotAcquired and leaves no key; so does a Lock whose
// context has already ended; then B's Lock still works.
func (s *Suite) Cancel() {
	t := s.t
	a, _ := s.Locker()
	b, _ := s.Locker()
	start := time.Now()
	ga := s.MustLock(a)
	// B waits, then gives up, at a deadline (an adapter is told it, and
	// gives up itself) scaled to how long A's uncontended Lock took: 10
	// times that, from 300 ms to 3 s. B must have written its own key by
	// then, so that a lock that leaks it is seen to however slow the
	// machine (mut-leak-on-cancel passed under load when B gave up after
	// a fixed 300 ms, before its key was put).
	wait := min(max(300*time.Millisecond, 10*time.Since(start)), 3*time.Second)
	ctx, cancel := context.WithTimeout(s.ctx, wait)
	g, err := b.Lock(ctx)
	cancel()
	switch {
	case err == nil:
		t.Fatalf("B's Lock returned %+v while A holds the lock", g)
	case !errors.Is(err, locks.ErrNotAcquired):
		t.Errorf("B's cancelled Lock: %v, want an error wrapping ErrNotAcquired", err)
	}
	s.OnlyKey(ga, "after a cancelled Lock")
	ctx, cancel = context.WithCancel(s.ctx)
	cancel()
	if g, err := b.Lock(ctx); err == nil {
		t.Errorf("Lock with an ended context returned %+v", g)
	} else if !errors.Is(err, locks.ErrNotAcquired) {
		t.Errorf("Lock with an ended context: %v, want an error wrapping ErrNotAcquired", err)
	}
	s.OnlyKey(ga, "after a Lock with an ended context")
	s.MustUnlock(a, ga)
	gb := s.MustLock(b)
	s.MustUnlock(b, gb)
}

// Lost: a grant's Lost channel is open while the grant holds, and closes
// once it is lost (Lose); the next Lock works, on a new lease or session
// where there is one.
func (s *Suite) Lost() {
	t := s.t
	a, c := s.Locker()
	g := s.MustLock(a)
	if g.Lost == nil {
		t.Fatalf("the grant has no Lost channel: its holder is never told that it lost the lock")
	}
	select {
	case <-g.Lost:
		t.Fatal("Lost is closed while the grant holds")
	default:
	}
	heal := s.Lose(c, g)
	wait := s.env.TTL + 3*time.Second
	select {
	case <-g.Lost:
	case <-time.After(wait):
		heal()
		t.Fatalf("Lost not closed %s after the backend let the grant's key go", wait)
	}
	heal()
	if err := a.Unlock(s.ctx, g); err != nil {
		t.Logf("Unlock of the lost grant: %v", err)
	}
	g2 := s.MustLock(a)
	if g.Lease != 0 && g2.Lease == g.Lease {
		t.Errorf("the next grant reuses the lost lease or session %x", g.Lease)
	}
	s.MustUnlock(a, g2)
}

// TryLock (a locks.TryLocker only): fails at once with ErrLocked while A
// holds, leaving no key; takes the lock once it is free.
func (s *Suite) TryLock() {
	t := s.t
	a, _ := s.Locker()
	bl, _ := s.Locker()
	b, ok := bl.(locks.TryLocker)
	if !ok {
		t.Skip("not a locks.TryLocker")
	}
	ga := s.MustLock(a)
	start := time.Now()
	g, err := b.TryLock(s.ctx)
	took := time.Since(start)
	switch {
	case err == nil:
		t.Fatalf("TryLock returned %+v while A holds the lock", g)
	case !errors.Is(err, locks.ErrLocked) || !errors.Is(err, locks.ErrNotAcquired):
		t.Errorf("TryLock while held: %v, want ErrLocked (wrapping ErrNotAcquired)", err)
	}
	if took > time.Second {
		t.Errorf("TryLock took %s to fail: it must not wait", took)
	}
	s.OnlyKey(ga, "after a failed TryLock")
	s.MustUnlock(a, ga)
	gb, err := b.TryLock(s.ctx)
	if err != nil {
		t.Fatalf("TryLock of a free lock: %v", err)
	}
	s.CheckGrant(bl, gb)
	s.tokenAbove(ga, gb, "TryLock's grant after the last holder's")
	s.OnlyKey(gb, "after TryLock")
	s.MustUnlock(b, gb)
}

// SiblingName holds a second lock whose name has the first one's as a
// string prefix ("lock" and "lock0", as job1 and job10 of a service's many
// names) while the first is taken and released, then the other way round:
// a lock whose ranges stop at the name rather than past it (a prefix
// delete, list or watch on the bare key) touches the other name's keys,
// which a correct lock never does.
func (s *Suite) SiblingName() {
	t := s.t
	sibOpts := s.opts
	sibOpts.Name = s.opts.Name + "0"
	sib := s.LockerOn(s.Client().sess.Conn(), sibOpts)
	gs := s.MustLock(sib)
	s.Unchanged(gs, "the sibling name's", func() {
		// The first name is free however the sibling is held.
		a, _ := s.Locker()
		for range 3 {
			s.MustUnlock(a, s.MustLock(a))
		}
	})
	// The other way round: the sibling's release leaves the first name's
	// holder alone.
	a, _ := s.Locker()
	ga := s.MustLock(a)
	s.Unchanged(ga, "the first name's", func() {
		if err := sib.Unlock(s.ctx, gs); err != nil {
			t.Fatalf("Unlock of the sibling name's grant: %v", err)
		}
	})
	s.MustUnlock(a, ga)
}
