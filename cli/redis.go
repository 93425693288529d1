package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/redis/rediscluster"
	"github.com/lockbench/lockbench/redis/redisrun"
	"github.com/lockbench/lockbench/verdict"
)

const redisSynopsis = "redis [--locks redis-setnx,redlock] [--faults F,...] [--seeds N] [--etcd-lock queue|none] [flags]\n\n" +
	"Runs Redis locks on real redis-server and redis-sentinel processes (a primary,\n" +
	"two replicas and three Sentinels for redis-setnx; five independent primaries\n" +
	"for redlock) under the faults that exist on Redis, each cell --seeds times,\n" +
	"then etcd's --etcd-lock under the same default workload with its leader killed\n" +
	"(scenario " + harness.EtcdFailoverScenario + "), and prints exclusion and fencing\n" +
	"failures per cell. Every run's history.jsonl and check.json go to a folder\n" +
	"under --out (lockbench check re-checks a history). Faults:\n" +
	"  none                        no fault (both locks)\n" +
	"  primary-crash               SIGKILL the primary right after a grant its replicas have (WAIT); Sentinel promotes one (redis-setnx)\n" +
	"  primary-crash-unreplicated  cut every replica's link at a release, SIGKILL the primary right after the next grant (redis-setnx)\n" +
	"  primary-pause               SIGSTOP the primary right after a grant its replicas have, SIGCONT it after the failover (redis-setnx)\n" +
	"  instance-crash              SIGKILL one instance holding the lock, for good (redlock)\n" +
	"  instance-restart-empty      SIGKILL an instance holding the lock and start it again at once with no data, after every grant (redlock)\n" +
	"  bare-majority-restart       the critics' case: cut every client from 2 instances (the holder at its release), so the\n" +
	"                              next holder wins only 3; then restart one of its 3 empty and heal (redlock)\n" +
	"  holder-pause                freeze the holder's process (a GC pause) right after a grant for 1.5 × the key's TTL (both locks)\n" +
	"Exit 1 when a cell differs from what the lock's design predicts (docs/redis.md).\n" +
	"Needs the Debian packages redis-server and redis-sentinel (make redis-deps)."

// redisOptions are the redis command's flags.
type redisOptions struct {
	locks, faults string
	seeds         int
	etcdLock      string
	clients       int
	hold, ttl     time.Duration
	duration      time.Duration
	redisBin      string
	sentinelBin   string
	out           string
	asJSON        bool
	cluster       clusterFlags
}

// redisCommand is `lockbench redis`: the Redis study (issue #31).
func redisCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "redis", redisSynopsis)
	var o redisOptions
	fs.StringVar(&o.locks, "locks", redisrun.SetNX+","+redisrun.Redlock, "comma-separated Redis strategies: redis-setnx (SET NX PX on the Sentinels' primary) and redlock (5 independent primaries)")
	fs.StringVar(&o.faults, "faults", "", "comma-separated faults (default: every fault that has a meaning for each lock; "+strings.Join(redisrun.FaultNames(), ", ")+")")
	fs.IntVar(&o.seeds, "seeds", 10, "runs of each cell (about 36 s each at the defaults; a fault is timed against the clients' grants, so a seed is a repetition)")
	fs.StringVar(&o.etcdLock, "etcd-lock", "queue", "the etcd strategy run under "+harness.EtcdFailoverScenario+" beside them, or none")
	fs.IntVar(&o.clients, "clients", 3, "clients taking turns on the lock (2..64)")
	fs.DurationVar(&o.hold, "hold", redisrun.DefaultHold, "how long each grant is held (longer than a failover, as a batch job's lock)")
	fs.DurationVar(&o.ttl, "ttl", 0, fmt.Sprintf("the Redis key's expiry, renewed every TTL/3 while held (default %s; %s under %s, which must outlast it within --duration)", redisrun.DefaultTTL, redisrun.PauseHolderTTL, redisrun.PauseHolder))
	fs.DurationVar(&o.duration, "duration", redisrun.DefaultDuration, "how long clients keep asking in each Redis run; holds begun by then are finished")
	fs.StringVar(&o.redisBin, "redis-bin", "redis-server", "the redis-server program")
	fs.StringVar(&o.sentinelBin, "sentinel-bin", "redis-sentinel", "the redis-sentinel program")
	fs.StringVar(&o.out, "out", harness.DefaultOut, "parent folder: the study is written to OUT/redis-<time>/ (redis.json, a folder per Redis run, the etcd cell's run folders)")
	fs.BoolVar(&o.asJSON, "json", false, "print the study's table as JSON (as redis.json holds it)")
	o.cluster.register(fs)
	if err := fs.parseFlagsOnly(args); err != nil {
		return err
	}
	spec, err := o.spec()
	if err != nil {
		return err
	}
	return runRedis(ctx, e, o, spec)
}

// spec checks the flags and builds the study's spec.
func (o redisOptions) spec() (harness.RedisSpec, error) {
	lockNames, err := namesList("locks", o.locks)
	if err != nil {
		return harness.RedisSpec{}, err
	}
	var faults []string
	if o.faults != "" {
		if faults, err = namesList("faults", o.faults); err != nil {
			return harness.RedisSpec{}, err
		}
	}
	for _, l := range lockNames {
		if l != redisrun.SetNX && l != redisrun.Redlock {
			return harness.RedisSpec{}, badInputf("--locks: unknown Redis strategy %q: valid are %s and %s", l, redisrun.SetNX, redisrun.Redlock)
		}
	}
	for _, f := range faults {
		if !slices.Contains(redisrun.FaultNames(), f) {
			return harness.RedisSpec{}, badInputf("--faults: unknown fault %q: valid are %s", f, strings.Join(redisrun.FaultNames(), ", "))
		}
	}
	if o.etcdLock != "none" {
		if _, err := locks.Lookup(o.etcdLock); err != nil {
			return harness.RedisSpec{}, badInputf("--etcd-lock: %v (or none)", err)
		}
	}
	switch {
	case o.seeds < 1 || o.seeds > 1000:
		return harness.RedisSpec{}, badInputf("--seeds %d: must be 1..1000", o.seeds)
	case o.clients < 2 || o.clients > 64:
		return harness.RedisSpec{}, badInputf("--clients %d: must be 2..64", o.clients)
	case o.hold < 0:
		return harness.RedisSpec{}, badInputf("--hold %s: must be ≥ 0", o.hold)
	case o.ttl != 0 && o.ttl < 30*time.Millisecond:
		return harness.RedisSpec{}, badInputf("--ttl %s: must be ≥30ms (it is renewed every TTL/3)", o.ttl)
	case o.duration <= 0:
		return harness.RedisSpec{}, badInputf("--duration %s: must be > 0", o.duration)
	}
	spec := harness.RedisSpec{Locks: lockNames, Faults: faults, Seeds: o.seeds, Out: o.out,
		Redis: rediscluster.Options{RedisBin: o.redisBin, SentinelBin: o.sentinelBin},
		Run:   redisrun.Spec{Clients: o.clients, Hold: o.hold, TTL: o.ttl, Duration: o.duration}}
	if o.etcdLock != "none" {
		spec.EtcdLock = o.etcdLock
		if spec.Cluster, err = o.cluster.options(); err != nil {
			return spec, err
		}
	}
	if err := spec.Validate(); err != nil {
		return spec, badInput(err)
	}
	for _, bin := range []struct{ flag, path string }{{"redis-bin", o.redisBin}, {"sentinel-bin", o.sentinelBin}} {
		if _, err := exec.LookPath(bin.path); err != nil {
			return spec, badInputf("--%s %s: not found (install the Debian packages redis-server and redis-sentinel: make redis-deps)", bin.flag, bin.path)
		}
	}

	if err := checkDir("out", o.out, false); err != nil {
		return spec, err
	}
	return spec, nil
}

// runRedis runs the study and prints its table.
func runRedis(ctx context.Context, e *env, o redisOptions, spec harness.RedisSpec) error {
	removeStale("", staleTo(e.stderr))
	data, err := e.scratch.make("")
	if err != nil {
		return err
	}
	spec.Redis.DataParent = data
	if spec.EtcdLock != "" {
		if spec.Cluster, err = o.cluster.withData(e, spec.Cluster); err != nil {
			return err
		}
	}
	spec.Progress = func(line string) { fmt.Fprintln(e.stderr, "lockbench redis: "+line) }
	st, err := harness.RunRedisStudy(ctx, spec)
	if st == nil {
		if ctx.Err() != nil {
			return interrupted(err)
		}
		return err
	}
	if o.asJSON {
		if err := writeJSON(e.stdout, st); err != nil {
			return err
		}
	} else {
		printStudy(e.stdout, st)
	}
	fmt.Fprintf(e.stderr, "lockbench redis: histories and checks in %s\n", st.Dir)
	switch {
	case err != nil && ctx.Err() != nil:
		return interrupted(err)
	case err != nil:
		return err
	case st.Interrupted:
		return errInterrupted
	case slices.ContainsFunc(st.Cells, func(c harness.StudyCell) bool { return !c.AsExpected }):
		return errViolation
	}
	return nil
}

// printStudy prints one row per cell: how many seeds failed exclusion,
// fencing and any other check, and whether that is what the lock's
// design predicts.
func printStudy(w io.Writer, st *harness.Study) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "backend\tlock\tfault\texclusion failed\tfencing failed\tother checks failed\texpected")
	for _, c := range st.Cells {
		var other []string
		for _, n := range slices.Sorted(maps.Keys(c.Failed)) {
			if n != verdict.Exclusion && n != verdict.Fencing {
				other = append(other, fmt.Sprintf("%s %d", n, c.Failed[n]))
			}
		}
		exp := "as expected"
		if !c.AsExpected {
			exp = "NOT as expected (want " + expectText(c.Expect) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d of %d\t%d of %d\t%s\t%s\n", c.Backend, c.Lock, c.Fault,
			c.Failed[verdict.Exclusion], c.Seeds, c.Failed[verdict.Fencing], c.Seeds, orDash(strings.Join(other, ", ")), exp)
	}
	tw.Flush()
	for _, c := range st.Cells {
		if c.Example != "" {
			fmt.Fprintf(w, "\nfirst double grant of %s under %s: %s\n", c.Lock, c.Fault, c.Example)
		}
	}
	if st.Interrupted {
		fmt.Fprintln(w, "(interrupted: the seeds that ran)")
	}
}

// expectText is an expectation as "exclusion pass, fencing fail".
func expectText(e map[string]verdict.Verdict) string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(e)) {
		parts = append(parts, n+" "+string(e[n]))
	}
	return strings.Join(parts, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
