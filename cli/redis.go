package cli

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/lockbench/lockbench/redis/redislocks"
	"github.com/lockbench/lockbench/scenarios"
)

// The Redis study's defaults (docs/redis.md "Results"): both Redis locks
// and etcd's queue, every built-in scenario for Redis and etcd's
// counterpart of their failovers, 10 seeds, two cells at a time.
const (
	redisStudyLocks    = redislocks.SetNXName + "," + redislocks.RedlockName + ",queue"
	redisEtcdScenario  = "leader-kill-long-hold"
	redisStudySeeds    = 10
	redisStudyParallel = 2
)

// redisStudyScenarios are the built-in scenarios for the Redis backend,
// then etcd's counterpart of their failovers.
func redisStudyScenarios() []string {
	var out []string
	for _, n := range append(scenarios.Names(), scenarios.ExtendedNames()...) {
		if sc, err := scenarios.Lookup(n); err == nil && slices.Contains(sc.Backends, redislocks.Backend) {
			out = append(out, n)
		}
	}
	return append(out, redisEtcdScenario)
}

var redisSynopsis = "redis [--locks a,b] [--scenarios x,y] [--seeds N] [--parallel N] [suite's flags]\n\n" +
	"The Redis study (docs/redis.md): `lockbench suite` over the Redis scenarios, with\n" +
	"other defaults — --locks " + redisStudyLocks + ", --seeds " + strconv.Itoa(redisStudySeeds) +
	", --parallel " + strconv.Itoa(redisStudyParallel) + ",\n" +
	"--scenarios " + strings.Join(redisStudyScenarios(), ",") + ".\n" +
	"Each Redis cell runs on real redis-server and redis-sentinel processes of its own\n" +
	"(a primary, two replicas and three Sentinels for redis-setnx; five independent\n" +
	"primaries for redlock); a scenario a lock's deployment cannot take is skipped,\n" +
	"said. It writes a suite folder and exits as suite does (1 when a cell is not as\n" +
	"its scenario expects). Needs redis-server and redis-sentinel (make redis-deps)."

// redisCommand is `lockbench redis`: the Redis study, a suite (issue #31,
// #46).
func redisCommand(ctx context.Context, e *env, args []string) error {
	return suiteAs(ctx, e, "redis", redisSynopsis, map[string]string{
		"locks":     redisStudyLocks,
		"scenarios": strings.Join(redisStudyScenarios(), ","),
		"seeds":     strconv.Itoa(redisStudySeeds),
		"parallel":  strconv.Itoa(redisStudyParallel),
	}, args)
}
