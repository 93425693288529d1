package etcdlocks_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/locks"
)

// TestClientLeaseShared: every strategy on the lease keeper, given one
// ClientLease, holds two names at once under one lease; closing one
// name's Locker leaves the other's grant alone (its key, its Lost); and
// closing the ClientLease ends the grant it holds (Lost closes, the key
// goes). A strategy that keeps its own lease (OwnLease) is skipped: it
// may ignore Options.Lease.
func TestClientLeaseShared(t *testing.T) {
	eps := endpoints(t)
	for _, s := range locks.All() {
		if s.OwnLease {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cli := dial(t, eps)
			base := etcdlocks.Options{Options: locks.Options{Prefix: fmt.Sprintf("/clientlease-%s-%d/", s.Name, time.Now().UnixNano()), TTL: 5 * time.Second}}
			share, err := etcdlocks.NewClientLease(cli, base)
			if err != nil {
				t.Fatal(err)
			}
			defer share.Close(ctx)
			if share.ID() != 0 {
				t.Fatalf("ID %x before any Locker asked for a lease, want 0", int64(share.ID()))
			}
			locker := func(name string) locks.Locker {
				opts := base
				opts.Name, opts.Lease = name, share
				l, err := newLocker(ctx, s, cli, opts)
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			a, b := locker("job1"), locker("job10")
			ga, err := a.Lock(ctx)
			if err != nil {
				t.Fatalf("lock job1: %v", err)
			}
			gb, err := b.Lock(ctx)
			if err != nil {
				t.Fatalf("lock job10 while job1 is held: %v", err)
			}
			if ga.Lease != gb.Lease || ga.Lease != int64(share.ID()) {
				t.Fatalf("leases %x and %x, shared lease %x: want one", int64(ga.Lease), int64(gb.Lease), int64(share.ID()))
			}
			if err := b.Unlock(ctx, gb); err != nil {
				t.Fatalf("unlock job10: %v", err)
			}
			if err := b.Close(ctx); err != nil {
				t.Fatalf("close job10's Locker: %v", err)
			}
			if isClosed(ga.Lost) || !keyExists(ctx, t, cli, ga.Key) {
				t.Fatal("closing job10's Locker ended job1's grant")
			}
			if err := share.Close(ctx); err != nil {
				t.Fatalf("close the shared lease: %v", err)
			}
			if !isClosed(ga.Lost) {
				t.Error("job1's grant's Lost is open after its lease was closed")
			}
			if keyExists(ctx, t, cli, ga.Key) {
				t.Errorf("job1's key %s is still there after its lease was revoked", ga.Key)
			}
			a.Close(ctx)
		})
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func keyExists(ctx context.Context, t *testing.T, cli *clientv3.Client, key string) bool {
	t.Helper()
	resp, err := cli.Get(ctx, key)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return resp.Count > 0
}
