package locktest

import (
	"github.com/lockbench/lockbench/locks"
)

// siblingName holds a second lock whose name has the first one's as a
// string prefix ("lock" and "lock0", as job1 and job10 of a service's
// many names) while the first is taken and released, then the other way
// round: a lock whose ranges stop at the name rather than past it (a
// prefix delete, list or watch on the bare key) touches the other name's
// keys, which a correct lock never does.
func (s *suite) siblingName() {
	t := s.t
	sibOpts := s.opts
	sibOpts.Name = s.opts.Name + "0"
	sib := s.lockerWith(s.dial(s.wire), sibOpts)
	ctx, cancel := s.lockCtx()
	defer cancel()
	gs, err := sib.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock of the sibling name %q: %v", sibOpts.Name, err)
	}
	s.unchanged(gs, "the sibling name's", func() {
		// The first name is free however the sibling is held.
		a, _ := s.locker()
		for range 3 {
			s.mustUnlock(a, s.mustLock(a))
		}
	})
	// The other way round: the sibling's release leaves the first name's
	// holder alone.
	a, _ := s.locker()
	ga := s.mustLock(a)
	s.unchanged(ga, "the first name's", func() {
		if err := sib.Unlock(s.ctx, gs); err != nil {
			t.Fatalf("Unlock of the sibling name's grant: %v", err)
		}
	})
	s.mustUnlock(a, ga)
}

// unchanged runs f and then checks that g's key is still there, at the
// same create revision, and that its holder was not told it lost it.
func (s *suite) unchanged(g *locks.Grant, whose string, f func()) {
	s.t.Helper()
	f()
	resp, err := s.admin.Get(s.ctx, g.Key)
	switch {
	case err != nil:
		s.t.Fatalf("read %s key %s: %v", whose, g.Key, err)
	case len(resp.Kvs) == 0:
		s.t.Errorf("%s key %s was deleted by the other name's locking", whose, g.Key)
	case resp.Kvs[0].CreateRevision != g.Token:
		s.t.Errorf("%s key %s was re-created (create revision %d, granted at %d) by the other name's locking", whose, g.Key, resp.Kvs[0].CreateRevision, g.Token)
	}
	select {
	case <-g.Lost:
		s.t.Errorf("%s holder was told it lost the lock while the other name was locked and released", whose)
	default:
	}
}
