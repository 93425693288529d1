package runner

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/chaos"
)

// The runner is the World faults act on; each part is documented on its
// interface in package chaos.
var _ chaos.World = (*runner)(nil)

// chaos.Membership, chaos.MemberFaults and chaos.MemberProcesses: the
// members of the cluster lockbench started, of either kind (none on an
// external cluster, where scenarios with member faults are refused before
// the run; a kind refuses the faults it cannot do).

func (r *runner) Members() int {
	if r.cfg.Cluster == nil {
		return 0
	}
	return r.cfg.Cluster.Count()
}

func (r *runner) Leader() int { return r.cfg.Cluster.Leader() }

func (r *runner) RunningMembers() []int {
	var out []int
	for i := 0; i < r.cfg.Cluster.Count(); i++ {
		if r.cfg.Cluster.Running(i) {
			out = append(out, i)
		}
	}
	return out
}

func (r *runner) CrashMember(i int) error { return r.cfg.Cluster.Crash(i) }

func (r *runner) RestartMember(ctx context.Context, i int) error {
	return r.cfg.Cluster.Restart(ctx, i)
}

func (r *runner) PartitionMember(i int) error { return r.cfg.Cluster.Partition(i) }

func (r *runner) HealMember(i int) error { return r.cfg.Cluster.Heal(i) }

func (r *runner) PauseMember(i int) error { return r.cfg.Cluster.Pause(i) }

func (r *runner) ResumeMember(i int) error { return r.cfg.Cluster.Resume(i) }

// chaos.Queue: where the clients stand, read under each client's lock.

// Clients counts every client of the run, a worker's or not: client:N and
// random name a client of the scenario, which only its worker strikes.
func (r *runner) Clients() int { return r.cfg.Scenario.Clients }

func (r *runner) Holder() int {
	if !r.cfg.Worker.whole() {
		if q := r.storeQueue(); len(q) > 0 {
			return q[0]
		}
		return -1
	}
	best, bestT := -1, int64(-1)
	for _, c := range r.clients {
		c.mu.Lock()
		if c.queue.state == holding && !c.faults.crashed && (best < 0 || c.queue.heldSince < bestT) {
			best, bestT = c.id, c.queue.heldSince
		}
		c.mu.Unlock()
	}
	return best
}

// Holder is, with several lock names, the client that has held its name
// the longest (of any name); Waiters are the queue of one name, in request
// order: the holder's name, or the longest waiter's when none is held
// (focusName). With one name both are that name's, as always. A worker
// reads both from the store (storeQueue).
func (r *runner) Waiters() []int {
	if !r.cfg.Worker.whole() {
		if q := r.storeQueue(); len(q) > 0 {
			return q[1:]
		}
		return nil
	}
	type w struct {
		id   int
		seq  int64
		name string
	}
	var ws []w
	for _, c := range r.clients {
		c.mu.Lock()
		if c.queue.state == waiting && !c.faults.crashed {
			ws = append(ws, w{c.id, c.queue.seq, c.lockName()})
		}
		c.mu.Unlock()
	}
	slices.SortFunc(ws, func(a, b w) int { return cmp.Compare(a.seq, b.seq) })
	var out []int
	if len(ws) == 0 {
		return out
	}
	focus := r.focusName(ws[0].name)
	for _, x := range ws {
		if x.name == focus {
			out = append(out, x.id)
		}
	}
	return out
}

// focusName is the name whose queue waiter:K counts in: the current
// holder's (Holder), else orElse (the longest waiter's).
func (r *runner) focusName(orElse string) string {
	h := r.Holder()
	if h < 0 {
		return orElse
	}
	c := r.client(h)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lockName()
}

// chaos.ClientProcesses, chaos.ClientNetwork and chaos.LockService: each
// client does its own faults (client.go, faults.go).

func (r *runner) CancelWaiting() int {
	// Gather first, then cancel in one sweep: at once, not one by one.
	var cancels []context.CancelFunc
	for _, c := range r.clients {
		c.mu.Lock()
		if c.queue.state == waiting && !c.faults.crashed && c.queue.cancelLock != nil {
			cancels = append(cancels, c.queue.cancelLock)
			c.queue.wait.cancelled = true
		}
		c.mu.Unlock()
	}
	for _, cancel := range cancels {
		cancel()
	}
	return len(cancels)
}

func (r *runner) CrashClient(i int) error { return r.client(i).crash() }

func (r *runner) RestartClient(ctx context.Context, i int) error { return r.client(i).restart(ctx) }

func (r *runner) PauseClient(i int) error { return r.client(i).pause() }

func (r *runner) ResumeClient(i int) error { return r.client(i).resume() }

func (r *runner) IsolateClient(i int, cut bool) error { return r.client(i).isolate(cut) }

func (r *runner) DelayClient(i int, d time.Duration) error { return r.client(i).delay(d, true) }

func (r *runner) DelayAnswers(i int, d time.Duration) error { return r.client(i).delay(d, false) }

func (r *runner) RevokeLease(ctx context.Context, i int) error {
	revoker, canRevoke := r.admin.(backend.LeaseRevoker)
	c := r.client(i)
	c.mu.Lock()
	lease, state, g := c.queue.lastLease, c.queue.state, c.queue.grant
	if g != nil {
		lease = g.Lease
	} else if id := c.waiterLease(); state == waiting && id != 0 {
		// A waiter's key is under its current lease: with several names
		// and a lease per Locker, not its last grant's (another name's).
		lease = id
	}
	target := lease != 0 && (state == holding || state == waiting)
	if target && canRevoke && g != nil && r.obs != nil {
		// The revoke deletes the holder's key: its hold ends only once the
		// observer has recorded that (client.endHold). Marked under c.mu,
		// which the hold's end holds as it looks and records.
		r.held.expect(g)
	}
	c.mu.Unlock()
	if !target {
		return fmt.Errorf("client %d holds no grant, nor waits on the lease of an earlier one, whose lease to revoke", i)
	}
	if !canRevoke {
		return fmt.Errorf("revoke lease of client %d: the %s backend revokes no lease", i, r.cfg.Backend.Name())
	}
	if err := revoker.RevokeLease(ctx, lease); err != nil {
		if g != nil {
			r.held.settle(g) // no delete known to be coming
		}
		return fmt.Errorf("revoke lease of client %d: %w", i, err)
	}
	return nil
}

// chaos.Store and chaos.Peers: the operator's faults, through the
// backend's admin connection (compaction) and members (the rest), when
// they can do them (etcd.Admin, etcd.Members).

func (r *runner) Compact(ctx context.Context, physical bool) error {
	c, ok := r.admin.(interface {
		Compact(ctx context.Context, physical bool) error
	})
	if !ok {
		return r.cannot("compact its store")
	}
	return c.Compact(ctx, physical)
}

// The members do defragment and move-leader, the admin connection
// compacts: neither is a whole chaos.Store, so each is asked for its own
// part.

func (r *runner) Defragment(ctx context.Context, i int) error {
	s, ok := r.cfg.Cluster.(interface {
		Defragment(ctx context.Context, i int) error
	})
	if !ok {
		return r.cannot("defragment a member")
	}
	return s.Defragment(ctx, i)
}

func (r *runner) MoveLeader(ctx context.Context, i int) error {
	s, ok := r.cfg.Cluster.(interface {
		MoveLeader(ctx context.Context, i int) error
	})
	if !ok {
		return r.cannot("move its leader")
	}
	return s.MoveLeader(ctx, i)
}

func (r *runner) ShapePeers(i int, delay, jitter time.Duration, drop float64) error {
	p, ok := r.cfg.Cluster.(chaos.Peers)
	if !ok {
		return r.cannot("shape its peer traffic")
	}
	return p.ShapePeers(i, delay, jitter, drop)
}

func (r *runner) ReplaceMember(ctx context.Context, i int) error {
	p, ok := r.cfg.Cluster.(chaos.Peers)
	if !ok {
		return r.cannot("replace a member")
	}
	return p.ReplaceMember(ctx, i)
}

func (r *runner) CatchUpBySnapshot(ctx context.Context, i int) error {
	p, ok := r.cfg.Cluster.(chaos.Peers)
	if !ok {
		return r.cannot("catch a member up by snapshot")
	}
	return p.CatchUpBySnapshot(ctx, i)
}

func (r *runner) CutReplication(cut bool) error {
	p, ok := r.cfg.Cluster.(chaos.Replication)
	if !ok {
		return r.cannot("cut a replication link")
	}
	return p.CutReplication(cut)
}

func (r *runner) JumpClock(i int, by time.Duration) error {
	c, ok := r.cfg.Cluster.(chaos.Clocks)
	if !ok {
		return r.cannot("move a member's clock")
	}
	return c.JumpClock(i, by)
}

// cannot is the error of a fault the run's backend or members cannot do.
func (r *runner) cannot(what string) error {
	return fmt.Errorf("the %s backend's deployment cannot %s", r.cfg.Backend.Name(), what)
}
