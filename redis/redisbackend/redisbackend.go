// Package redisbackend is Redis as a lock backend (backend.Backend) on a
// deployment of package rediscluster: the runner drives Redis strategies
// with the same clients, workloads, relays and nemesis as etcd's.
//
// A client reaches each node through the endpoint the runner gives it for
// that node (its fault relay, or the node's own address). A Sentinel
// client (redis-setnx) asks the Sentinels, which it reaches directly,
// where the primary is, and dials that node through its endpoint: a cut
// client is cut from every node, and told where the primary is. Redlock
// dials each independent primary. There is no lease, and no watch of the
// run's keys: the symmetry and lease checks say they could not look.
package redisbackend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/redis/rediscluster"
	"github.com/lockbench/lockbench/redis/redislocks"
)

// Client timeouts: a dead node must fail a command within moments, so
// that a Sentinel client moves on to the promoted primary.
const (
	dialTimeout = 200 * time.Millisecond
	readTimeout = 500 * time.Millisecond
)

// Backend is Redis on one deployment.
type Backend struct {
	Deployment *rediscluster.Cluster
	// Sentinel: the strategy's clients follow the Sentinels' primary (a
	// replicated deployment, redis-setnx); otherwise they dial every
	// node, each a primary of its own (Redlock's).
	Sentinel bool
}

var _ backend.Backend = Backend{}

// Name is Redis's backend name.
func (Backend) Name() string { return redislocks.Backend }

// Dial connects one lock client to the deployment through endpoints (node
// order, as Members.Endpoints).
func (b Backend) Dial(_ context.Context, endpoints []string, _ backend.DialOptions) (backend.Connection, error) {
	route, err := b.routes(endpoints)
	if err != nil {
		return nil, err
	}
	c := &Connection{}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := route[addr]; ok {
			addr = to
		}
		return (&net.Dialer{Timeout: dialTimeout}).DialContext(ctx, network, addr)
	}
	if b.Sentinel {
		// The Sentinels are not a node: reached directly, they name the
		// primary by its own address, which route maps to its endpoint.
		cli := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: rediscluster.MasterName, SentinelAddrs: b.Deployment.SentinelAddrs(),
			MaxRetries: -1, DialTimeout: dialTimeout, ReadTimeout: readTimeout, Dialer: dial})
		cli.AddHook(&c.count)
		c.clis = append(c.clis, cli)
		return c, nil
	}
	for _, a := range b.Deployment.Addrs() {
		cli := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1, DialTimeout: dialTimeout, ReadTimeout: readTimeout, Dialer: dial})
		cli.AddHook(&c.count)
		c.clis = append(c.clis, cli)
	}
	return c, nil
}

// routes maps each node's own address to the endpoint given for it.
func (b Backend) routes(endpoints []string) (map[string]string, error) {
	addrs := b.Deployment.Addrs()
	if len(endpoints) != len(addrs) {
		return nil, fmt.Errorf("redis: %d endpoints for %d nodes", len(endpoints), len(addrs))
	}
	route := map[string]string{}
	for i, ep := range endpoints {
		u, err := url.Parse(ep)
		if err != nil {
			return nil, fmt.Errorf("redis endpoint %q: %w", ep, err)
		}
		route[addrs[i]] = u.Host
	}
	return route, nil
}

// Admin connects the run's own client: to the primary the Sentinels name,
// or to every independent primary.
func (b Backend) Admin(ctx context.Context, _ []string) (backend.Admin, error) {
	c, err := b.Dial(ctx, Members{b.Deployment}.Endpoints(), backend.DialOptions{})
	if err != nil {
		return nil, err
	}
	return &Admin{Connection: c.(*Connection)}, nil
}

// Connection is one client's connections to the nodes (backend.Connection).
type Connection struct {
	clis  []*redis.Client
	count counter
}

// NewSession is the client's Lockers' connection: Redis keys carry their
// own expiry, so there is no lease to share.
func (c *Connection) NewSession(context.Context, time.Duration) (backend.Session, error) {
	return session{&redislocks.Conn{Instances: c.clis}}, nil
}

// ReadCounter reads the counter on the first client's node (the primary).
func (c *Connection) ReadCounter(ctx context.Context, key string) (int64, error) {
	v, err := c.clis[0].Get(ctx, key).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, backend.ErrNoCounter
	}
	return v, err
}

// fencedWrite writes the counter only for a token no lower than the
// highest one written so far, which it keeps beside the counter: the
// resource's own check of a fencing token, as Kleppmann's storage server
// does it.
var fencedWrite = redis.NewScript(`
local max = tonumber(redis.call('GET', KEYS[2]) or '0')
local token = tonumber(ARGV[2])
if token < max then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('SET', KEYS[1], ARGV[1])
return 1`)

// WriteCounter writes v at key; fenced, only for a token no lower than any
// written before (a stale holder's is refused).
func (c *Connection) WriteCounter(ctx context.Context, key string, v int64, fence *locks.Grant) (bool, error) {
	if fence == nil {
		err := c.clis[0].Set(ctx, key, v, 0).Err()
		return err == nil, err
	}
	n, err := fencedWrite.Run(ctx, c.clis[0], []string{key, key + ":fence"}, v, fence.Token).Int()
	return n == 1, err
}

// RPCs counts the commands the client sent.
func (c *Connection) RPCs() int64 { return c.count.n.Load() }

// Close closes the clients.
func (c *Connection) Close() error {
	var errs []error
	for _, cli := range c.clis {
		errs = append(errs, cli.Close())
	}
	return errors.Join(errs...)
}

// counter is a go-redis hook counting commands (a pipeline's each).
type counter struct{ n atomic.Int64 }

func (h *counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// session is a client's Lockers' connection.
type session struct{ conn *redislocks.Conn }

func (s session) Conn() locks.Conn          { return s.conn }
func (session) Lease() int64                { return 0 }
func (session) Close(context.Context) error { return nil }

// Admin is the run's own client (backend.Admin). The run's keys carry no
// expiry: Clean removes them.
type Admin struct{ *Connection }

// Keep does nothing: the counter is removed by Clean, and a killed run's
// deployment goes with it (lockbench owns its processes).
func (*Admin) Keep(context.Context) error { return nil }

// InitCounter sets the counter to 0.
func (a *Admin) InitCounter(ctx context.Context, key string) error {
	return a.clis[0].Set(ctx, key, 0, 0).Err()
}

// Release does nothing (see Keep).
func (*Admin) Release(context.Context) error { return nil }

// Clean deletes every key under prefix on every node the admin reaches.
func (a *Admin) Clean(ctx context.Context, prefix string) error {
	var errs []error
	for _, cli := range a.clis {
		iter := cli.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			errs = append(errs, cli.Del(ctx, iter.Val()).Err())
		}
		errs = append(errs, iter.Err())
	}
	return errors.Join(errs...)
}

// Members is a deployment as the runner's members (backend.Members):
// crash (the data goes: nothing is persisted), restart (empty, a replica
// of whoever leads), pause and resume a node; the leader is the node the
// Sentinels name primary.
type Members struct{ *rediscluster.Cluster }

var _ backend.Members = Members{}

// Endpoints are the nodes' addresses as URLs, node order.
func (m Members) Endpoints() []string {
	var out []string
	for _, a := range m.Addrs() {
		out = append(out, "redis://"+a)
	}
	return out
}

// DirectEndpoints are Endpoints: no relay stands in front of a node for
// every client.
func (m Members) DirectEndpoints() []string { return m.Endpoints() }

// Count is the number of data nodes.
func (m Members) Count() int { return len(m.Addrs()) }

// Running says whether node i's process runs.
func (m Members) Running(i int) bool { return m.Cluster.Running(i) }

// Leader is the node the Sentinels name primary, -1 when none answers (or
// there are no Sentinels: Redlock's primaries are all equal).
func (m Members) Leader() int {
	if len(m.SentinelAddrs()) == 0 {
		return -1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	addr, err := m.Primary(ctx)
	if err != nil {
		return -1
	}
	for i, a := range m.Addrs() {
		if a == addr {
			return i
		}
	}
	return -1
}

// CutReplication cuts (or heals) every replica's link to the first
// primary, node 0, through whose relay they replicate: it must lead.
func (m Members) CutReplication(cut bool) error {
	if cut && m.Leader() != 0 {
		return fmt.Errorf("cut-replication: node 0 must lead (its relay carries the replication links), node %d does", m.Leader())
	}
	for i := 1; i < m.Count(); i++ {
		f := m.HealReplication
		if cut {
			f = m.Cluster.CutReplication
		}
		if err := f(i); err != nil {
			return err
		}
	}
	return nil
}

// Partition is refused: a node's peer links are its replication link and
// the Sentinels', which this deployment does not cut as one.
func (m Members) Partition(i int) error {
	return fmt.Errorf("redis node %d: partition-member is not supported on Redis (its replication and Sentinel links are not one peer network)", i)
}

// Heal is refused as Partition is.
func (m Members) Heal(i int) error { return m.Partition(i) }

var _ backend.KeyLister = (*Admin)(nil)

// Keys lists the keys under prefix on every node the admin reaches (a
// key on any of Redlock's primaries counts), each once; a key with an
// expiry is ephemeral. Redis keeps no creation order (Created is 0).
func (a *Admin) Keys(ctx context.Context, prefix string) ([]backend.Key, error) {
	seen := map[string]bool{}
	var out []backend.Key
	for _, cli := range a.clis {
		iter := cli.Scan(ctx, 0, globEscape(prefix)+"*", 100).Iterator()
		for iter.Next(ctx) {
			k := iter.Val()
			ttl, err := cli.PTTL(ctx, k).Result()
			if err != nil {
				return nil, fmt.Errorf("list keys under %s: ttl of %s: %w", prefix, k, err)
			}
			if ttl == -2 || seen[k] { // expired since the scan saw it, or seen on another node
				continue
			}
			seen[k] = true
			out = append(out, backend.Key{Name: k, Ephemeral: ttl >= 0})
		}
		if err := iter.Err(); err != nil {
			return nil, fmt.Errorf("list keys under %s: %w", prefix, err)
		}
	}
	return out, nil
}

// globEscape escapes the characters SCAN's MATCH pattern gives a meaning.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
