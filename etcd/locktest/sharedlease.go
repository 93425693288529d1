package locktest

import (
	"context"
	"time"

	"github.com/lockbench/lockbench/etcd/etcdlocks"
)

// sharedLease gives two Lockers of two names on one connection one
// etcdlocks.ClientLease (Options.Lease), as the runner gives a client's names
// one: each name is held while the other is, and closing one Locker
// leaves the other's grant alone, since a Locker must not revoke a lease
// it shares. A Locker that took the shared lease (its grant's lease is
// the ClientLease's) loses its grant when the ClientLease is closed: Lost
// closes and the key goes. A Locker that keeps a lease of its own (it
// may ignore Options.Lease) is not asked that.
func (s *suite) sharedLease() {
	t := s.t
	cli := s.Client().Conn().(ownLeases).Client
	share, err := etcdlocks.NewClientLease(cli, s.opts)
	if err != nil {
		t.Fatalf("NewClientLease: %v", err)
	}
	defer share.Close(context.WithoutCancel(s.ctx))
	conn := &etcdlocks.Conn{Client: cli, KeepAlive: s.opts.KeepAlive, Lease: share}
	a := s.LockerOn(conn, s.opts.Options)
	// The other name's Locker is closed here, once: the suite's end closes
	// only its own.
	opts := s.opts.Options
	opts.Name = s.opts.Name + "0"
	b, err := s.NewLocker(conn, opts)
	if err != nil {
		t.Fatalf("new locker for %q: %v", opts.Name, err)
	}
	ga := s.MustLock(a)
	s.Unchanged(ga, "the first name's", func() {
		gb := s.MustLock(b)
		s.MustUnlock(b, gb)
		ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("Close of the other name's Locker: %v", err)
		}
	})
	if ga.Lease != int64(share.ID()) {
		return // a lease of its own
	}
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	if err := share.Close(ctx); err != nil {
		t.Fatalf("close the shared lease: %v", err)
	}
	select {
	case <-ga.Lost:
	case <-time.After(5 * time.Second):
		t.Errorf("the grant's Lost is still open 5s after the shared lease it was granted under was revoked")
	}
	if resp, err := s.admin.Get(s.ctx, ga.Key); err == nil && len(resp.Kvs) > 0 {
		t.Errorf("the grant's key %s is still there after its shared lease was revoked", ga.Key)
	}
}
