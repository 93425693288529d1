package rediscluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/redis/rediscluster/redistest"
)

// start starts a deployment for a test (redistest.Need: skipped without
// Redis).
func start(t *testing.T, opts Options) *Cluster {
	t.Helper()
	redistest.Need(t)
	opts.DataParent = t.TempDir()
	c, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestFailoverLosesWhatTheReplicaNeverGot is the deployment's reason to
// exist: a write the primary acknowledged while its replicas' links were
// cut is gone after the primary crashes and the Sentinels promote a
// replica; a write made before the cut survives. Close then leaves no
// process and no folder.
func TestFailoverLosesWhatTheReplicaNeverGot(t *testing.T) {
	c := start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	primary := redis.NewClient(&redis.Options{Addr: c.Addrs()[0]})
	defer primary.Close()
	if err := primary.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// WAIT: the write has reached both replicas before the cut.
	if n, err := primary.Wait(ctx, 2, 5*time.Second).Result(); err != nil || n != 2 {
		t.Fatalf("WAIT: %d replicas (%v)", n, err)
	}
	for i := 1; i < len(c.Addrs()); i++ {
		if err := c.CutReplication(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := primary.Set(ctx, "acknowledged", "1", 0).Err(); err != nil {
		t.Fatalf("the primary did not acknowledge a write with its replicas cut: %v", err)
	}
	old, err := c.Primary(ctx)
	if err != nil || old != c.Addrs()[0] {
		t.Fatalf("primary %s (%v), want %s", old, err, c.Addrs()[0])
	}
	if err := c.Crash(0); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(c.Addrs()); i++ {
		c.HealReplication(i) // the replicas' links now lead to a dead node
	}
	began := time.Now()
	now, err := c.WaitFailover(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failover to %s in %s", now, time.Since(began).Round(time.Millisecond))
	promoted := redis.NewClient(&redis.Options{Addr: now})
	defer promoted.Close()
	if v, err := promoted.Get(ctx, "before").Result(); err != nil || v != "1" {
		t.Errorf("the write made before the cut: %q, %v; want it on the promoted replica", v, err)
	}
	if _, err := promoted.Get(ctx, "acknowledged").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("the acknowledged write is on the promoted replica (%v): the cut did not hold it back", err)
	}
	if err := promoted.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Errorf("the promoted primary refuses writes: %v", err)
	}
	dir := c.DataDir()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("data folder %s left behind: %v", dir, err)
	}
	for _, p := range append(append([]*process{}, c.nodes...), c.sentinels...) {
		if p.Running() {
			t.Errorf("%s still running after Close", p.Name)
		}
	}
}

// TestCutOutlastsTheSentinels: a Sentinel rewrites a replica that
// replicates from an address other than the primary's it monitors
// (+fix-slave-config) once failover-timeout (10 s here) has passed; the
// cut must still hold then, and heal.
func TestCutOutlastsTheSentinels(t *testing.T) {
	t.Parallel() // it sleeps through failover-timeout
	c := start(t, Options{Replicas: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	time.Sleep(10*DefaultDownAfter + 2*time.Second)
	primary := redis.NewClient(&redis.Options{Addr: c.Addrs()[0]})
	defer primary.Close()
	replica := redis.NewClient(&redis.Options{Addr: c.Addrs()[1]})
	defer replica.Close()
	if err := c.CutReplication(1); err != nil {
		t.Fatal(err)
	}
	if err := primary.Set(ctx, "while-cut", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if _, err := replica.Get(ctx, "while-cut").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("the replica has a write made while its link was cut (%v)", err)
	}
	if err := c.HealReplication(1); err != nil {
		t.Fatal(err)
	}
	err := until(ctx, "the healed replica has the write", func() (bool, string) {
		v, err := replica.Get(ctx, "while-cut").Result()
		return v == "1", fmt.Sprint(err)
	})
	if err != nil {
		t.Error(err)
	}
}

// TestPauseAndRestart: a paused node stops answering and answers again
// once resumed; a crashed replica comes back on its port, empty.
func TestPauseAndRestart(t *testing.T) {
	c := start(t, Options{Replicas: 1, Sentinels: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli := redis.NewClient(&redis.Options{Addr: c.Addrs()[1], MaxRetries: -1})
	defer cli.Close()
	if err := c.Pause(1); err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err := cli.Ping(pctx).Err()
	pcancel()
	if err == nil {
		t.Error("a paused node answered PING")
	}
	if err := c.Resume(1); err != nil {
		t.Fatal(err)
	}
	if err := cli.Ping(ctx).Err(); err != nil {
		t.Errorf("a resumed node: %v", err)
	}
	if err := c.Crash(1); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := cli.Ping(ctx).Err(); err != nil {
		t.Errorf("a restarted node: %v", err)
	}
}

// TestOptionsRefused: bad options name what is wrong and what is valid.
func TestOptionsRefused(t *testing.T) {
	for _, tt := range []struct {
		opts Options
		want string
	}{
		{Options{Replicas: 9}, "replicas 9: must be 0..4"},
		{Options{Sentinels: -1}, "sentinels -1: must be 1..7"},
		{Options{DownAfter: time.Millisecond}, "down-after 1ms: must be ≥100ms"},
		{Options{Instances: 12}, "instances 12: must be 1..9, with no replicas or sentinels"},
		{Options{Instances: 5, Replicas: 1}, "instances 5: must be 1..9, with no replicas or sentinels"},
		{Options{RedisBin: "/nonexistent/redis-server"}, "install the Debian packages redis-server and redis-sentinel"},
	} {
		if _, err := Start(context.Background(), tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.opts, err, tt.want)
		}
	}
}
