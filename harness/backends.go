package harness

import (
	"context"
	"fmt"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/redis/redisbackend"
	"github.com/lockbench/lockbench/redis/rediscluster"
	"github.com/lockbench/lockbench/redis/redislocks"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/scenarios"
)

// backendOf is the backend lock runs on (locks.Strategy.Backend), ""
// for an unknown lock.
func backendOf(lock string) string {
	st, err := locks.Lookup(lock)
	if err != nil {
		return ""
	}
	return st.Backend
}

// RedisFailoverMS is what a Redis run's config.json records as the
// deployment's election time, which the liveness check allows after a
// member fault: the Sentinels' down-after plus their failover, 2–6 s here
// (docs/redis.md).
const RedisFailoverMS = 6000

// runRedis starts the Redis deployment spec.Lock runs on (a primary, two
// replicas and three Sentinels; Redlock's five primaries), runs spec on
// it through the runner as an etcd run is, and writes the run folder. The
// deployment is closed on every path out.
func runRedis(ctx context.Context, spec RunSpec) (res *Result, err error) {
	opts := rediscluster.Options{DataParent: spec.Cluster.DataParent}
	b, m, err := redisbackend.Start(ctx, spec.Lock, opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := m.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close redis: %w", cerr)
		}
	}()
	kind := "redis-sentinel"
	if !b.Sentinel {
		kind = "redis-instances"
	}
	return runTarget(ctx, spec, target{
		endpoints: m.Endpoints(), backend: b, members: m,
		config: rundir.ClusterConfig{Members: m.Count(), Endpoints: m.Endpoints(), Kind: kind,
			Version: redisbackend.Version(ctx, opts.RedisBin), ElectionMS: RedisFailoverMS},
	})
}

// refused says why the deployment s's lock runs on cannot take the
// faults of s's scenario, or nil: etcd's cluster of s's options (with
// what the faults need of it, ClusterFor), or a Redis deployment.
func (s RunSpec) refused() error {
	if backendOf(s.Lock) == redislocks.Backend {
		return redisRefuses(s.Scenario)
	}
	return refused(ClusterFor(s.Cluster, s.Scenario), s.Scenario)
}

// redisRefuses says why a Redis deployment cannot run sc's faults
// (redisbackend.Refuses), as refused says it of etcd's cluster.
func redisRefuses(sc scenarios.Scenario) error {
	for _, f := range sc.FaultKinds() {
		if err := redisbackend.Refuses(f); err != nil {
			return inputErr("scenario %s: %v", sc.Name, err)
		}
	}
	return nil
}
