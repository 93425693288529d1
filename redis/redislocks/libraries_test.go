package redislocks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/locks"
)

// TestLibrariesBlockRenewAndTell: over each library, a second client's
// Lock waits while the first holds until its context ends, past the
// library's own tries (the caller's loop) and past the TTL (the
// renewal), and then fails with ErrNotAcquired; the holder keeps its grant while
// the instances it still needs renew the key, and its Lost closes once
// they do not; its Unlock then says the key was not held; no grant
// carries a token.
func TestLibrariesBlockRenewAndTell(t *testing.T) {
	const ttl = 600 * time.Millisecond
	for _, tc := range []struct {
		name      string
		instances int
		make      func([]*redis.Client, Options) (locks.Locker, error)
		// keep: the key deleted on these instances, the grant holds;
		// lose: then deleted on these too, it is lost.
		keep, lose []int
		// wait is B's patience: past redsync's 32 tries at most 250 ms
		// apart, so that B's Lock runs the caller's loop.
		wait time.Duration
	}{
		{RedsyncName, 5, func(c []*redis.Client, o Options) (locks.Locker, error) { return NewRedsync(c, o) }, []int{0, 1}, []int{2}, 9 * time.Second},
		{RedsyncSingleName, 1, func(c []*redis.Client, o Options) (locks.Locker, error) { return NewRedsync(c, o) }, nil, []int{0}, 9 * time.Second},
		{BsmName, 1, func(c []*redis.Client, o Options) (locks.Locker, error) { return NewBsm(c[0], o) }, nil, []int{0}, 3 * ttl},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, clis := instances(t, tc.instances)
			ctx := context.Background()
			opts := Options{Name: "t", TTL: ttl, RetryDelay: 10 * time.Millisecond}
			a, _ := tc.make(clis, opts)
			b, _ := tc.make(clis, opts)
			ga, err := a.Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ga.Token != 0 {
				t.Errorf("token %d: the library offers none", ga.Token)
			}
			wait, cancel := context.WithTimeout(ctx, tc.wait)
			_, err = b.Lock(wait)
			gaveUpEarly := wait.Err() == nil
			cancel()
			if gaveUpEarly {
				t.Errorf("B's Lock returned before its context ended: %v", err)
			}
			if !errors.Is(err, locks.ErrNotAcquired) {
				t.Fatalf("B's Lock while A holds, for %s: %v, want ErrNotAcquired", tc.wait, err)
			}
			del := func(on []int) {
				for _, i := range on {
					if err := clis[i].Del(ctx, opts.Key()).Err(); err != nil {
						t.Fatal(err)
					}
				}
			}
			del(tc.keep)
			if lost(ga, 3*ttl) {
				t.Fatalf("lost with the key deleted only on instances %v of %d", tc.keep, tc.instances)
			}
			del(tc.lose)
			if !lost(ga, 2*ttl) {
				t.Fatalf("not told within two TTLs that the key is gone from instances %v", append(tc.keep, tc.lose...))
			}
			if err := a.Unlock(ctx, ga); !errors.Is(err, ErrNotHeld) {
				t.Errorf("Unlock of the lost grant: %v, want ErrNotHeld", err)
			}
			gb, err := b.Lock(ctx)
			if err != nil {
				t.Fatalf("B's Lock once the key is gone: %v", err)
			}
			if err := b.Unlock(ctx, gb); err != nil {
				t.Errorf("B's Unlock: %v", err)
			}
			for _, l := range []locks.Locker{a, b} {
				l.Close(ctx)
			}
		})
	}
}

// TestRegisterChoosesTheDeployment: a strategy registered over one
// instance runs behind Sentinels, over more on independent primaries;
// Register refuses fewer than one instance.
func TestRegisterChoosesTheDeployment(t *testing.T) {
	for _, tc := range []struct {
		name        string
		independent bool
	}{
		{SetNXName, false}, {RedlockName, true}, {RedsyncName, true},
		{RedsyncSingleName, false}, {BsmName, false}, {"no-such-lock", false},
	} {
		if got := Independent(tc.name); got != tc.independent {
			t.Errorf("Independent(%q) = %v, want %v", tc.name, got, tc.independent)
		}
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "over 0 instances: want at least 1") {
			t.Errorf("Register over 0 instances: panic %v", r)
		}
	}()
	Register("zero-instances", "", "", 0, nil, nil)
}
