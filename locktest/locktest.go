// Package locktest is the conformance suite for a lock strategy on any
// backend: it drives a locks.Factory over the connections a
// backend.Backend dials, and judges what the grants say and what the
// backend holds, the same way on etcd, ZooKeeper and Redis. A strategy's
// package runs it from its tests on a deployment of its backend:
//
//	func TestConformance(t *testing.T) {
//		locktest.Run(t, locktest.Env{Backend: zkbackend.Backend{}, Endpoints: members.Endpoints(), Strategy: "zk-queue"})
//	}
//
// What it checks, each in its own subtest and namespace (Options.Prefix,
// Env.Root + a random id + "/"):
//
//   - Exclusion: clients with their own connection increment a shared
//     counter under the lock (Connection.ReadCounter, then WriteCounter
//     +1); the final value is the number of increments, no two of them
//     hold the lock at once (checked in process), tokens grow in the order
//     the lock was held, and no holder's key is left after every release.
//   - Tokens: one client's successive grants, and another's after them,
//     have strictly increasing fencing tokens. A strategy that gives none
//     (Grant.Token 0) has nothing to judge: the subtest skips saying so.
//   - StaleUnlock: after holder A's grant is lost (below) and B takes the
//     lock, A's Unlock of its lost grant leaves B's key in place, and A's
//     next Lock works.
//   - Cancel: a Lock whose context ends while it waits returns an error
//     wrapping locks.ErrNotAcquired and leaves no key of its own.
//   - Lost: a grant's Lost channel closes once the grant is lost, and the
//     next Lock works (on a new lease or session, where there is one).
//   - TryLock (for a locks.TryLocker): fails at once with locks.ErrLocked
//     while the lock is held, leaving no key; succeeds once it is free.
//   - SiblingName: a second lock name with the first as a string prefix
//     ("lock0" beside "lock", as job10 beside job1) held while the first
//     is taken and released, and the other way round: neither holder's
//     key is deleted or made again, nor its Lost closed.
//
// A grant is lost the way the backend allows: an Admin that is a
// backend.LeaseRevoker revokes its lease (etcd); otherwise the holder's
// client, which then reaches the members through relays of its own
// (package relay), is cut off until the backend has let the grant's key
// go (a ZooKeeper session expires, a Redis key's expiry passes).
//
// The keys are read through the Admin's backend.KeyLister: a lock's keys
// are Options.Key() and the keys under Options.Key()+"/"; those that are
// ephemeral (backend.Key) are its holders' and waiters', while durable
// ones (a ZooKeeper queue's parent node, a Redis token counter) are the
// lock's own and stay.
//
// What only one backend can tell (etcd's wire inspection, a key's create
// revision as its token, a shared lease) its own suite adds around these
// checks (etcd/locktest, through Env.OnGrant, Subtests and Suite).
package locktest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/locks"
)

// Env is where and how the suite runs.
type Env struct {
	// Backend dials the lock clients' connections and the suite's admin
	// (required).
	Backend backend.Backend
	// Endpoints are the members' client endpoints (required).
	Endpoints []string
	// Factory makes the strategy's Lockers; or Strategy names a
	// registered one, whose backend must be Backend's (one of the two is
	// required).
	Factory  locks.Factory
	Strategy string
	// Root is the key prefix under which each subtest makes its own
	// namespace, Root + <random id> + "/" (default "/locktest/").
	Root string
	// TTL is the lease, session or key TTL given to the Lockers (default
	// 3 s: short, since Lost and StaleUnlock wait for it to pass, with
	// some margin for a loaded machine under -race).
	TTL time.Duration
	// Clients and Rounds size the exclusion check: Clients clients each
	// take the lock Rounds times (defaults 4 and 8).
	Clients, Rounds int
	// Timeout bounds each subtest (default 60 s).
	Timeout time.Duration
	// OnGrant, when set, judges every grant MustLock takes further, with
	// what only the backend's own suite knows (etcd: the token is the
	// key's create revision).
	OnGrant func(s *Suite, g *locks.Grant)
}

func (e Env) withDefaults() Env {
	if e.Root == "" {
		e.Root = "/locktest/"
	}
	if e.TTL == 0 {
		e.TTL = 3 * time.Second
	}
	if e.Clients == 0 {
		e.Clients = 4
	}
	if e.Rounds == 0 {
		e.Rounds = 8
	}
	if e.Timeout == 0 {
		e.Timeout = 60 * time.Second
	}
	return e
}

// resolve says what a caller left out or got wrong, and fills Factory
// from Strategy.
func (e Env) resolve() (Env, error) {
	switch {
	case e.Backend == nil:
		return e, errors.New("locktest: Env.Backend is nil: give the backend the strategy runs on (etcd.Backend, redisbackend.Backend, zkbackend.Backend)")
	case len(e.Endpoints) == 0:
		return e, errors.New("locktest: Env.Endpoints is empty: give the members' client endpoints")
	case e.Factory != nil:
		return e, nil
	case e.Strategy == "":
		return e, errors.New("locktest: Env.Factory is nil and Env.Strategy empty: give the strategy's factory or its registered name")
	}
	st, err := locks.Lookup(e.Strategy)
	if err != nil {
		return e, fmt.Errorf("locktest: Env.Strategy: %w", err)
	}
	if st.Backend != e.Backend.Name() {
		return e, fmt.Errorf("locktest: strategy %s runs on %s, not on Env.Backend's %s", st.Name, st.Backend, e.Backend.Name())
	}
	e.Factory = st.New
	return e, nil
}

// Subtest is one check of the suite, by name: a backend's own suite
// runs these beside its own.
type Subtest struct {
	Name  string
	Check func(*Suite)
}

// Subtests are the suite's checks that mean the same on every backend,
// in order.
func Subtests() []Subtest {
	return []Subtest{
		{"Exclusion", (*Suite).Exclusion},
		{"Tokens", (*Suite).Tokens},
		{"StaleUnlock", (*Suite).StaleUnlock},
		{"Cancel", (*Suite).Cancel},
		{"Lost", (*Suite).Lost},
		{"TryLock", (*Suite).TryLock},
		{"SiblingName", (*Suite).SiblingName},
	}
}

// Run runs the whole suite under go test, each check a subtest.
func Run(t *testing.T, env Env) {
	t.Helper()
	env, err := env.resolve()
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range Subtests() {
		t.Run(st.Name, func(t *testing.T) { st.Check(NewSuite(t, env)) })
	}
}

// Check runs the whole suite outside go test and returns what failed and
// what was skipped, with why: Run for programs (a catalogue of buggy
// locks that must each be caught) and for tests that assert a strategy's
// known failures rather than fail on them.
func Check(env Env) Result {
	env, err := env.resolve()
	if err != nil {
		return Result{Failures: []Failure{{Subtest: "setup", Message: err.Error()}}}
	}
	var out Result
	for _, st := range Subtests() {
		out.add(Record(st.Name, func(t T) { st.Check(NewSuite(t, env)) }))
	}
	return out
}

// T is the part of *testing.T the suite uses: Run passes go test's, and
// Check its own, which collects failures instead of failing a test.
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Fatal(args ...any)
	Logf(format string, args ...any)
	Skip(args ...any)
	Failed() bool
	Cleanup(func())
}
