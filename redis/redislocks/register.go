package redislocks

import (
	"context"
	"fmt"
	"os/exec"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/verdict"
)

// Backend is the name Redis's strategies carry (locks.Strategy.Backend).
const Backend = "redis"

// The strategies' registered names.
const (
	SetNXName   = "redis-setnx"
	RedlockName = "redlock"
)

// Conn is one client's connection to Redis (a locks.Conn): one client per
// instance its strategy runs on, which it does not close. redis-setnx
// takes one, a client that follows the Sentinels' primary through
// failovers; redlock one per independent primary.
type Conn struct {
	Instances []*redis.Client
}

// Backend says the connection is Redis's.
func (*Conn) Backend() string { return Backend }

// Both are registered Hidden with a Runtime: they need redis-server,
// which lockbench does not bring, so they stay out of the default etcd
// suite while `lockbench list` shows them, with their backend and whether
// Redis is installed here. Each renews its own key (OwnLease): no
// keepalive policy applies.
func init() {
	register(SetNXName,
		"SET key value NX PX ttl on the Sentinels' primary, a counter INCRed beside it for a token, compare-and-delete release, renewed every TTL/3",
		"the Redis documentation's single-instance lock (docs/redis.md)", 1, nil,
		func(c *Conn, o Options) (locks.Locker, error) { return NewSetNX(c.Instances[0], o) })
	register(RedlockName,
		"Redlock: SET NX PX on a majority of independent primaries within the key's validity, renewed every TTL/3; no fencing token",
		"the Redis documentation's distributed lock (docs/redis.md)", 3, redlockExpect,
		func(c *Conn, o Options) (locks.Locker, error) { return NewRedlock(c.Instances, o) })
}

// redlockExpect: Redlock gives no fencing token, so in the built-in
// scenarios with a fenced resource the fencing check has nothing to judge
// (unknown), and a stale holder's write is not refused.
var redlockExpect = map[string]map[string]verdict.Verdict{
	"lease-expiry-fenced": {verdict.Fencing: verdict.Any, verdict.Resource: verdict.Fail},
	"client-isolation":    {verdict.Fencing: verdict.Any},
}

// register registers a Redis strategy made by make over a Redis
// connection to at least instances nodes.
func register(name, description, origin string, instances int, expect map[string]map[string]verdict.Verdict, make func(*Conn, Options) (locks.Locker, error)) {
	locks.Register(locks.Strategy{
		Name: name, Description: description, Origin: origin, Expect: expect,
		Backend: Backend, Hidden: true, OwnLease: true, Runtime: redisInstalled, Order: verdict.NoOrder,
		New: func(_ context.Context, conn locks.Conn, opts locks.Options) (locks.Locker, error) {
			c, err := redisConn(conn, instances)
			if err != nil {
				return nil, err
			}
			return make(c, Options{Name: opts.Name, Prefix: opts.Prefix, TTL: opts.TTL})
		},
	})
}

// redisConn is conn as Redis's, with at least min instances.
func redisConn(conn locks.Conn, want int) (*Conn, error) {
	c, ok := conn.(*Conn)
	switch {
	case !ok:
		return nil, fmt.Errorf("a Redis strategy needs a Redis connection, not %s's", conn.Backend())
	case len(c.Instances) < want:
		return nil, fmt.Errorf("a Redis connection to %d instances: this strategy needs at least %d", len(c.Instances), want)
	}
	return c, nil
}

// redisInstalled says whether the Redis programs the strategies run on
// are installed here.
func redisInstalled(context.Context) error {
	for _, bin := range []string{"redis-server", "redis-sentinel"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s not found: install the Debian packages redis-server and redis-sentinel (make redis-deps)", bin)
		}
	}
	return nil
}
