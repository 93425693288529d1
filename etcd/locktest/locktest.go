// Package locktest is a conformance suite for lock strategies: any
// etcdlocks.Factory can be run against it from its own package's tests, on an
// embedded cluster or on the user's own:
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
//   - Exclusion: clients with their own etcd connection increment a shared
//     counter under the lock (read, write +1); the final value is the number
//     of increments, no two of them hold the lock at once (checked in
//     process), and tokens grow in the order the lock was held.
//   - Tokens: one client's successive grants, and another's after them, have
//     strictly increasing fencing tokens.
//   - StaleUnlock: after holder A's lease is revoked and B takes the lock,
//     A's Unlock of its lost grant leaves B's key in place.
//   - Cancel: a Lock whose context ends while it waits returns an error
//     wrapping locks.ErrNotAcquired and leaves no key under Options.Key().
//   - CancelCutOff (with Env.CutOff): a Lock cancelled, and an Unlock whose
//     context ends, while the client is cut off from every member return
//     within the cancel check's bound (check.Options.CancelBound), not when
//     the network comes back (etcd #18082).
//   - Lost: a grant's Lost channel closes when its lease is revoked, and the
//     next Lock works on a new lease.
//   - TryLock (for a locks.TryLocker): fails at once with locks.ErrLocked
//     while the lock is held, leaving no key; succeeds once it is free.
//   - SiblingName: a second lock name with the first as a string prefix
//     ("lock0" beside "lock", as job10 beside job1) held while the first
//     is taken and released, and the other way round: neither holder's
//     key is deleted or re-created, nor its Lost closed.
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
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/locks"
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

// Run runs the whole suite against factory.
func Run(t *testing.T, factory locks.Factory, env Env) {
	t.Helper()
	env = env.withDefaults()
	if len(env.Endpoints) == 0 {
		t.Fatal("locktest: Env.Endpoints is empty")
	}
	for _, tc := range subtests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSuite(t, factory, env)
			tc.f(s)
		})
	}
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

// subtests are the suite's checks, by name, in order.
var subtests = []struct {
	name string
	f    func(*suite)
}{
	{"Exclusion", (*suite).exclusion},
	{"Tokens", (*suite).tokens},
	{"StaleUnlock", (*suite).staleUnlock},
	{"Cancel", (*suite).cancel},
	{"CancelCutOff", (*suite).cancelCutOff},
	{"Lost", (*suite).lost},
	{"TryLock", (*suite).tryLock},
	{"SiblingName", (*suite).siblingName},
	{"SharedLease", (*suite).sharedLease},
}

// usedPrefixes are the namespaces of this process's earlier subtests: a
// lease of theirs that ends late deletes its keys there, which the
// keyspace watch must not blame on the current subtest.
var usedPrefixes sync.Map

// suite is one subtest's namespace, admin client and checks.
type suite struct {
	t       T
	env     Env
	factory locks.Factory
	ctx     context.Context
	opts    etcdlocks.Options
	admin   *clientv3.Client
	wire    *wireCheck
	// siblings are keys beside the namespace, as they were put.
	siblings []*mvccpb.KeyValue
	// watch sees every write in the keyspace from start on.
	watch clientv3.WatchChan
	start int64
	// lockers are closed before the namespace checks.
	mu      sync.Mutex
	lockers []locks.Locker
	clients []*clientv3.Client
	// closers run after the clients are closed (the relays they dial).
	closers []func()
	wakeups atomic.Int64
}

func newSuite(t T, factory locks.Factory, env Env) *suite {
	ctx, cancel := context.WithTimeout(context.Background(), env.Timeout)
	t.Cleanup(cancel)
	id := randomID()
	s := &suite{t: t, env: env, factory: factory, ctx: ctx}
	s.opts = etcdlocks.Options{Options: locks.Options{Name: locks.DefaultName, Prefix: env.Root + id + "/", TTL: env.TTL, OnWakeup: func() { s.wakeups.Add(1) }}, KeepAlive: env.KeepAlive}
	usedPrefixes.Store(s.opts.Prefix, true)
	s.wire = &wireCheck{prefix: s.opts.Prefix}
	s.admin = s.dial(nil)

	// Keys beside the namespace: the prefix without its slash, keys that
	// sort just before and after it, a sibling namespace with the same
	// stem, and the lock's key under the root instead of the namespace.
	for _, k := range []string{
		env.Root + id,
		env.Root + id + ".",
		env.Root + id + "0",
		env.Root + id + "-sibling/locks/" + locks.DefaultName,
		env.Root + id + "-sibling/locks/" + locks.DefaultName + "/x",
		env.Root + "locks/" + locks.DefaultName + "-" + id,
	} {
		if _, err := s.admin.Put(ctx, k, randomID()); err != nil {
			t.Fatalf("put sibling key %s: %v", k, err)
		}
		resp, err := s.admin.Get(ctx, k)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("read sibling key %s: %v", k, err)
		}
		s.siblings = append(s.siblings, resp.Kvs[0])
		s.start = resp.Header.Revision
	}
	if !env.SharedCluster {
		s.watch = s.admin.Watch(clientv3.WithRequireLeader(ctx), "", clientv3.WithFromKey(), clientv3.WithRev(s.start+1))
	}
	t.Cleanup(s.finish)
	return s
}

func randomID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// dial connects a client; w, when set, inspects its requests.
func (s *suite) dial(w *wireCheck) *clientv3.Client {
	s.t.Helper()
	return s.dialTo(s.env.Endpoints, w)
}

// dialTo connects a client to endpoints; w, when set, inspects its requests.
func (s *suite) dialTo(endpoints []string, w *wireCheck) *clientv3.Client {
	s.t.Helper()
	cfg := clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if w != nil {
		cfg.DialOptions = w.dialOptions()
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		s.t.Fatalf("connect: %v", err)
	}
	s.mu.Lock()
	s.clients = append(s.clients, cli)
	s.mu.Unlock()
	return cli
}

// locker makes a Locker on its own client, whose requests are inspected.
func (s *suite) locker() (locks.Locker, *clientv3.Client) {
	s.t.Helper()
	cli := s.dial(s.wire)
	return s.lockerOn(cli), cli
}

// lockerOn makes a Locker on cli, closed at the suite's end.
func (s *suite) lockerOn(cli *clientv3.Client) locks.Locker {
	s.t.Helper()
	return s.lockerWith(cli, s.opts)
}

// lockerWith makes a Locker of opts (another lock name) on cli, closed at
// the suite's end.
func (s *suite) lockerWith(cli *clientv3.Client, opts etcdlocks.Options) locks.Locker {
	s.t.Helper()
	l, err := s.newLocker(cli, opts)
	if err != nil {
		s.t.Fatalf("new locker for %q: %v", opts.Name, err)
	}
	s.mu.Lock()
	s.lockers = append(s.lockers, l)
	s.mu.Unlock()
	return l
}

// finish closes every Locker, then checks the namespace.
func (s *suite) finish() {
	t := s.t
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, l := range s.lockers {
		if err := l.Close(ctx); err != nil {
			t.Errorf("close locker: %v", err)
		}
	}
	defer func() {
		s.admin.Delete(ctx, s.opts.Prefix, clientv3.WithPrefix())
		for _, kv := range s.siblings {
			s.admin.Delete(ctx, string(kv.Key))
		}
		for _, c := range s.clients {
			c.Close()
		}
		for _, f := range s.closers {
			f()
		}
	}()

	for _, v := range s.wire.violations() {
		t.Errorf("request outside the namespace %s: %s", s.opts.Prefix, v)
	}
	for _, want := range s.siblings {
		resp, err := s.admin.Get(ctx, string(want.Key))
		if err != nil {
			t.Errorf("read sibling key %s: %v", want.Key, err)
			continue
		}
		if len(resp.Kvs) == 0 {
			t.Errorf("sibling key %q outside the namespace was deleted", want.Key)
			continue
		}
		got := resp.Kvs[0]
		if !bytes.Equal(got.Value, want.Value) || got.CreateRevision != want.CreateRevision ||
			got.ModRevision != want.ModRevision || got.Version != want.Version || got.Lease != want.Lease {
			t.Errorf("sibling key %q outside the namespace changed: was %v, is %v", want.Key, want, got)
		}
	}
	if s.watch == nil {
		return
	}
	// A fence write inside the namespace: once the watch has passed it, it
	// has shown every earlier write.
	fence, err := s.admin.Put(ctx, s.opts.Prefix+"fence", "")
	if err != nil {
		t.Errorf("fence write: %v", err)
		return
	}
	for {
		select {
		case wr, ok := <-s.watch:
			if !ok || wr.Err() != nil {
				t.Errorf("keyspace watch ended: %v", wr.Err())
				return
			}
			for _, ev := range wr.Events {
				if ev.Kv.ModRevision > fence.Header.Revision {
					continue
				}
				if k := string(ev.Kv.Key); !strings.HasPrefix(k, s.opts.Prefix) && !earlier(k) {
					t.Errorf("write outside the namespace %s: %s %q at revision %d", s.opts.Prefix, ev.Type, k, ev.Kv.ModRevision)
				}
			}
			if wr.Header.Revision >= fence.Header.Revision {
				return
			}
		case <-ctx.Done():
			t.Errorf("keyspace watch: no event up to revision %d", fence.Header.Revision)
			return
		}
	}
}

func earlier(key string) bool {
	found := false
	usedPrefixes.Range(func(p, _ any) bool {
		found = strings.HasPrefix(key, p.(string))
		return !found
	})
	return found
}

// lockCtx bounds one Lock in the checks that expect it to succeed.
func (s *suite) lockCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.ctx, 10*s.env.TTL+10*time.Second)
}

func (s *suite) mustLock(l locks.Locker) *locks.Grant {
	s.t.Helper()
	ctx, cancel := s.lockCtx()
	defer cancel()
	g, err := l.Lock(ctx)
	if err != nil {
		s.t.Fatalf("Lock: %v", err)
	}
	if g == nil || g.Key == "" || g.Token <= 0 || g.Lost == nil {
		s.t.Fatalf("Lock: incomplete grant %+v", g)
	}
	if !strings.HasPrefix(g.Key, s.opts.Key()) {
		s.t.Fatalf("Lock: key %q is not under Options.Key() %q", g.Key, s.opts.Key())
	}
	// The token is the key's create revision (locks.Grant): a fenced
	// resource compares exactly that, so any other number rejects the
	// rightful holder.
	resp, err := s.admin.Get(ctx, g.Key)
	switch {
	case err != nil:
		s.t.Fatalf("read the grant's key %s: %v", g.Key, err)
	case len(resp.Kvs) == 0:
		s.t.Errorf("Lock: the grant's key %s does not exist right after Lock returned", g.Key)
	case resp.Kvs[0].CreateRevision != g.Token:
		s.t.Errorf("Lock: token %d is not the key's create revision %d: a fenced write would be rejected", g.Token, resp.Kvs[0].CreateRevision)
	}
	return g
}

func (s *suite) mustUnlock(l locks.Locker, g *locks.Grant) {
	s.t.Helper()
	if err := l.Unlock(s.ctx, g); err != nil {
		s.t.Fatalf("Unlock %s: %v", g.Key, err)
	}
}

// lockKeys lists the keys under Options.Key() (the lock's key or queue).
func (s *suite) lockKeys() []*mvccpb.KeyValue {
	s.t.Helper()
	resp, err := s.admin.Get(s.ctx, s.opts.Key(), clientv3.WithPrefix())
	if err != nil {
		s.t.Fatalf("list lock keys: %v", err)
	}
	return resp.Kvs
}

// onlyKey checks that g's key is the only one under Options.Key().
func (s *suite) onlyKey(g *locks.Grant, when string) {
	s.t.Helper()
	kvs := s.lockKeys()
	if len(kvs) != 1 || string(kvs[0].Key) != g.Key || kvs[0].CreateRevision != g.Token {
		var names []string
		for _, kv := range kvs {
			names = append(names, fmt.Sprintf("%s@%d", kv.Key, kv.CreateRevision))
		}
		s.t.Errorf("%s: keys under %s are %v, want only the holder's %s@%d", when, s.opts.Key(), names, g.Key, g.Token)
	}
}

func (s *suite) exclusion() {
	t := s.t
	counter := s.opts.Prefix + "counter"
	var (
		holders atomic.Int32
		mu      sync.Mutex
		tokens  []int64
		wg      sync.WaitGroup
	)
	type worker struct {
		l   locks.Locker
		cli *clientv3.Client
	}
	workers := make([]worker, s.env.Clients)
	for i := range workers {
		workers[i].l, workers[i].cli = s.locker()
	}
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	for i, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fail := func(format string, args ...any) {
				t.Errorf("client %d: "+format, append([]any{i}, args...)...)
				cancel()
			}
			for r := 0; r < s.env.Rounds && ctx.Err() == nil; r++ {
				g, err := w.l.Lock(ctx)
				if err != nil {
					fail("Lock: %v", err)
					return
				}
				if n := holders.Add(1); n != 1 {
					fail("%d holders at once (token %d)", n, g.Token)
				}
				mu.Lock()
				tokens = append(tokens, g.Token)
				mu.Unlock()
				// The critical section: read, write +1.
				resp, err := w.cli.Get(ctx, counter)
				if err != nil {
					fail("read counter: %v", err)
					return
				}
				n := 0
				if len(resp.Kvs) == 1 {
					n, _ = strconv.Atoi(string(resp.Kvs[0].Value))
				}
				if _, err := w.cli.Put(ctx, counter, strconv.Itoa(n+1)); err != nil {
					fail("write counter: %v", err)
					return
				}
				holders.Add(-1)
				if err := w.l.Unlock(ctx, g); err != nil {
					fail("Unlock: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	resp, err := s.admin.Get(s.ctx, counter)
	if err != nil {
		t.Fatalf("read counter: %v", err)
	}
	want := s.env.Clients * s.env.Rounds
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != strconv.Itoa(want) {
		t.Errorf("counter = %v after %d increments under the lock: updates were lost", resp.Kvs, want)
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Errorf("token %d held after token %d: tokens must increase", tokens[i], tokens[i-1])
		}
	}
	if keys := s.lockKeys(); len(keys) != 0 {
		t.Errorf("%d keys left under %s after every release", len(keys), s.opts.Key())
	}
}

func (s *suite) tokens() {
	t := s.t
	a, _ := s.locker()
	b, _ := s.locker()
	var last int64
	for i, l := range []locks.Locker{a, a, a, b, a} {
		g := s.mustLock(l)
		if g.Token <= last {
			t.Errorf("grant %d: token %d after %d: tokens must strictly increase", i, g.Token, last)
		}
		last = g.Token
		s.mustUnlock(l, g)
	}
}

func (s *suite) staleUnlock() {
	t := s.t
	a, _ := s.locker()
	b, _ := s.locker()
	ga := s.mustLock(a)
	// A's lease ends (as if it expired): its key goes with it.
	if _, err := s.admin.Revoke(s.ctx, clientv3.LeaseID(ga.Lease)); err != nil {
		t.Fatalf("revoke A's lease: %v", err)
	}
	gb := s.mustLock(b)
	if gb.Token <= ga.Token {
		t.Errorf("B's token %d is not above A's %d", gb.Token, ga.Token)
	}
	// A, unaware, releases its lost grant: B's key must stay.
	if err := a.Unlock(s.ctx, ga); err != nil {
		t.Logf("A's Unlock of its lost grant: %v", err)
	}
	s.onlyKey(gb, "after the stale Unlock")
	s.mustUnlock(b, gb)
	// A's next Lock works, on a new lease.
	ga2 := s.mustLock(a)
	if ga2.Lease == ga.Lease {
		t.Errorf("A's next grant reuses the revoked lease %x", int64(ga.Lease))
	}
	if ga2.Token <= gb.Token {
		t.Errorf("A's new token %d is not above B's %d", ga2.Token, gb.Token)
	}
	s.mustUnlock(a, ga2)
}

func (s *suite) cancel() {
	t := s.t
	a, _ := s.locker()
	b, _ := s.locker()
	start := time.Now()
	ga := s.mustLock(a)
	// B waits, then gives up, at a deadline (an adapter is told it, and
	// gives up itself) scaled to how long A's uncontended Lock took: 10
	// times that, from 300 ms to 3 s. B must have written its own key by
	// then, so that a lock that leaks it is seen to however slow the
	// machine (mut-leak-on-cancel passed under load when B gave up after
	// a fixed 300 ms, before its key was put).
	wait := min(max(300*time.Millisecond, 10*time.Since(start)), 3*time.Second)
	ctx, cancel := context.WithTimeout(s.ctx, wait)
	g, err := b.Lock(ctx)
	cancel()
	switch {
	case err == nil:
		t.Fatalf("B's Lock returned %+v while A holds the lock", g)
	case !errors.Is(err, locks.ErrNotAcquired):
		t.Errorf("B's cancelled Lock: %v, want an error wrapping ErrNotAcquired", err)
	}
	s.onlyKey(ga, "after a cancelled Lock")
	// A Lock with a context that has already ended.
	ctx, cancel = context.WithCancel(s.ctx)
	cancel()
	if g, err := b.Lock(ctx); err == nil {
		t.Errorf("Lock with an ended context returned %+v", g)
	} else if !errors.Is(err, locks.ErrNotAcquired) {
		t.Errorf("Lock with an ended context: %v, want an error wrapping ErrNotAcquired", err)
	}
	s.onlyKey(ga, "after a Lock with an ended context")
	// B still works.
	s.mustUnlock(a, ga)
	gb := s.mustLock(b)
	s.mustUnlock(b, gb)
}

func (s *suite) lost() {
	t := s.t
	a, _ := s.locker()
	g := s.mustLock(a)
	select {
	case <-g.Lost:
		t.Fatal("Lost is closed while the lease is alive")
	default:
	}
	if _, err := s.admin.Revoke(s.ctx, clientv3.LeaseID(g.Lease)); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	wait := s.env.TTL + 3*time.Second
	select {
	case <-g.Lost:
	case <-time.After(wait):
		t.Fatalf("Lost not closed %s after the lease was revoked", wait)
	}
	if err := a.Unlock(s.ctx, g); err != nil {
		t.Logf("Unlock of the lost grant: %v", err)
	}
	g2 := s.mustLock(a)
	if g2.Lease == g.Lease {
		t.Errorf("next grant reuses the revoked lease %x", int64(g.Lease))
	}
	s.mustUnlock(a, g2)
}

func (s *suite) tryLock() {
	t := s.t
	a, _ := s.locker()
	bl, _ := s.locker()
	b, ok := bl.(locks.TryLocker)
	if !ok {
		t.Skip("not a locks.TryLocker")
	}
	ga := s.mustLock(a)
	start := time.Now()
	g, err := b.TryLock(s.ctx)
	took := time.Since(start)
	switch {
	case err == nil:
		t.Fatalf("TryLock returned %+v while A holds the lock", g)
	case !errors.Is(err, locks.ErrLocked) || !errors.Is(err, locks.ErrNotAcquired):
		t.Errorf("TryLock while held: %v, want ErrLocked (wrapping ErrNotAcquired)", err)
	}
	if took > time.Second {
		t.Errorf("TryLock took %s to fail: it must not wait", took)
	}
	s.onlyKey(ga, "after a failed TryLock")
	s.mustUnlock(a, ga)
	gb, err := b.TryLock(s.ctx)
	if err != nil {
		t.Fatalf("TryLock of a free lock: %v", err)
	}
	if gb.Token <= ga.Token {
		t.Errorf("TryLock token %d is not above the last holder's %d", gb.Token, ga.Token)
	}
	s.onlyKey(gb, "after TryLock")
	s.mustUnlock(b, gb)
}

// newLocker calls the factory with opts over cli, as the runner does: the
// etcd settings of opts (keepalive policy, shared lease) go with the
// client's Conn.
func (s *suite) newLocker(cli *clientv3.Client, opts etcdlocks.Options) (locks.Locker, error) {
	return s.factory(s.ctx, &etcdlocks.Conn{Client: cli, KeepAlive: opts.KeepAlive, Lease: opts.Lease}, opts.Options)
}
