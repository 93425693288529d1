package rediscluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestJumpClockExpiresTheNodesKeysOnly: a key set with a 10 s expiry on
// two independent nodes is gone from the node whose clock jumped 20 s,
// and still there, with most of its time left, on the other; the jumped
// node's TIME reads at least the jump ahead of the machine's clock, the
// other's does not; a key set after the jump lives its full expiry (the
// jump moves the clock, not the expiry). A restarted node keeps its
// clock's offset (its file).
func TestJumpClockExpiresTheNodesKeysOnly(t *testing.T) {
	c := start(t, Options{Instances: 2, Clock: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var clis []*redis.Client
	for _, a := range c.Addrs() {
		cli := redis.NewClient(&redis.Options{Addr: a})
		defer cli.Close()
		if err := cli.Set(ctx, "k", "v", 10*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		clis = append(clis, cli)
	}
	if err := c.JumpClock(0, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if n, err := clis[0].Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Errorf("jumped node: EXISTS k = %d (%v), want 0: the jump did not expire the key", n, err)
	}
	if ttl, err := clis[1].PTTL(ctx, "k").Result(); err != nil || ttl < 5*time.Second {
		t.Errorf("other node: PTTL k = %v (%v), want most of 10s: the jump reached a node it was not for", ttl, err)
	}
	for i, cli := range clis {
		machine := time.Now()
		now, err := cli.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		ahead := now.Sub(machine) >= 19*time.Second
		if ahead != (i == 0) {
			t.Errorf("node %d: TIME %s, machine %s: ahead by ≥19s is %v", i, now, machine, ahead)
		}
	}
	if err := clis[0].Set(ctx, "after", "v", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if ttl, err := clis[0].PTTL(ctx, "after").Result(); err != nil || ttl < 5*time.Second {
		t.Errorf("jumped node: a key set after the jump has PTTL %v (%v), want most of 10s", ttl, err)
	}
	if err := c.Crash(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	machine := time.Now()
	if now, err := clis[0].Time(ctx).Result(); err != nil || now.Sub(machine) < 19*time.Second {
		t.Errorf("restarted node: TIME %s (%v), machine %s: its clock did not keep the jump", now, err, machine)
	}
	if err := c.JumpClock(0, -time.Second); err == nil || !strings.Contains(err.Error(), "only jumps forward") {
		t.Errorf("a backward jump: %v, want an error", err)
	}
	if err := c.JumpClock(2, time.Second); err == nil {
		t.Error("the clock of node 2 of 2 jumped")
	}
}

// TestJumpClockNeedsTheClock: a deployment started on the machine's
// clock refuses to jump one, saying why, rather than do nothing.
func TestJumpClockNeedsTheClock(t *testing.T) {
	c := start(t, Options{Instances: 1})
	if err := c.JumpClock(0, time.Second); err == nil || !strings.Contains(err.Error(), "machine's clock") {
		t.Errorf("JumpClock without Options.Clock: %v, want a refusal", err)
	}
}
