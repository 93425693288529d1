// Package locktest is the conformance suite for a lock strategy on etcd:
// the checks that mean the same on every backend (package
// github.com/lockbench/lockbench/locktest), run over etcd, with what only
// etcd can tell around them. Any etcd strategy's locks.Factory can be run
// against it from its own package's tests, on an embedded cluster or on
// the user's own:
//
//	func TestConformance(t *testing.T) {
//		if testing.Short() {
//			t.Skip("needs an etcd cluster")
//		}
//		locktest.Run(t, myFactory, locktest.Env{Endpoints: []string{"127.0.0.1:2379"}})
//	}
//
// What it checks, each in its own subtest and namespace:
//
//   - Exclusion, Tokens, StaleUnlock, Cancel, Lost, TryLock and
//     SiblingName, as every backend's suite does (the neutral package's
//     doc says what each asserts), a grant made lost by revoking its
//     lease; and of every grant, as etcd's own, that it carries a Lost
//     channel and a token that is its key's create revision (what an etcd
//     fenced resource compares).
//   - CancelCutOff (with Env.CutOff): a Lock cancelled, and an Unlock whose
//     context ends, while the client is cut off from every member return
//     within the cancel check's bound (check.Options.CancelBound), not when
//     the network comes back (etcd #18082).
//   - SharedLease: two names' Lockers on one connection given one
//     etcdlocks.ClientLease (Options.Lease): closing one leaves the other's
//     grant alone, and, when the grant is under the shared lease, closing
//     the ClientLease closes its Lost and ends its key.
//
// And around every subtest, that nothing outside Options.Prefix is read,
// written or deleted: every request the Lockers' clients send is inspected
// on the wire (keys and ranges of gets, puts, deletes, txns, watches and
// lock-service calls); keys put beside the namespace beforehand must be
// unchanged byte for byte afterwards; and, unless Env.SharedCluster is set,
// a watch on the whole keyspace must see no write outside the namespace.
package locktest

import (
	"errors"
	"testing"
	"time"

	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/locks"
	conformance "github.com/lockbench/lockbench/locktest"
)

// Env is where and how the suite runs.
type Env struct {
	// Endpoints of the etcd cluster (required).
	Endpoints []string
	// Root is the key prefix under which each subtest makes its own
	// namespace, Root + <random id> + "/" (default "/locktest/").
	Root string
	// TTL is the lease TTL given to the Lockers (default 3 s: short, since
	// the Lost and StaleUnlock checks wait for the client to notice a
	// revoked lease, with some margin for a loaded machine under -race).
	TTL time.Duration
	// KeepAlive is the keepalive policy given to the Lockers (default
	// etcdlocks.DefaultKeepAlive).
	KeepAlive etcdlocks.KeepAlive
	// Clients and Rounds size the exclusion check: Clients clients each
	// take the lock Rounds times (defaults 4 and 8).
	Clients, Rounds int
	// Timeout bounds each subtest (default 60 s).
	Timeout time.Duration
	// SharedCluster is set when others may write to the cluster while the
	// suite runs: the whole-keyspace watch is then skipped (the request and
	// sibling-key checks still run).
	SharedCluster bool
	// CutOff runs CancelCutOff, which relays a client's connections through
	// the suite's own TCP relays to cut it off. Off by default: etcd's own
	// concurrency.Mutex and Election fail it (etcd #18082), so a strategy
	// built on them does too, and a suite run should say so only when
	// asked.
	CutOff bool
}

func (e Env) withDefaults() Env {
	if e.Root == "" {
		e.Root = "/locktest/"
	}
	if e.TTL == 0 {
		e.TTL = 3 * time.Second
	}
	if e.KeepAlive == "" {
		e.KeepAlive = etcdlocks.DefaultKeepAlive
	}
	return e
}

// T is the part of *testing.T the suite uses (the neutral suite's).
type T = conformance.T

// Failure is one thing the suite found wrong, under the subtest's name.
type Failure = conformance.Failure

// subtest is one check of the suite, by name.
type subtest struct {
	name string
	f    func(*suite)
}

// subtests are the suite's checks, in order: the neutral ones, with
// etcd's own among them.
func subtests() []subtest {
	var out []subtest
	for _, st := range conformance.Subtests() {
		out = append(out, subtest{st.Name, func(s *suite) { st.Check(s.Suite) }})
		if st.Name == "Cancel" {
			out = append(out, subtest{"CancelCutOff", (*suite).cancelCutOff})
		}
	}
	return append(out, subtest{"SharedLease", (*suite).sharedLease})
}

// errNoEndpoints is the suite's refusal of an Env without a cluster.
var errNoEndpoints = errors.New("locktest: Env.Endpoints is empty")

// Run runs the whole suite against factory.
func Run(t *testing.T, factory locks.Factory, env Env) {
	t.Helper()
	env = env.withDefaults()
	if len(env.Endpoints) == 0 {
		t.Fatal(errNoEndpoints)
	}
	for _, tc := range subtests() {
		t.Run(tc.name, func(t *testing.T) { tc.f(newSuite(t, factory, env)) })
	}
}

// Check runs the whole suite against factory outside go test and returns
// what failed (nil when the strategy conforms). It is Run for programs —
// a catalogue of mutants that must each be caught, or a CLI — that need
// the verdict as a value rather than a failed test.
func Check(factory locks.Factory, env Env) []Failure {
	env = env.withDefaults()
	if len(env.Endpoints) == 0 {
		return []Failure{{Subtest: "setup", Message: "Env.Endpoints is empty"}}
	}
	var out []Failure
	for _, tc := range subtests() {
		r := conformance.Record(tc.name, func(t T) { tc.f(newSuite(t, factory, env)) })
		out = append(out, r.Failures...)
	}
	return out
}
