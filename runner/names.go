package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/scenarios"
)

// lockNames are the names a workload's clients contend for: the one
// locks.DefaultName for a single lock (exactly the history of before
// names), else job1…jobN — so that, from ten names on, job1 is a string
// prefix of job10 and a strategy that lists one name's waiters by a bare
// key prefix counts another's (the prefix bug, mutants' queue-prefix).
func lockNames(n int) []string {
	if n <= 1 {
		return []string{locks.DefaultName}
	}
	out := make([]string, n)
	for i := range out {
		out[i] = "job" + strconv.Itoa(i+1)
	}
	return out
}

// nameOfKey is the lock name a strategy's key belongs to: every strategy
// derives its keys from locks.Options.Key (prefix + "locks/" + name, then
// "/" and a waiter's own part for the key-per-waiter ones), so the name is
// the path segment after "locks/". A key of no name reads as the default.
func nameOfKey(prefix, key string) string {
	rest, ok := strings.CutPrefix(key, prefix+"locks/")
	if !ok {
		return locks.DefaultName
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

// nameOfKey is the lock name of key in this run: with one name always
// locks.DefaultName, whatever a strategy names its keys (as before names),
// else the name its path says (nameOfKey).
func (r *runner) nameOfKey(key string) string {
	if r.cfg.Scenario.Workload.LockCount() <= 1 {
		return locks.DefaultName
	}
	return nameOfKey(r.cfg.Prefix, key)
}

// namePicker chooses each acquisition's name from the worker's seeded
// stream (scenarios.Workload.Pick): the same seed makes the same picks. A
// single name draws nothing, so a one-lock run's stream (its back-offs)
// is what it was before names.
type namePicker struct {
	names []string
	kind  string
	rng   *rand.Rand
	zipf  *rand.Zipf
	next  int // round-robin's next index
}

func newNamePicker(names []string, w scenarios.Workload, id int, rng *rand.Rand) *namePicker {
	p := &namePicker{names: names, rng: rng}
	pick := w.PickOf()
	p.kind = pick.Kind
	switch {
	case len(names) <= 1:
	case pick.Kind == scenarios.PickZipf:
		p.zipf = rand.NewZipf(rng, pick.S, 1, uint64(len(names)-1))
	case pick.Kind == scenarios.PickRoundRobin:
		p.next = id % len(names)
	}
	return p
}

// pick is the name of the next acquisition.
func (p *namePicker) pick() string {
	n := len(p.names)
	switch {
	case n == 1:
		return p.names[0]
	case p.zipf != nil:
		return p.names[p.zipf.Uint64()]
	case p.kind == scenarios.PickRoundRobin:
		i := p.next
		p.next = (p.next + 1) % n
		return p.names[i]
	default:
		return p.names[p.rng.IntN(n)]
	}
}

// maxLockers is how many Lockers a client keeps: making one for a name
// past it closes the one used longest ago, as a service makes a lock
// object per job and drops it. Each kept Locker may keep watches open
// (queue keeps one on its own key), so with 1,000 names a client that
// kept all it used would hold dozens, and 10,000 clients hundreds of
// thousands of watchers on etcd. A shared lease outlives the Locker;
// one that keeps its own lease revokes it, holding nothing. The default
// many-locks scenario's 16 names are all kept.
const maxLockers = 16

// lockerSet is a client's Lockers, one per name it has used lately
// (maxLockers), on its one connection, created as each name is picked,
// and the one lease they share (a Locker that keeps its own lease
// ignores it, and then a client that used k names keeps k leases alive:
// docs/scenarios.md). mu guards the map: the worker adds, faults and the
// end of the run read.
type lockerSet struct {
	names []string
	// session is what the Lockers share (etcd: one lease), closed after
	// them.
	session backend.Session
	// make creates the Locker of a name on the client's connection.
	make func(ctx context.Context, name string) (locks.Locker, error)

	mu     sync.Mutex
	byName map[string]locks.Locker
	// order is byName's names, the one used longest ago first.
	order []string
	// dead: the client crashed; a Locker made after that is not kept (it
	// is closed, or killed when it is a process of its own).
	dead bool
}

// get is name's Locker, made on first use; a Locker that could not be
// made, or any once the client has crashed, is one whose every Lock fails
// with why (nothing was written, so certainly not acquired).
func (s *lockerSet) get(ctx context.Context, name string) locks.Locker {
	s.mu.Lock()
	l, ok := s.byName[name]
	dead := s.dead
	if ok {
		s.touch(name)
	}
	s.mu.Unlock()
	if dead {
		return failingLocker{fmt.Errorf("%w: lock %s: the client has crashed", locks.ErrNotAcquired, name)}
	}
	if ok {
		return l
	}
	l, err := s.make(ctx, name)
	if err != nil {
		return failingLocker{fmt.Errorf("%w: lock %s: %w", locks.ErrNotAcquired, name, err)}
	}
	s.mu.Lock()
	if s.dead {
		s.mu.Unlock()
		if p, ok := l.(locks.Process); ok {
			p.Kill()
		}
		return failingLocker{fmt.Errorf("%w: lock %s: the client has crashed", locks.ErrNotAcquired, name)}
	}
	s.add(name, l)
	old := s.evict()
	s.mu.Unlock()
	if old != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
		old.Close(cctx)
		cancel()
	}
	return l
}

// add keeps l as name's Locker; s.mu held (or s not yet shared).
func (s *lockerSet) add(name string, l locks.Locker) {
	if s.byName == nil {
		s.byName = map[string]locks.Locker{}
	}
	s.byName[name] = l
	s.order = append(s.order, name)
}

// touch moves name to the end of order, as the one used last; s.mu held.
func (s *lockerSet) touch(name string) {
	if i := slices.Index(s.order, name); i >= 0 {
		s.order = append(slices.Delete(s.order, i, i+1), name)
	}
}

// evict forgets the Locker used longest ago when the set holds more than
// maxLockers, and returns it for the caller to close (nil: none); s.mu
// held. The one just added is the last used, so it is never the one.
func (s *lockerSet) evict() locks.Locker {
	if len(s.order) <= maxLockers {
		return nil
	}
	name := s.order[0]
	l := s.byName[name]
	s.order = s.order[1:]
	delete(s.byName, name)
	return l
}

// all are the Lockers kept, the one used longest ago first; kill marks
// the set dead first (a crash), so that none is made after.
func (s *lockerSet) all(kill bool) []locks.Locker {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dead = s.dead || kill
	out := make([]locks.Locker, len(s.order))
	for i, n := range s.order {
		out[i] = s.byName[n]
	}
	return out
}

// processes runs f on every Locker that is a process of its own (an
// adapter's), and joins the errors.
func (s *lockerSet) processes(f func(locks.Process) error) error {
	var errs []error
	for _, l := range s.all(false) {
		if p, ok := l.(locks.Process); ok {
			if err := f(p); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// close ends every Locker's session (revoking its lease), each within
// its own timeout: one slow close does not leave the others' leases to
// expire.
func (s *lockerSet) close(timeout time.Duration) {
	for _, l := range s.all(false) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		l.Close(ctx)
		cancel()
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s.session.Close(ctx)
}

// failingLocker is a name whose Locker could not be made: each Lock says
// why.
type failingLocker struct{ err error }

func (f failingLocker) Lock(context.Context) (*locks.Grant, error) { return nil, f.err }
func (f failingLocker) Unlock(context.Context, *locks.Grant) error { return f.err }
func (f failingLocker) Close(context.Context) error                { return nil }

// pickName makes name the client's current one (its events' lock, its
// queue position's, and the lease its waiter key is under) and returns
// name's Locker.
func (c *client) pickName(ctx context.Context, gen int, lockers *lockerSet, name string) locks.Locker {
	c.mu.Lock()
	if gen == c.worker.gen {
		c.setNameLocked(name)
	}
	c.mu.Unlock()
	return lockers.get(ctx, name)
}

// setNameLocked sets the current name; c.mu held.
func (c *client) setNameLocked(name string) { c.queue.name = name }

// waiterLease is the lease the client's waiter key for its current name
// is under: the client's shared lease once its Lockers have taken one
// (etcdlocks.ClientLease), else the one its connection was granted while
// that name was current (a Locker with a lease of its own); 0 when
// neither is known. c.mu held.
func (c *client) waiterLease() int64 {
	if set := c.conn.lockers; set != nil && set.session != nil {
		if id := set.session.Lease(); id != 0 {
			return id
		}
	}
	return c.queue.leases[c.lockName()]
}

// lockName is the client's current (or last) lock name; c.mu held.
func (c *client) lockName() string {
	if c.queue.name == "" {
		return locks.DefaultName
	}
	return c.queue.name
}
