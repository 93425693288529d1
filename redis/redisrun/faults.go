package redisrun

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
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
	// PrimaryPause freezes the primary (SIGSTOP) right after a grant its
	// replicas have (WAIT), until the Sentinels have promoted a replica,
	// and then wakes it (SIGCONT): a primary that stopped answering
	// without closing a connection (a long GC or VM pause), whose clients'
	// commands wait in its sockets, and which is a primary of its own once
	// more until the Sentinels demote it.
	PrimaryPause = "primary-pause"
	// InstanceCrash kills one Redlock instance that holds the current
	// grant's key, for the rest of the run.
	InstanceCrash = "instance-crash"
	// InstanceRestartEmpty kills a Redlock instance that holds the current
	// grant's key and starts it again at once with no data (no
	// persistence), after every grant: the case Redlock's critics
	// describe, without the delayed restart its description asks for.
	InstanceRestartEmpty = "instance-restart-empty"
	// BareMajorityRestart is the case Redlock's critics describe
	// (Kleppmann, "How to do distributed locking"), with its partition
	// per client, as there: every client's links to two of the five
	// instances are cut, so the next holder wins only the other three
	// (cutClients says when each is cut). Then one of those three is
	// killed and started again with no data, and the links heal. A
	// challenger then wins the restarted instance and the two the holder
	// never had.
	BareMajorityRestart = "bare-majority-restart"
	// PauseHolder freezes the holder's process right after a grant (a GC
	// or VM pause, etcd's pause-client) for 1.5 × the key's TTL: the key
	// expires, a waiter is granted it, and the frozen holder wakes
	// believing it holds: the pause of Kleppmann's "How to do distributed
	// locking", which no lock prevents and only a fencing token makes
	// harmless.
	PauseHolder = "holder-pause"
)

// PauseHolderTTL is the key's TTL under PauseHolder when the spec sets
// none, as a scenario's lease_ttl is for etcd: the pause outlasts it, and
// the key must expire while the others still ask, within DefaultDuration.
const PauseHolderTTL = 5 * time.Second

// faultSpec is a fault: what the nemesis does, and what each strategy
// it has a meaning for is expected to do under it (beyond
// verdict.Baseline), as a scenario's expect block says for etcd.
type faultSpec struct {
	// run waits for the fault's moment until asking ends, and acts
	// within ctx (the run's).
	run    func(ctx, asking context.Context, w *world) error
	expect map[string]map[string]verdict.Verdict
}

var (
	safe   = map[string]verdict.Verdict{verdict.Exclusion: verdict.Pass, verdict.Fencing: verdict.Pass}
	paused = map[string]verdict.Verdict{verdict.Exclusion: verdict.Fail, verdict.Fencing: verdict.Pass}
	faults = map[string]faultSpec{
		NoFault: {func(context.Context, context.Context, *world) error { return nil },
			map[string]map[string]verdict.Verdict{SetNX: safe, Redlock: safe}},
		PrimaryCrash: {func(ctx, asking context.Context, w *world) error { return w.crashPrimary(ctx, asking, false) },
			map[string]map[string]verdict.Verdict{SetNX: safe}},
		PrimaryPause: {func(ctx, asking context.Context, w *world) error { return w.pausePrimary(ctx, asking) },
			map[string]map[string]verdict.Verdict{SetNX: safe}},
		// The double grant is a race (the new holder must be granted
		// before the old one's next renewal, within TTL/3): counted, not
		// asserted. The token given twice is certain.
		PrimaryCrashUnreplicated: {func(ctx, asking context.Context, w *world) error { return w.crashPrimary(ctx, asking, true) },
			map[string]map[string]verdict.Verdict{SetNX: {verdict.Exclusion: verdict.Any, verdict.Fencing: verdict.Fail}}},
		InstanceCrash: {func(ctx, asking context.Context, w *world) error { return w.crashInstances(ctx, asking, false) },
			map[string]map[string]verdict.Verdict{Redlock: safe}},
		// Whether an empty restart lets a second client win a majority
		// depends on how many instances the holder won: counted.
		InstanceRestartEmpty: {func(ctx, asking context.Context, w *world) error { return w.crashInstances(ctx, asking, true) },
			map[string]map[string]verdict.Verdict{Redlock: {verdict.Exclusion: verdict.Any, verdict.Fencing: verdict.Pass}}},
		// Without the delayed restart the Redlock description asks for, a
		// second majority forms while the first holder holds.
		BareMajorityRestart: {func(ctx, asking context.Context, w *world) error { return w.bareMajorityRestart(ctx, asking) },
			map[string]map[string]verdict.Verdict{Redlock: {verdict.Exclusion: verdict.Fail, verdict.Fencing: verdict.Pass}}},
		// The frozen holder holds on past its key, on either lock.
		// redis-setnx's tokens still grow (no failover), and would fence
		// it; Redlock's grants carry none, so its fencing has nothing to
		// judge.
		PauseHolder: {func(ctx, asking context.Context, w *world) error { return w.pauseHolder(ctx, asking) },
			map[string]map[string]verdict.Verdict{SetNX: paused, Redlock: paused}},
	}
)

// Expect is what lock is expected to do under fault, check by check:
// verdict.Baseline overlaid with the fault's expectations, without the
// checks left unjudged ("any"); nil when the fault has no meaning for it.
func Expect(lock, fault string) map[string]verdict.Verdict {
	e, ok := faults[fault].expect[lock]
	if !ok {
		return nil
	}
	out := maps.Clone(verdict.Baseline)
	maps.Copy(out, e)
	maps.DeleteFunc(out, func(_ string, v verdict.Verdict) bool { return v == verdict.Any })
	return out
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

// LocksFor lists the strategies a fault has a meaning for, sorted.
func LocksFor(fault string) []string { return slices.Sorted(maps.Keys(faults[fault].expect)) }

// FaultsFor lists the faults that have a meaning for a strategy.
func FaultsFor(lock string) []string {
	var out []string
	for _, n := range FaultNames() {
		if _, ok := faults[n].expect[lock]; ok {
			out = append(out, n)
		}
	}
	return out
}

// nemesis runs the spec's fault; the end of the asking (or of the run)
// before its moment came is not an error.
func (w *world) nemesis(ctx, asking context.Context) error {
	err := faults[w.spec.Fault].run(ctx, asking, w)
	if asking.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return nil
	}
	return err
}

// fault records name on target around do, as the etcd nemesis does: an
// invoke, then ok, or fail with do's error.
func (w *world) fault(name, target string, do func() error) error {
	return w.faultOn(history.Fault{Fault: name, Target: target, Resolved: target}, do)
}

// faultOn is fault with a target resolved apart (a role: "holder").
func (w *world) faultOn(f history.Fault, do func() error) error {
	v := history.FaultValue(f)
	w.record(history.Event{Process: history.NemesisProcess, Type: history.Invoke, F: history.FFault, Value: v})
	err := do()
	e := history.Event{Process: history.NemesisProcess, Type: history.OK, F: history.FFault, Value: v}
	if err != nil {
		e.Type, e.Error = history.Fail, err.Error()
	}
	w.record(e)
	if err != nil {
		return fmt.Errorf("%s on %s: %w", f.Fault, f.Resolved, err)
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

// settled waits out settle, or returns the asking's end.
func settled(asking context.Context) error {
	select {
	case <-asking.Done():
		return asking.Err()
	case <-time.After(settle):
		return nil
	}
}

// crashPrimary kills node 0 right after a grant, with every replica's
// link cut before that grant (unreplicated) or after WAIT confirmed the
// replicas have it, and waits for the Sentinels' failover. The old
// primary stays down: started again empty it would be a primary of its
// own until the Sentinels demote it, a second fault.
func (w *world) crashPrimary(ctx, asking context.Context, unreplicated bool) error {
	if err := settled(asking); err != nil {
		return err
	}
	old, err := w.dep.Primary(ctx)
	if err != nil {
		return err
	}
	replicas := len(w.dep.Addrs()) - 1
	if unreplicated {
		err = w.cutBeforeAGrant(ctx, asking, replicas)
	} else {
		err = w.replicatedGrant(ctx, asking, old, replicas)
	}
	if err != nil {
		return err
	}
	return w.fault("redis-crash-primary", "member:0", func() error {
		if err := w.dep.Crash(0); err != nil {
			return err
		}
		for i := 1; i <= replicas && unreplicated; i++ {
			_ = w.dep.HealReplication(i) // the links now lead to a dead node
		}
		_, err := w.waitFailover(ctx, old)
		return err
	})
}

// pausePrimary freezes node 0 right after a grant every replica has,
// waits for the Sentinels' failover and wakes it; the fault's span is the
// pause.
func (w *world) pausePrimary(ctx, asking context.Context) error {
	if err := settled(asking); err != nil {
		return err
	}
	old, err := w.dep.Primary(ctx)
	if err != nil {
		return err
	}
	if err := w.replicatedGrant(ctx, asking, old, len(w.dep.Addrs())-1); err != nil {
		return err
	}
	return w.fault("redis-pause-primary", "member:0", func() error {
		if err := w.dep.Pause(0); err != nil {
			return err
		}
		_, err := w.waitFailover(ctx, old)
		return errors.Join(err, w.dep.Resume(0))
	})
}

// pauseHolder freezes the holder of the first grant after settle for
// 1.5 × TTL, recording the pause on its process as the etcd runner does;
// the client is thawed on every path out.
func (w *world) pauseHolder(ctx, asking context.Context) error {
	g, err := w.nextGrant(asking, time.Now().Add(settle))
	if err != nil {
		return err
	}
	f := w.frozen[g.client]
	err = w.faultOn(history.Fault{Fault: "redis-pause-holder", Target: "holder", Resolved: "client:" + strconv.Itoa(g.client)}, func() error {
		f.stop()
		w.record(history.Event{Process: int32(g.client), Type: history.OK, F: history.FPause, Lock: "lock"})
		select {
		case <-ctx.Done():
		case <-time.After(w.spec.TTL * 3 / 2):
		}
		w.record(history.Event{Process: int32(g.client), Type: history.OK, F: history.FResume, Lock: "lock"})
		f.thaw()
		return nil
	})
	return errors.Join(err, ctx.Err())
}

// failoverWait bounds the wait for the Sentinels' failover (2–6 s here):
// one that never comes is an error, not a run that hangs.
const failoverWait = 30 * time.Second

// waitFailover waits, at most failoverWait, for a primary other than old.
func (w *world) waitFailover(ctx context.Context, old string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, failoverWait)
	defer cancel()
	return w.dep.WaitFailover(ctx, old)
}

// replicatedGrant waits for a grant and for WAIT to confirm that every
// replica has it.
func (w *world) replicatedGrant(ctx, asking context.Context, primary string, replicas int) error {
	if _, err := w.nextGrant(asking, time.Now()); err != nil {
		return err
	}
	cli := redis.NewClient(&redis.Options{Addr: primary})
	defer cli.Close()
	n, err := cli.Wait(ctx, replicas, 2*time.Second).Result()
	if err != nil || int(n) < replicas {
		if err == nil {
			err = errors.New("too few")
		}
		return fmt.Errorf("WAIT for the grant's replication: %d of %d replicas: %w", n, replicas, err)
	}
	return nil
}

// cutBeforeAGrant cuts every replica's link at a release (whose delete
// the replicas then have, so that they hold no stale key), and returns
// after the next grant if no replica has it. A waiter may win the lock
// before the cut takes effect (it asks every 25 ms): then the links are
// healed and it tries again at the next release.
func (w *world) cutBeforeAGrant(ctx, asking context.Context, replicas int) error {
	replication := func(on bool) error {
		name, do := "redis-heal-replication", w.dep.HealReplication
		if on {
			name, do = "redis-cut-replication", w.dep.CutReplication
		}
		return w.fault(name, "replicas", func() error {
			for i := 1; i <= replicas; i++ {
				if err := do(i); err != nil {
					return err
				}
			}
			return nil
		})
	}
	for {
		g, err := w.grantAfterCut(asking, replication)
		if err != nil {
			return err
		}
		if !w.anyReplicaHas(ctx, g) {
			return nil
		}
		if err := replication(false); err != nil {
			return err
		}
	}
}

// grantAfterCut waits for a release, cuts (cut(true)) and returns the
// first grant made since that release: one made before the cut took
// effect is among them, for the caller to tell apart. When the asking
// ends first, the cut is healed (cut(false)), for the history.
func (w *world) grantAfterCut(asking context.Context, cut func(on bool) error) (grantSeen, error) {
	select {
	case <-asking.Done():
		return grantSeen{}, asking.Err()
	case <-w.nextRelease():
	}
	since := w.lastRelease()
	if err := cut(true); err != nil {
		return grantSeen{}, err
	}
	g, err := w.nextGrant(asking, since)
	if err != nil {
		return grantSeen{}, errors.Join(err, cut(false))
	}
	return g, nil
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
func (w *world) crashInstances(ctx, asking context.Context, restart bool) error {
	since := time.Now().Add(settle)
	for {
		g, err := w.nextGrant(asking, since)
		if err != nil {
			return err
		}
		held := w.instancesHolding(ctx, g.key)
		if len(held) == 0 {
			return fmt.Errorf("no instance holds %s", g.key)
		}
		i := held[0]
		if !restart {
			return w.fault("redis-crash-instance", "member:"+strconv.Itoa(i), func() error { return w.dep.Crash(i) })
		}
		if err := w.restartEmpty(ctx, i); err != nil {
			return err
		}
		since = time.Now()
	}
}

// bareMajorityRestart is BareMajorityRestart: every client is cut off
// from two instances (cutClients), so the next grant is on exactly the
// other three. One of those is restarted empty and every link heals.
func (w *world) bareMajorityRestart(ctx, asking context.Context) error {
	if err := settled(asking); err != nil {
		return err
	}
	cutOff, err := w.cutClients(ctx, asking)
	if err != nil {
		return err
	}
	heal := func() error { return w.setLinks(w.clients(-1), cutOff, false) }
	g, err := w.nextGrant(asking, time.Now())
	if err != nil {
		return errors.Join(err, heal())
	}
	held := slices.DeleteFunc(w.instancesHolding(ctx, g.key), func(i int) bool { return slices.Contains(cutOff, i) })
	if len(held) == 0 {
		return errors.Join(fmt.Errorf("client %d's grant, cut off from instances %v, is on none of the others", g.client, cutOff), heal())
	}
	return errors.Join(w.restartEmpty(ctx, held[0]), heal())
}

// cutClients cuts every client off from two instances, at moments when
// none of them has a key there, and returns those two. A client cut off
// while it had a key on one (a grant, or a failed attempt between its SET
// and its release) could not delete it there, and the key would stand in
// a later challenger's way until it expired. So the others are cut while
// one holder has the key on both, and the holder at its release, while it
// waits its think before it asks again. When something comes between
// (the holder released around the first cut, or someone was granted
// around the second), the cut heals and it begins again.
func (w *world) cutClients(ctx, asking context.Context) ([]int, error) {
	for {
		holder, hold := w.holding()
		cutOff := w.holderInstances(ctx)
		if holder < 0 || len(cutOff) < 2 { // no one holds: wait for a grant
			if _, err := w.nextGrant(asking, time.Now()); err != nil {
				return nil, err
			}
			continue
		}
		cutOff = cutOff[len(cutOff)-2:]
		if err := w.setLinks(w.clients(holder), cutOff, true); err != nil {
			return nil, err
		}
		released := w.nextRelease()
		if h, k := w.holding(); h == holder && k == hold {
			select {
			case <-asking.Done():
				return nil, errors.Join(asking.Err(), w.setLinks(w.clients(holder), cutOff, false))
			case <-released:
			}
			if h, k := w.holding(); h < 0 && k == hold {
				if err := w.setLinks([]int{holder}, cutOff, true); err != nil {
					return nil, err
				}
				if h, k := w.holding(); h < 0 && k == hold {
					return cutOff, nil
				}
				holder = -1 // a grant came around its cut: heal every client
			}
		}
		if err := w.setLinks(w.clients(holder), cutOff, false); err != nil {
			return nil, err
		}
	}
}

// holderInstances are the instances on which the lock's key has the
// value a majority has: the holder's, if one holds.
func (w *world) holderInstances(ctx context.Context) []int {
	values := w.valuesOn(ctx, w.lockOptions().Key())
	count := map[string]int{}
	for _, v := range values {
		count[v]++
	}
	var out []int
	for i, v := range values {
		if v != "" && count[v] >= w.quorum() {
			out = append(out, i)
		}
	}
	return out
}

// clients are every client but except (-1 for none).
func (w *world) clients(except int) []int {
	var out []int
	for id := range w.links {
		if id != except {
			out = append(out, id)
		}
	}
	return out
}

// setLinks cuts (on) or heals the links of clients to instances, as one
// fault.
func (w *world) setLinks(clients, instances []int, on bool) error {
	var ids, members, addrs []string
	for _, id := range clients {
		ids = append(ids, strconv.Itoa(id))
	}
	for _, i := range instances {
		members = append(members, "member:"+strconv.Itoa(i))
		addrs = append(addrs, w.dep.Addrs()[i])
	}
	name := "redis-heal-clients"
	if on {
		name = "redis-partition-clients"
	}
	f := history.Fault{Fault: name, Target: "clients:" + strings.Join(members, ","),
		Resolved: "clients:" + strings.Join(ids, ",") + ":" + strings.Join(members, ",")}
	return w.faultOn(f, func() error {
		for _, id := range clients {
			w.links[id].set(on, addrs...)
		}
		return nil
	})
}

// valuesOn is key's value on each instance ("" where it has none or did
// not answer).
func (w *world) valuesOn(ctx context.Context, key string) []string {
	var out []string
	for _, a := range w.dep.Addrs() {
		cli := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		v, _ := cli.Get(ctx, key).Result()
		cli.Close()
		out = append(out, v)
	}
	return out
}

// restartEmpty kills instance i and starts it again at once with no
// data.
func (w *world) restartEmpty(ctx context.Context, i int) error {
	return w.fault("redis-restart-empty", "member:"+strconv.Itoa(i), func() error {
		if err := w.dep.Crash(i); err != nil {
			return err
		}
		return w.dep.Restart(ctx, i)
	})
}

func (w *world) quorum() int { return len(w.dep.Addrs())/2 + 1 }

// instancesHolding are the instances on which key exists.
func (w *world) instancesHolding(ctx context.Context, key string) []int {
	var out []int
	for i, v := range w.valuesOn(ctx, key) {
		if v != "" {
			out = append(out, i)
		}
	}
	return out
}
