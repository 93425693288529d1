package redislocks

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/redis/rediscluster"
	"github.com/lockbench/lockbench/redis/rediscluster/redistest"
)

func TestMain(m *testing.M) {
	QuietLogs()
	os.Exit(m.Run())
}

// instances starts n independent Redis primaries and a client of each.
func instances(t *testing.T, n int) (*rediscluster.Cluster, []*redis.Client) {
	t.Helper()
	redistest.Need(t)
	c, err := rediscluster.Start(context.Background(), rediscluster.Options{Instances: n, DataParent: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var clis []*redis.Client
	for _, a := range c.Addrs() {
		cli := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		t.Cleanup(func() { cli.Close() })
		clis = append(clis, cli)
	}
	return c, clis
}

func lost(g *locks.Grant, within time.Duration) bool {
	select {
	case <-g.Lost:
		return true
	case <-time.After(within):
		return false
	}
}

// TestSetNX: one holder at a time, tokens that grow, a holder told when
// its key is gone, and a release that never deletes another's key.
func TestSetNX(t *testing.T) {
	_, clis := instances(t, 1)
	ctx := context.Background()
	opts := Options{Name: "t", TTL: 600 * time.Millisecond, RetryDelay: 10 * time.Millisecond}
	a, _ := NewSetNX(clis[0], opts)
	b, _ := NewSetNX(clis[0], opts)
	ga, err := a.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 3*opts.TTL)
	_, err = b.Lock(wait)
	cancel()
	if !errors.Is(err, locks.ErrNotAcquired) {
		t.Fatalf("B's Lock while A holds, past A's TTL (A renews): %v, want ErrNotAcquired", err)
	}
	if err := a.Unlock(ctx, ga); err != nil {
		t.Fatal(err)
	}
	gb, err := b.Lock(ctx)
	if err != nil || gb.Token <= ga.Token {
		t.Fatalf("B's grant %+v (%v) after A's token %d: want a higher token", gb, err, ga.Token)
	}
	// B's key goes behind its back: its next renewal tells it.
	clis[0].Del(ctx, opts.Key())
	if !lost(gb, opts.TTL) {
		t.Error("B not told within a TTL that its key is gone")
	}
	if err := b.Unlock(ctx, gb); !errors.Is(err, ErrNotHeld) {
		t.Errorf("B's Unlock after its key went: %v, want ErrNotHeld", err)
	}
	// A holds again; its key is overwritten by someone else's value: A's
	// Unlock must leave that key alone.
	ga, err = a.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clis[0].Set(ctx, opts.Key(), "someone-else", time.Minute)
	if err := a.Unlock(ctx, ga); !errors.Is(err, ErrNotHeld) {
		t.Errorf("A's Unlock of a key holding another value: %v, want ErrNotHeld", err)
	}
	if v, _ := clis[0].Get(ctx, opts.Key()).Result(); v != "someone-else" {
		t.Errorf("A's Unlock deleted another's key (now %q)", v)
	}
}

// TestRedlockKeepsAMajority: a holder keeps its grant while a majority
// of instances renew it, and is told within a TTL once one is gone; no
// grant carries a token.
func TestRedlockKeepsAMajority(t *testing.T) {
	c, clis := instances(t, 5)
	ctx := context.Background()
	opts := Options{Name: "t", TTL: 600 * time.Millisecond, RetryDelay: 10 * time.Millisecond}
	l, err := NewRedlock(clis, opts)
	if err != nil {
		t.Fatal(err)
	}
	g, err := l.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g.Token != 0 {
		t.Errorf("token %d: Redlock offers none", g.Token)
	}
	for _, i := range []int{0, 1} {
		if err := c.Crash(i); err != nil {
			t.Fatal(err)
		}
	}
	if lost(g, 3*opts.TTL) {
		t.Fatal("lost with 3 of 5 instances renewing")
	}
	if err := c.Crash(2); err != nil {
		t.Fatal(err)
	}
	if !lost(g, 2*opts.TTL) {
		t.Error("not told within two TTLs that only 2 of 5 instances renew")
	}
	if err := l.Unlock(ctx, g); err == nil || !strings.Contains(err.Error(), "2 of 5 instances confirmed") {
		t.Errorf("Unlock with 2 of 5 instances up: %v", err)
	}
	if _, err := NewRedlock(clis[:2], opts); err == nil {
		t.Error("a Redlock over 2 instances was made")
	}
}

// TestOptionsRefused: bad options say what is wrong and what is valid.
func TestOptionsRefused(t *testing.T) {
	for _, tt := range []struct {
		opts Options
		want string
	}{
		{Options{}, "no lock name"},
		{Options{Name: "x", TTL: time.Millisecond}, "ttl 1ms: must be ≥30ms"},
		{Options{Name: "x", RetryDelay: time.Microsecond}, "retry delay 1µs: must be ≥1ms"},
	} {
		if _, err := NewSetNX(nil, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.opts, err, tt.want)
		}
	}
}
