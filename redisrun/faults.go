package redisrun

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/history"
)

// Fault names.
const (
	NoFault = "none"
	// PrimaryCrash kills the primary (SIGKILL) right after a grant that
	// its replicas have (WAIT), and lets the Sentinels promote one: the
	// control, a failover that loses nothing.
	PrimaryCrash = "primary-crash"
	// PrimaryCrashUnreplicated cuts every replica's link just after a
	// release, so that the next grant is acknowledged by the primary
	// alone, and kills the primary right after that grant: the promoted
	// replica has never heard of it (issue #31's "primary crash before
	// replication").
	PrimaryCrashUnreplicated = "primary-crash-unreplicated"
	// InstanceCrash kills one Redlock instance that holds the current
	// grant's key, for the rest of the run.
	InstanceCrash = "instance-crash"
	// InstanceRestartEmpty kills a Redlock instance that holds the current
	// grant's key and starts it again at once with no data (no
	// persistence), after every grant: the case Redlock's critics
	// describe, without the delayed restart its description asks for.
	InstanceRestartEmpty = "instance-restart-empty"
)

// faultSpec is a fault: the strategies it has a meaning for and what the
// nemesis does.
type faultSpec struct {
	locks []string
	run   func(ctx context.Context, w *world) error
}

var faults = map[string]faultSpec{
	NoFault:                  {[]string{SetNX, Redlock}, func(context.Context, *world) error { return nil }},
	PrimaryCrash:             {[]string{SetNX}, func(ctx context.Context, w *world) error { return w.crashPrimary(ctx, false) }},
	PrimaryCrashUnreplicated: {[]string{SetNX}, func(ctx context.Context, w *world) error { return w.crashPrimary(ctx, true) }},
	InstanceCrash:            {[]string{Redlock}, func(ctx context.Context, w *world) error { return w.crashInstances(ctx, false) }},
	InstanceRestartEmpty:     {[]string{Redlock}, func(ctx context.Context, w *world) error { return w.crashInstances(ctx, true) }},
}

// FaultNames lists the faults, sorted.
func FaultNames() []string {
	names := make([]string, 0, len(faults))
	for n := range faults {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// FaultsFor lists the faults that have a meaning for a strategy.
func FaultsFor(lock string) []string {
	var out []string
	for _, n := range FaultNames() {
		if slices.Contains(faults[n].locks, lock) {
			out = append(out, n)
		}
	}
	return out
}

// nemesis runs the spec's fault; a run's end (ctx) before its moment
// came is not an error.
func (w *world) nemesis(ctx context.Context) error {
	err := faults[w.spec.Fault].run(ctx, w)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// fault records name on target around do, as the etcd nemesis does: an
// invoke, then ok, or fail with do's error.
func (w *world) fault(name, target string, do func() error) error {
	v := history.FaultValue(history.Fault{Fault: name, Target: target, Resolved: target})
	w.record(history.Event{Process: history.NemesisProcess, Type: history.Invoke, F: history.FFault, Value: v})
	err := do()
	e := history.Event{Process: history.NemesisProcess, Type: history.OK, F: history.FFault, Value: v}
	if err != nil {
		e.Type, e.Error = history.Fail, err.Error()
	}
	w.record(e)
	if err != nil {
		return fmt.Errorf("%s on %s: %w", name, target, err)
	}
	return nil
}

// nextGrant waits for a grant made after since.
func (w *world) nextGrant(ctx context.Context, since time.Time) (grantSeen, error) {
	for {
		select {
		case <-ctx.Done():
			return grantSeen{}, ctx.Err()
		case g := <-w.grants:
			if g.at.After(since) {
				return g, nil
			}
		}
	}
}

// settle is how long the run goes on before a fault is timed: the
// clients' first grants.
const settle = 500 * time.Millisecond

// crashPrimary kills node 0 right after a grant, with every replica's
// link cut before that grant (unreplicated) or after WAIT confirmed the
// replicas have it, and waits for the Sentinels' failover. The old
// primary stays down: started again empty it would be a primary of its
// own until the Sentinels demote it, a second fault.
func (w *world) crashPrimary(ctx context.Context, unreplicated bool) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(settle):
	}
	old, err := w.dep.Primary(ctx)
	if err != nil {
		return err
	}
	replicas := len(w.dep.Addrs()) - 1
	since := time.Now()
	if unreplicated {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.nextRelease():
		}
		err := w.fault("redis-cut-replication", "replicas", func() error {
			for i := 1; i <= replicas; i++ {
				if err := w.dep.CutReplication(i); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		since = time.Now()
	}
	for {
		g, err := w.nextGrant(ctx, since)
		if err != nil {
			return err
		}
		// A grant whose script ran before the cut took effect may have
		// reached a replica: wait for one none has.
		if !unreplicated || !w.anyReplicaHas(ctx, g) {
			break
		}
	}
	if !unreplicated {
		cli := redis.NewClient(&redis.Options{Addr: old})
		n, err := cli.Wait(ctx, replicas, 2*time.Second).Result()
		cli.Close()
		if err != nil || int(n) < replicas {
			return fmt.Errorf("WAIT before the crash: %d of %d replicas (%v)", n, replicas, err)
		}
	}
	return w.fault("redis-crash-primary", "member:0", func() error {
		if err := w.dep.Crash(0); err != nil {
			return err
		}
		for i := 1; i <= replicas && unreplicated; i++ {
			_ = w.dep.HealReplication(i) // the links now lead to a dead node
		}
		_, err := w.dep.WaitFailover(ctx, old)
		return err
	})
}

// anyReplicaHas reports whether a replica's token counter has reached
// g's token (or cannot be read: then it may have).
func (w *world) anyReplicaHas(ctx context.Context, g grantSeen) bool {
	for _, a := range w.dep.Addrs()[1:] {
		cli := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		n, err := cli.Get(ctx, w.lockOptions().TokenKey()).Int64()
		cli.Close()
		if err != nil && !errors.Is(err, redis.Nil) || n >= g.token {
			return true
		}
	}
	return false
}

// crashInstances kills a Redlock instance holding the key of a grant
// made after the last fault; restart: starts it again at once, empty,
// and does so after every grant; otherwise once, for good.
func (w *world) crashInstances(ctx context.Context, restart bool) error {
	since := time.Now().Add(settle)
	for {
		g, err := w.nextGrant(ctx, since)
		if err != nil {
			return err
		}
		i, err := w.instanceHolding(ctx, g.key)
		if err != nil {
			return err
		}
		target := "member:" + strconv.Itoa(i)
		if !restart {
			return w.fault("redis-crash-instance", target, func() error { return w.dep.Crash(i) })
		}
		err = w.fault("redis-restart-empty", target, func() error {
			if err := w.dep.Crash(i); err != nil {
				return err
			}
			return w.dep.Restart(ctx, i)
		})
		if err != nil {
			return err
		}
		since = time.Now()
	}
}

// instanceHolding is the first instance on which key exists.
func (w *world) instanceHolding(ctx context.Context, key string) (int, error) {
	for i, a := range w.dep.Addrs() {
		cli := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		n, err := cli.Exists(ctx, key).Result()
		cli.Close()
		if err == nil && n == 1 {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no instance holds %s", key)
}
