package redislocks

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"sync"

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
	// RedsyncName and RedsyncSingleName are go-redsync/redsync's Mutex,
	// over the independent primaries and over the Sentinels' primary.
	RedsyncName       = "redsync"
	RedsyncSingleName = "redsync-single"
	// BsmName is bsm/redislock's Lock, on the Sentinels' primary.
	BsmName = "redislock"
)

// The libraries' versions, as go.mod requires them: a strategy's Origin
// names the code it ran.
const (
	RedsyncVersion = "github.com/go-redsync/redsync/v4 v4.18.1"
	BsmVersion     = "github.com/bsm/redislock v0.9.4"
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
		"the Redis documentation's single-instance lock (docs/redis.md)", 1, setnxExpect,
		func(c *Conn, o Options) (locks.Locker, error) { return NewSetNX(c.Instances[0], o) })
	register(RedlockName,
		"Redlock: SET NX PX on a majority of independent primaries within the key's validity, renewed every TTL/3; no fencing token",
		"the Redis documentation's distributed lock (docs/redis.md)", 3, redlockExpect,
		func(c *Conn, o Options) (locks.Locker, error) { return NewRedlock(c.Instances, o) })
	register(RedsyncName,
		"go-redsync/redsync's Mutex as its README shows it: Redlock over the independent primaries (LockContext, retried by the caller until its context ends), ExtendContext every TTL/3, UnlockContext; no fencing token",
		RedsyncVersion, 3, redsyncExpect,
		func(c *Conn, o Options) (locks.Locker, error) { return NewRedsync(c.Instances, o) })
	register(RedsyncSingleName,
		"go-redsync/redsync's Mutex over one pool, the Sentinels' primary (a single-instance lock through the Redlock library); no fencing token",
		RedsyncVersion, 1, singleExpect,
		func(c *Conn, o Options) (locks.Locker, error) { return NewRedsync(c.Instances[:1], o) })
	register(BsmName,
		"bsm/redislock as its README shows it: Obtain with a LinearBackoff retry strategy (retried by the caller until its context ends), Refresh every TTL/3, Release; on the Sentinels' primary; no fencing token",
		BsmVersion, 1, singleExpect,
		func(c *Conn, o Options) (locks.Locker, error) { return NewBsm(c.Instances[0], o) })
}

// redlockExpect: Redlock gives no fencing token, so in the built-in
// scenarios with a fenced resource the fencing check has nothing to judge
// (unknown), and a stale holder's write is not refused.
var redlockExpect = map[string]map[string]verdict.Verdict{
	"lease-expiry-fenced": {verdict.Fencing: verdict.Any, verdict.Resource: verdict.Fail},
	"client-isolation":    {verdict.Fencing: verdict.Any},
}

// Register adds a Redis lock of one's own (a library's, or a user's) to
// lockbench's strategies, so that run, suite and redis find it by name
// and give it the deployment it needs: with instances 1, a primary with
// replicas behind Sentinels, its Conn's one client following the
// Sentinels' primary; with more, independent primaries (five, as
// Redlock's), one client each. It is registered Hidden, run only by
// name, and only where redis-server is installed; expect, which may be
// nil, is what it fails by design in which scenarios (Strategy.Expect).
// It panics on a name already registered, as locks.Register does.
func Register(name, description, origin string, instances int, expect map[string]map[string]verdict.Verdict, factory func(*Conn, Options) (locks.Locker, error)) {
	if instances < 1 {
		panic(fmt.Sprintf("redislocks: %s registered over %d instances: want at least 1", name, instances))
	}
	register(name, description, origin, instances, expect, factory)
}

// Independent says whether lock runs on independent primaries (it was
// registered over more than one instance) rather than on a primary behind
// Sentinels: the deployment a run of it gets.
func Independent(lock string) bool {
	independentMu.Lock()
	defer independentMu.Unlock()
	return independent[lock]
}

var (
	independentMu sync.Mutex
	independent   = map[string]bool{}
)

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
	independentMu.Lock()
	independent[name] = instances > 1
	independentMu.Unlock()
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

// redsyncExpect: redsync over the independent primaries is Redlock, and
// fails by design what redlock does (redlockExpect, and the scenarios'
// own expectations of redlock, which name it), each measured over 10
// seeds (docs/redis.md, "The libraries"):
var redsyncExpect = expectBeside(redlockExpect, map[string]map[string]verdict.Verdict{
	// Mutex.lockContext grants on a bare majority (n >= quorum), and an
	// instance restarted empty forgets the key: a waiter wins it with
	// the two that came back empty.
	"redis-bare-majority-restart": {verdict.Exclusion: verdict.Fail},
	// The same when the three-way race of the first grant left the
	// holder a bare majority and one of its three restarts empty: it
	// depends on how many instances the holder won, so it is counted,
	// not judged (as the scenario does for redlock).
	"redis-instance-restart-empty": {verdict.Exclusion: verdict.Any},
	"contention":                   pollerContention,
})

// singleExpect: a single-instance lock with no fencing token (redislock,
// redsync-single): the fencing check has nothing to judge, a stale
// holder's write is not refused (redlockExpect), and:
var singleExpect = expectBeside(redlockExpect, map[string]map[string]verdict.Verdict{
	// Its one key lives on the primary, replicated asynchronously: a
	// replica promoted before it had the key grants it again (the
	// scenario expects this of redis-setnx by name).
	"redis-primary-crash-unreplicated": {verdict.Exclusion: verdict.Fail},
	"contention":                       pollerContention,
})

// setnxExpect: redis-setnx polls as the libraries do (pollerContention);
// under contention its fairness failed in 3 of 3 seeds, 1 of 2 and 2 of 3
// (suite --locks redis-setnx,… --scenarios contention, 2026-12-04).
var setnxExpect = map[string]map[string]verdict.Verdict{"contention": pollerContention}

// pollerContention: a library lock polls (redsync every 50–250 ms,
// redislock every retry delay) while a releaser asks again at once, so a
// waiter can be passed over past the fairness check's long-wait bound,
// as redis-setnx's waiters are: fairness is counted, not judged.
var pollerContention = map[string]verdict.Verdict{verdict.Fairness: verdict.Any}

// expectBeside is base with extra's scenarios added.
func expectBeside(base, extra map[string]map[string]verdict.Verdict) map[string]map[string]verdict.Verdict {
	out := maps.Clone(base)
	maps.Copy(out, extra)
	return out
}
