// Package zkbackend is ZooKeeper as a lock backend (backend.Backend) on
// an ensemble of package zkcluster: the runner drives ZooKeeper
// strategies with the same clients, workloads, relays and nemesis as
// etcd's and Redis's.
//
// A client's session is its connection: go-zookeeper holds one session
// per connection, so each Session is a connection of its own to the
// endpoints the runner gives the client (its fault relays, or the
// members' own addresses), with the scenario's TTL as its session
// timeout. The counter is a node, reached through a session of its own
// (a resource apart from the lock); a fenced write is a multi that checks
// that the holder's node still exists and sets the counter, so the
// ensemble refuses a stale holder's write (a lock node that expired with
// its session). There is no watch of the run's keys and no lease to
// revoke: the symmetry and lease checks say they could not look.
package zkbackend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/zookeeper/zklocks"
)

// counterTTL is the timeout of the session that carries a client's
// counter requests: the counter is a resource of its own, not the lock,
// so its session must outlive the lock's (a frozen holder's lock session
// expires by design; its stale write must still reach the resource, as
// an etcd client's does, for the fence to be what refuses it).
const counterTTL = 30 * time.Second

// Backend is ZooKeeper.
type Backend struct{}

var _ backend.Backend = Backend{}

// Name is ZooKeeper's backend name.
func (Backend) Name() string { return zklocks.Backend }

// Dial makes one lock client's connection to endpoints
// ("zk://host:port", member order); its sessions connect when started.
func (Backend) Dial(_ context.Context, endpoints []string, opts backend.DialOptions) (backend.Connection, error) {
	servers, err := hosts(endpoints)
	if err != nil {
		return nil, err
	}
	return &Connection{servers: servers, onSession: opts.OnLease}, nil
}

// Admin opens the run's own session.
func (b Backend) Admin(ctx context.Context, endpoints []string) (backend.Admin, error) {
	c, err := b.Dial(ctx, endpoints, backend.DialOptions{})
	if err != nil {
		return nil, err
	}
	a := &Admin{Connection: c.(*Connection)}
	if _, err := a.zk(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// hosts are the endpoints' host:port.
func hosts(endpoints []string) ([]string, error) {
	var out []string
	for _, ep := range endpoints {
		u, err := url.Parse(ep)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("zookeeper endpoint %q: want zk://host:port", ep)
		}
		out = append(out, u.Host)
	}
	if len(out) == 0 {
		return nil, errors.New("zookeeper: no endpoints")
	}
	return out, nil
}

// Connection is one lock client's sessions (backend.Connection).
type Connection struct {
	servers   []string
	onSession func(int64)
	rpcs      atomic.Int64

	mu       sync.Mutex
	sessions []*zklocks.Conn
	counter  *zklocks.Conn // the counter's session, opened at its first use
}

// NewSession connects a session of timeout ttl, which the client's
// Lockers share.
func (c *Connection) NewSession(ctx context.Context, ttl time.Duration) (backend.Session, error) {
	zc, err := zklocks.Open(ctx, c.servers, ttl, zklocks.OpenOptions{Dialer: c.dial, OnSession: c.onSession})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.sessions = append(c.sessions, zc)
	c.mu.Unlock()
	return &session{c: c, conn: zc}, nil
}

// zk is the counter's session, opened at its first use: its own, so
// that the lock session's expiry (a fault's point) does not fail the
// counter's requests.
func (c *Connection) zk(ctx context.Context) (*zk.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counter == nil {
		zc, err := zklocks.Open(ctx, c.servers, counterTTL, zklocks.OpenOptions{Dialer: c.dial})
		if err != nil {
			return nil, err
		}
		c.counter = zc
	}
	return c.counter.ZK, nil
}

// dial dials a server and counts the requests written to it: one write
// per request, as go-zookeeper sends them (pings included).
func (c *Connection) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	nc, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: nc, n: &c.rpcs}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (cc countingConn) Write(b []byte) (int, error) {
	cc.n.Add(1)
	return cc.Conn.Write(b)
}

// ReadCounter reads the counter node.
func (c *Connection) ReadCounter(ctx context.Context, key string) (int64, error) {
	zc, err := c.zk(ctx)
	if err != nil {
		return 0, err
	}
	data, _, err := zc.Get(strings.TrimSuffix(key, "/"))
	if errors.Is(err, zk.ErrNoNode) {
		return 0, backend.ErrNoCounter
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(string(data), 10, 64)
}

// WriteCounter sets the counter node; fenced, in one multi with a check
// that fence's node still exists, which the ensemble refuses once the
// holder's session took its node.
func (c *Connection) WriteCounter(ctx context.Context, key string, v int64, fence *locks.Grant) (bool, error) {
	zc, err := c.zk(ctx)
	if err != nil {
		return false, err
	}
	data := []byte(strconv.FormatInt(v, 10))
	if fence == nil {
		_, err := zc.Set(key, data, -1)
		return err == nil, err
	}
	res, err := zc.Multi(&zk.CheckVersionRequest{Path: fence.Key, Version: -1}, &zk.SetDataRequest{Path: key, Data: data, Version: -1})
	if err != nil && len(res) > 0 && errors.Is(res[0].Error, zk.ErrNoNode) {
		return false, nil // the holder's node is gone: a stale write, refused
	}
	return err == nil, err
}

// RPCs counts the requests the client's sessions wrote.
func (c *Connection) RPCs() int64 { return c.rpcs.Load() }

// Close closes every session left.
func (c *Connection) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.sessions {
		s.Close()
	}
	c.sessions = nil
	if c.counter != nil {
		c.counter.Close()
		c.counter = nil
	}
	return nil
}

// session is one client's ZooKeeper session (backend.Session).
type session struct {
	c    *Connection
	conn *zklocks.Conn
}

func (s *session) Conn() locks.Conn { return s.conn }
func (s *session) Lease() int64     { return s.conn.Session() }

// Close ends the session: the ensemble deletes its nodes.
func (s *session) Close(context.Context) error {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	for i, z := range s.c.sessions {
		if z == s.conn {
			s.c.sessions = append(s.c.sessions[:i], s.c.sessions[i+1:]...)
			z.Close()
		}
	}
	return nil
}
