package locktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/relay"
)

// Suite is one subtest's namespace, admin connection, clients and
// Lockers, with the helpers its checks share; a backend's own suite
// builds its checks from them (NewSuite).
type Suite struct {
	t    T
	env  Env
	ctx  context.Context
	id   string
	opts locks.Options
	// admin is the suite's own connection; lister and revoker are what
	// it also is, nil when it is not.
	admin   backend.Admin
	lister  backend.KeyLister
	revoker backend.LeaseRevoker
	// wakeups counts the Lockers' OnWakeup calls: the hook is set, as a
	// run sets it.
	wakeups atomic.Int64

	mu      sync.Mutex
	lockers []locks.Locker
	// optsOf are the options each Locker was made with (another name's).
	optsOf  map[locks.Locker]locks.Options
	clients []*Client
	after   []func()
	// created is each grant's key's creation order, read right after
	// Lock returned; tokens says whether grants carried a token (1) or
	// not (-1), once one was seen.
	created map[*locks.Grant]int64
	tokens  int
}

// NewSuite opens a subtest's namespace and admin connection on env; the
// namespace is cleaned, and everything the suite opened closed, when t's
// cleanups run.
func NewSuite(t T, env Env) *Suite {
	t.Helper()
	env, err := env.withDefaults().resolve()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), env.Timeout)
	t.Cleanup(cancel)
	s := &Suite{t: t, env: env, ctx: ctx, id: randomID(), optsOf: map[locks.Locker]locks.Options{}, created: map[*locks.Grant]int64{}}
	s.opts = locks.Options{Name: locks.DefaultName, Prefix: env.Root + s.id + "/", TTL: env.TTL, OnWakeup: func() { s.wakeups.Add(1) }}
	admin, err := env.Backend.Admin(ctx, env.Endpoints)
	if err != nil {
		t.Fatalf("%s admin connection: %v", env.Backend.Name(), err)
	}
	s.admin = admin
	s.lister, _ = admin.(backend.KeyLister)
	s.revoker, _ = admin.(backend.LeaseRevoker)
	t.Cleanup(s.finish)
	return s
}

func randomID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// T is the subtest's T.
func (s *Suite) T() T { return s.t }

// Ctx ends with the subtest's Env.Timeout.
func (s *Suite) Ctx() context.Context { return s.ctx }

// ID is the random id of the namespace, Env.Root + ID() + "/".
func (s *Suite) ID() string { return s.id }

// Options are the Lockers' options: the namespace, the lock's name, the
// TTL.
func (s *Suite) Options() locks.Options { return s.opts }

// Env is the suite's environment, with its defaults filled.
func (s *Suite) Env() Env { return s.env }

// Admin is the suite's own connection to the backend.
func (s *Suite) Admin() backend.Admin { return s.admin }

// AfterClose runs f when the subtest ends, once every Locker, session,
// connection and relay of the suite is closed and before the namespace is
// cleaned: a backend's suite checks there what the strategy left.
func (s *Suite) AfterClose(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.after = append(s.after, f)
}

// finish closes every Locker, then the clients, then runs the AfterClose
// checks and cleans the namespace.
func (s *Suite) finish() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.mu.Lock()
	lockers, clients, after := s.lockers, s.clients, s.after
	s.mu.Unlock()
	for _, l := range lockers {
		if err := l.Close(ctx); err != nil {
			s.t.Errorf("close locker: %v", err)
		}
	}
	for _, c := range clients {
		c.close(ctx)
	}
	for _, f := range after {
		f()
	}
	if err := s.admin.Clean(ctx, s.opts.Prefix); err != nil {
		s.t.Logf("clean %s: %v", s.opts.Prefix, err)
	}
	s.admin.Close()
}

// Client is one lock client's connection to the backend and its session,
// through relays of its own when the suite may have to cut it off.
type Client struct {
	conn   backend.Connection
	sess   backend.Session
	relays []*relay.Relay
}

// Conn is the client's connection (the counter is read and written
// through it).
func (c *Client) Conn() backend.Connection { return c.conn }

// Session is the client's session, whose Conn its Lockers are made over.
func (c *Client) Session() backend.Session { return c.sess }

// Cut holds (on) or lets through (off) everything between the client and
// every member, both ways: the bytes wait, as in a partition. A client
// with no relays is not cut.
func (c *Client) Cut(on bool) {
	for _, r := range c.relays {
		if on {
			r.PauseTx()
			r.PauseRx()
		} else {
			r.UnpauseTx()
			r.UnpauseRx()
		}
	}
}

// close ends the session, the connection and the relays, letting any
// held traffic through first so that a goodbye is not held.
func (c *Client) close(ctx context.Context) {
	c.Cut(false)
	if c.sess != nil {
		c.sess.Close(ctx)
	}
	if c.conn != nil {
		c.conn.Close()
	}
	for _, r := range c.relays {
		r.Close()
	}
}

// Client dials a new client, behind relays when the admin cannot revoke
// a lease (a lost grant is then made by cutting it off).
func (s *Suite) Client() *Client {
	s.t.Helper()
	return s.client(s.revoker == nil)
}

// CutClient dials a new client behind relays of its own (Client.Cut).
func (s *Suite) CutClient() *Client {
	s.t.Helper()
	return s.client(true)
}

func (s *Suite) client(relays bool) *Client {
	s.t.Helper()
	c := &Client{}
	s.mu.Lock()
	s.clients = append(s.clients, c)
	s.mu.Unlock()
	endpoints := s.env.Endpoints
	if relays {
		endpoints = nil
		for _, ep := range s.env.Endpoints {
			r, via, err := startRelay(ep)
			if err != nil {
				s.t.Fatalf("relay to %s: %v", ep, err)
			}
			c.relays = append(c.relays, r)
			endpoints = append(endpoints, via)
		}
	}
	conn, err := s.env.Backend.Dial(s.ctx, endpoints, backend.DialOptions{})
	if err != nil {
		s.t.Fatalf("dial %s: %v", s.env.Backend.Name(), err)
	}
	c.conn = conn
	sess, err := conn.NewSession(s.ctx, s.env.TTL)
	if err != nil {
		s.t.Fatalf("%s session: %v", s.env.Backend.Name(), err)
	}
	c.sess = sess
	return c
}

// startRelay starts a relay to endpoint ("scheme://host:port") and
// returns the endpoint to dial through it, with the same scheme.
func startRelay(endpoint string) (*relay.Relay, string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return nil, "", fmt.Errorf("endpoint %q: want scheme://host:port", endpoint)
	}
	r, err := relay.Start(u.Host)
	if err != nil {
		return nil, "", err
	}
	return r, u.Scheme + "://" + r.Addr(), nil
}

// Locker makes a Locker of the suite's options on a client of its own,
// closed at the suite's end.
func (s *Suite) Locker() (locks.Locker, *Client) {
	s.t.Helper()
	c := s.Client()
	return s.LockerOn(c.sess.Conn(), s.opts), c
}

// LockerOn makes a Locker of opts (another name's, another lease's) over
// conn, closed at the suite's end.
func (s *Suite) LockerOn(conn locks.Conn, opts locks.Options) locks.Locker {
	s.t.Helper()
	l, err := s.NewLocker(conn, opts)
	if err != nil {
		s.t.Fatalf("new locker for %q: %v", opts.Name, err)
	}
	s.mu.Lock()
	s.lockers = append(s.lockers, l)
	s.mu.Unlock()
	return l
}

// NewLocker makes a Locker of opts over conn, which the caller closes.
func (s *Suite) NewLocker(conn locks.Conn, opts locks.Options) (locks.Locker, error) {
	l, err := s.env.Factory(s.ctx, conn, opts)
	if err == nil {
		s.mu.Lock()
		s.optsOf[l] = opts
		s.mu.Unlock()
	}
	return l, err
}

// optionsOf are the options l was made with.
func (s *Suite) optionsOf(l locks.Locker) locks.Options {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.optsOf[l]; ok {
		return o
	}
	return s.opts
}

// LockCtx bounds one Lock in the checks that expect it to succeed: long
// enough for a lost holder's TTL to pass first.
func (s *Suite) LockCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.ctx, 10*s.env.TTL+10*time.Second)
}

// MustLock takes l's lock and checks the grant (CheckGrant).
func (s *Suite) MustLock(l locks.Locker) *locks.Grant {
	s.t.Helper()
	ctx, cancel := s.LockCtx()
	defer cancel()
	g, err := l.Lock(ctx)
	if err != nil {
		s.t.Fatalf("Lock of %q: %v", s.optionsOf(l).Name, err)
	}
	s.CheckGrant(l, g)
	return g
}

// CheckGrant checks a grant l just took: a key that is the lock's (its
// Options.Key() or under it) and exists on the backend, a token that is
// not negative, and Env.OnGrant's checks.
func (s *Suite) CheckGrant(l locks.Locker, g *locks.Grant) {
	s.t.Helper()
	opts := s.optionsOf(l)
	if g == nil || g.Key == "" || g.Token < 0 {
		s.t.Fatalf("Lock: incomplete grant %+v", g)
	}
	if !isLockKey(opts, g.Key) {
		s.t.Fatalf("Lock: key %q is neither Options.Key() %q nor under it", g.Key, opts.Key())
	}
	s.noteToken(g)
	if k, ok := s.key(g.Key); ok {
		s.mu.Lock()
		s.created[g] = k.Created
		s.mu.Unlock()
	} else if s.lister != nil {
		s.t.Errorf("Lock: the grant's key %s does not exist right after Lock returned", g.Key)
	}
	if s.env.OnGrant != nil {
		s.env.OnGrant(s, g)
	}
}

// noteToken fails a strategy whose grants carry a token only sometimes.
func (s *Suite) noteToken(g *locks.Grant) {
	s.t.Helper()
	has := -1
	if g.Token > 0 {
		has = 1
	}
	s.mu.Lock()
	was := s.tokens
	s.tokens = has
	s.mu.Unlock()
	if was != 0 && was != has {
		s.t.Errorf("Lock: grant %s has token %d, where an earlier grant had %s: a strategy gives every grant a token or none", g.Key, g.Token, map[int]string{1: "one", -1: "none"}[was])
	}
}

// MustUnlock releases g.
func (s *Suite) MustUnlock(l locks.Locker, g *locks.Grant) {
	s.t.Helper()
	if err := l.Unlock(s.ctx, g); err != nil {
		s.t.Fatalf("Unlock %s: %v", g.Key, err)
	}
}

// Created is the creation order of g's key as read right after MustLock
// took it (0 where the backend keeps none); false when it was not read.
func (s *Suite) Created(g *locks.Grant) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.created[g]
	return c, ok
}

// isLockKey says whether key is opts' lock key or under it.
func isLockKey(opts locks.Options, key string) bool {
	return key == opts.Key() || strings.HasPrefix(key, opts.Key()+"/")
}

// key reads one key; false when it is absent or cannot be listed.
func (s *Suite) key(name string) (backend.Key, bool) {
	s.t.Helper()
	if s.lister == nil {
		return backend.Key{}, false
	}
	keys, err := s.lister.Keys(s.ctx, name)
	if err != nil {
		s.t.Fatalf("read key %s: %v", name, err)
	}
	i := slices.IndexFunc(keys, func(k backend.Key) bool { return k.Name == name })
	if i < 0 {
		return backend.Key{}, false
	}
	return keys[i], true
}

// holderKeys lists the ephemeral keys of the suite's lock (its holders'
// and waiters'); false when the admin cannot list keys.
func (s *Suite) holderKeys() ([]backend.Key, bool) {
	s.t.Helper()
	if s.lister == nil {
		return nil, false
	}
	keys, err := s.lister.Keys(s.ctx, s.opts.Key())
	if err != nil {
		s.t.Fatalf("list lock keys: %v", err)
	}
	return slices.DeleteFunc(keys, func(k backend.Key) bool { return !k.Ephemeral || !isLockKey(s.opts, k.Name) }), true
}

// noKeys checks that no holder's or waiter's key of the lock is left.
func (s *Suite) noKeys(when string) {
	s.t.Helper()
	keys, ok := s.holderKeys()
	if !ok {
		s.t.Logf("%s: the %s admin cannot list keys: what is left is not checked", when, s.env.Backend.Name())
		return
	}
	if len(keys) != 0 {
		s.t.Errorf("%s: %d keys left under %s: %s", when, len(keys), s.opts.Key(), keyNames(keys))
	}
}

// OnlyKey checks that g's key, as it was granted, is the only holder's or
// waiter's key of the lock.
func (s *Suite) OnlyKey(g *locks.Grant, when string) {
	s.t.Helper()
	keys, ok := s.holderKeys()
	if !ok {
		s.t.Logf("%s: the %s admin cannot list keys: the lock's keys are not checked", when, s.env.Backend.Name())
		return
	}
	created, _ := s.Created(g)
	if len(keys) != 1 || keys[0].Name != g.Key || keys[0].Created != created {
		s.t.Errorf("%s: keys under %s are %s, want only the holder's %s@%d", when, s.opts.Key(), keyNames(keys), g.Key, created)
	}
}

func keyNames(keys []backend.Key) string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = fmt.Sprintf("%s@%d", k.Name, k.Created)
	}
	return "[" + strings.Join(names, " ") + "]"
}

// Unchanged runs f and then checks that g's key is still there, as it was
// granted (not made again), and that its holder was not told it lost it.
func (s *Suite) Unchanged(g *locks.Grant, whose string, f func()) {
	s.t.Helper()
	f()
	k, ok := s.key(g.Key)
	created, read := s.Created(g)
	switch {
	case s.lister == nil:
	case !ok:
		s.t.Errorf("%s key %s was deleted by the other name's locking", whose, g.Key)
	case read && k.Created != created:
		s.t.Errorf("%s key %s was made again (created at %d, granted at %d) by the other name's locking", whose, g.Key, k.Created, created)
	}
	select {
	case <-g.Lost:
		s.t.Errorf("%s holder was told it lost the lock while the other name was locked and released", whose)
	default:
	}
}

// Lose makes g's grant lost, as its TTL passing would, and returns once
// the backend let its key go, with the function that ends what it did:
// the admin revokes its lease where it can (and the lease is known);
// otherwise c, a client behind relays, is cut off from every member until
// the backend deletes the key, and the returned function lets it through
// again.
func (s *Suite) Lose(c *Client, g *locks.Grant) (heal func()) {
	s.t.Helper()
	if s.revoker != nil && g.Lease != 0 {
		if err := s.revoker.RevokeLease(s.ctx, g.Lease); err != nil {
			s.t.Fatalf("revoke lease %x: %v", g.Lease, err)
		}
		return func() {}
	}
	switch {
	case len(c.relays) == 0:
		s.t.Fatalf("cannot make grant %s lost: the %s admin cannot revoke its lease (%x) and its client is not behind relays", g.Key, s.env.Backend.Name(), g.Lease)
	case s.lister == nil:
		s.t.Skip("cannot make a grant lost here: the " + s.env.Backend.Name() + " admin neither revokes a lease nor lists keys, to see the backend let a cut-off holder's key go")
	}
	c.Cut(true)
	bound := 3*s.env.TTL + 10*time.Second
	deadline := time.Now().Add(bound)
	for {
		if _, ok := s.key(g.Key); !ok {
			return func() { c.Cut(false) }
		}
		if time.Now().After(deadline) {
			c.Cut(false)
			s.t.Fatalf("grant %s: its key is still there %s after its client was cut off from every member", g.Key, bound)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
