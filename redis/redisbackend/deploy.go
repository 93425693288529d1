package redisbackend

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"

	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/redis/rediscluster"
	"github.com/lockbench/lockbench/redis/redislocks"
)

// RedlockInstances is how many independent primaries Redlock runs on, as
// in the Redis documentation.
const RedlockInstances = 5

// Deployment is what lock runs on: a primary with replicas behind
// Sentinels (sentinel), or, for Redlock, RedlockInstances independent
// primaries; opts keeps the caller's binaries and data folder.
func Deployment(lock string, opts rediscluster.Options) (_ rediscluster.Options, sentinel bool) {
	if lock == redislocks.RedlockName {
		opts.Instances, opts.Replicas, opts.Sentinels = RedlockInstances, 0, 0
		return opts, false
	}
	return opts, true
}

// Start starts lock's deployment, and returns it as the runner's backend
// and members.
func Start(ctx context.Context, lock string, opts rediscluster.Options) (Backend, Members, error) {
	redislocks.QuietLogs()
	opts, sentinel := Deployment(lock, opts)
	dep, err := rediscluster.Start(ctx, opts)
	if err != nil {
		return Backend{}, Members{}, fmt.Errorf("start redis: %w", err)
	}
	return Backend{Deployment: dep, Sentinel: sentinel}, Members{dep}, nil
}

// Refuses says why a Redis deployment cannot take fault, or nil: one
// that acts on etcd's peer network or snapshots. What else it cannot do
// (partition a node, revoke a lease, compact) the runner refuses when the
// fault strikes, as a fault that failed.
func Refuses(fault chaos.Fault) error {
	if n := fault.Needs(); n.PeerRelays || n.SnapshotCount {
		return fmt.Errorf("fault %s acts on etcd's peer network or snapshots, which a Redis deployment has not", fault.Name())
	}
	return nil
}

// versionRE finds the release in `redis-server --version`.
var versionRE = regexp.MustCompile(`v=([0-9][0-9.]*)`)

// Version is the release of the redis-server program bin ("" when it
// cannot tell), for the run's records.
func Version(ctx context.Context, bin string) string {
	if bin == "" {
		bin = "redis-server"
	}
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return ""
	}
	if m := versionRE.FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return ""
}
