package runner

import (
	"context"
	"testing"
	"time"

	"github.com/lockbench/lockbench/locks"
)

type instantLocker struct{}

func (instantLocker) Lock(context.Context) (*locks.Grant, error) { return &locks.Grant{}, nil }
func (instantLocker) Unlock(context.Context, *locks.Grant) error { return nil }
func (instantLocker) Close(context.Context) error                { return nil }

func TestDelayedLockerHoldsEveryGrant(t *testing.T) {
	f := delayedFactory(func(context.Context, locks.Conn, locks.Options) (locks.Locker, error) {
		return instantLocker{}, nil
	}, 20*time.Millisecond)
	l, err := f(context.Background(), nil, locks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 3 {
		if g, err := l.Lock(context.Background()); err != nil || g == nil {
			t.Fatalf("Lock = %v, %v", g, err)
		}
	}
	if el := time.Since(start); el < 60*time.Millisecond {
		t.Errorf("3 grants took %s, want ≥ 60ms", el)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if g, err := l.Lock(ctx); err != nil || g == nil {
		t.Errorf("cancelled delay: Lock = %v, %v; the grant is held, so it must be returned", g, err)
	}
}
