// Package zklocks holds the lock strategies that run on ZooKeeper
// (backend "zookeeper"): zk-queue, lockbench's own recipe, and
// go-zookeeper, the lock of github.com/go-zookeeper/zk as its
// documentation shows it. ZooKeeper's lock recipe — ephemeral sequential
// nodes, each waiter watching its predecessor — is the original of etcd's
// prefix+revision queue: a node is the lock's key, the session the lease
// it lives with, and the node's creation zxid the fencing token.
package zklocks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Backend is the name ZooKeeper's strategies carry (locks.Strategy.Backend).
const Backend = "zookeeper"

// Conn is one client's ZooKeeper session (a locks.Conn), which its
// Lockers share: their nodes are ephemeral nodes of this session. It
// follows the session's state, because a ZooKeeper client cannot know
// that it still holds a lock while it is disconnected: the ensemble
// expires the session (and deletes its nodes) a session timeout after it
// last heard from the client, which a disconnected client cannot see.
type Conn struct {
	ZK *zk.Conn
	// Servers are the addresses the session was opened to ("host:port",
	// the client's relays when it has any): a lock client in another
	// process (an adapter) dials these.
	Servers []string
	ttl     time.Duration

	mu sync.Mutex
	// down is closed when the session expires, or stays disconnected
	// past the grace (SuspendGrace), and replaced by an open one once it
	// has a session again: a grant's Lost is the down of the moment it
	// was granted.
	down     chan struct{}
	grace    *time.Timer // running while disconnected within the grace
	session  int64
	ready    chan struct{} // closed at the first session
	onNewSID func(int64)
}

// SuspendGrace is how long a disconnected session is still counted
// alive, for a session timeout ttl: a sixth of it. go-zookeeper calls a
// connection lost after two thirds of the timeout without an answer
// (its ping comes every third), so at that moment the ensemble, which
// last heard the client when it sent the answered request, keeps the
// session for another third at least, less that request's round trip;
// half of that third is left for the round trip. A client reconnected
// within the grace (to another member, a blip of the network or of the
// scheduler) keeps its locks; one that is not stops believing before the
// ensemble can expire its session, while the round trip of its last
// answer was under ttl/6.
func SuspendGrace(ttl time.Duration) time.Duration { return ttl / 6 }

// Backend says the connection is ZooKeeper's.
func (*Conn) Backend() string { return Backend }

// OpenOptions shape a session.
type OpenOptions struct {
	// Dialer dials each server (default net.DialTimeout): the backend
	// counts requests through it.
	Dialer zk.Dialer
	// OnSession, when set, is told the ID of every session the
	// connection is granted (a new one follows an expired one).
	OnSession func(id int64)
}

// Open connects to servers ("host:port") with a session of ttl and
// returns once the ensemble granted it, or ctx ended (the connection is
// then closed).
func Open(ctx context.Context, servers []string, ttl time.Duration, opts OpenOptions) (*Conn, error) {
	c := &Conn{Servers: servers, ttl: ttl, down: make(chan struct{}), ready: make(chan struct{}), onNewSID: opts.OnSession}
	close(c.down) // no session yet
	dial := opts.Dialer
	if dial == nil {
		dial = net.DialTimeout
	}
	zc, _, err := zk.Connect(servers, ttl, zk.WithDialer(dial), zk.WithLogger(quiet{}), zk.WithLogInfo(false), zk.WithEventCallback(c.event))
	if err != nil {
		return nil, fmt.Errorf("zookeeper %v: %w", servers, err)
	}
	c.mu.Lock()
	c.ZK = zc
	c.mu.Unlock()
	c.event(zk.Event{Type: zk.EventSession, State: zc.State()}) // a session granted before ZK was set
	select {
	case <-c.ready:
		return c, nil
	case <-ctx.Done():
		zc.Close()
		return nil, fmt.Errorf("zookeeper %v: no session: %w", servers, ctx.Err())
	}
}

// event follows the session's state (zk's event callback: it must not
// block).
func (c *Conn) event(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch ev.State {
	case zk.StateHasSession:
		if c.ZK == nil {
			return // Open calls again once it is set
		}
		c.stopGrace()
		if id := c.ZK.SessionID(); id != c.session || isClosed(c.down) {
			// A new session (the last one expired), or the same one
			// back after its grace: a new state for new grants.
			if id != c.session && c.onNewSID != nil {
				c.onNewSID(id)
			}
			c.closeDown()
			c.session, c.down = id, make(chan struct{})
		}
		if !isClosed(c.ready) {
			close(c.ready)
		}
	case zk.StateDisconnected:
		if c.grace == nil && !isClosed(c.down) {
			var t *time.Timer
			t = time.AfterFunc(SuspendGrace(c.ttl), func() {
				c.mu.Lock()
				defer c.mu.Unlock()
				if c.grace == t { // not stopped by a session meanwhile
					c.closeDown()
					c.grace = nil
				}
			})
			c.grace = t
		}
	case zk.StateExpired, zk.StateAuthFailed:
		c.stopGrace()
		c.closeDown()
	}
}

// stopGrace stops a running grace; c.mu held.
func (c *Conn) stopGrace() {
	if c.grace != nil {
		c.grace.Stop()
		c.grace = nil
	}
}

// closeDown closes down unless it is closed; c.mu held.
func (c *Conn) closeDown() {
	if !isClosed(c.down) {
		close(c.down)
	}
}

// Down is closed once the session expires or stays suspended past its
// grace, from now on: the holder of a grant must assume it lost the lock.
func (c *Conn) Down() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.down
}

// Session is the ID of the connection's current session.
func (c *Conn) Session() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// Close ends the session: the ensemble deletes its ephemeral nodes.
func (c *Conn) Close() {
	c.ZK.Close()
	c.mu.Lock()
	c.stopGrace()
	c.mu.Unlock()
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// quiet drops go-zookeeper's log lines: a run's faults make it log every
// reconnect, and lockbench's output is its own.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// EnsurePath creates path and its missing parents as persistent nodes.
func EnsurePath(zc *zk.Conn, path string) error {
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		_, err := zc.Create(path[:i], nil, 0, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", path[:i], err)
		}
	}
	return nil
}

// certain says whether err leaves the outcome of a request certain: a
// request whose connection broke may have been applied.
func certain(err error) bool {
	return !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrClosing) && !errors.Is(err, io.EOF)
}
