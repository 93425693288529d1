package redisbackend

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"time"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/redis/rediscluster"
	"github.com/lockbench/lockbench/redis/redislocks"
)

// RedlockInstances is how many independent primaries Redlock runs on, as
// in the Redis documentation.
const RedlockInstances = 5

// Deployment is what lock runs on: a primary with replicas behind
// Sentinels (sentinel), or, for a Redlock (redislocks.Independent),
// RedlockInstances independent primaries; opts keeps the caller's
// binaries and data folder.
func Deployment(lock string, opts rediscluster.Options) (_ rediscluster.Options, sentinel bool) {
	if redislocks.Independent(lock) {
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

// Failover is what a Redis run records as the deployment's election
// time, which the liveness check allows after a member fault: the
// Sentinels' down-after plus their failover, 2–6 s here (docs/redis.md).
const Failover = 6 * time.Second

// Deployer starts Redis deployments for runs (backend.Deployer).
type Deployer struct{}

var _ backend.Deployer = Deployer{}

// Name is Redis's backend name.
func (Deployer) Name() string { return redislocks.Backend }

// Deploy starts the deployment lock runs on (Deployment), with the
// Redis programs on PATH.
func (Deployer) Deploy(ctx context.Context, lock string, opts backend.DeployOptions) (*backend.Deployment, error) {
	ropts := rediscluster.Options{DataParent: opts.DataParent, Clock: opts.Clock}
	b, m, err := Start(ctx, lock, ropts)
	if err != nil {
		return nil, err
	}
	kind := "redis-sentinel"
	if !b.Sentinel {
		kind = "redis-instances"
	}
	return &backend.Deployment{Backend: b, Members: m, Kind: kind,
		Version: Version(ctx, ropts.RedisBin), Failover: Failover, Close: m.Close}, nil
}

// Refuses says why a Redis deployment cannot take fault, or nil: one
// that acts on etcd's peer relays, snapshots or operator API, or cuts a
// member from its peers (Members.Partition says why).
func (Deployer) Refuses(fault chaos.Fault) error {
	switch n := fault.Needs(); {
	case n.PeerNetwork:
		return fmt.Errorf("fault %s cuts a member from its peers: a Redis deployment's replication and Sentinel links are not one peer network", fault.Name())
	case n.PeerRelays || n.SnapshotCount:
		return fmt.Errorf("fault %s acts on etcd's peer network or snapshots, which a Redis deployment has not", fault.Name())
	case n.OperatorAPI:
		return fmt.Errorf("fault %s is an operator's call of etcd's API (revoke a lease, compact, defragment, move the leader, replace a member), which Redis has not", fault.Name())
	case n.Protocol != "" && n.Protocol != chaos.ProtocolRedis:
		return fmt.Errorf("fault %s reads %s's client protocol at the client's relays; Redis's clients speak RESP: run it with a %s lock", fault.Name(), n.Protocol, n.Protocol)
	}
	return nil
}

var _ backend.StepRefuser = Deployer{}

// RefusesStep says why lock's deployment cannot take step, or nil:
// Redlock's independent primaries have no replication link to cut and
// no leader (no Sentinels name one), and a numbered member must be one
// of the deployment's nodes (three for redis-setnx, five for Redlock),
// so that a scenario of one strategy's faults is refused for the other
// rather than run with a fault that can only fail.
func (Deployer) RefusesStep(lock string, step chaos.Step) error {
	opts, sentinel := Deployment(lock, rediscluster.Options{})
	nodes := opts.Instances
	if sentinel {
		nodes = 1 + rediscluster.DefaultReplicas
	}
	switch {
	case !sentinel && step.Fault.Needs().AsyncReplication:
		return fmt.Errorf("%s runs on %d independent primaries, with no replica whose link %s could cut", lock, nodes, step.Fault.Name())
	case !sentinel && step.Target.Kind == chaos.TLeader:
		return fmt.Errorf("%s's %d primaries are equals: no Sentinel names a leader (target member:N or random)", lock, nodes)
	case step.Target.Kind == chaos.TMember && step.Target.N >= nodes:
		return fmt.Errorf("%s's deployment has nodes member:0..%d", lock, nodes-1)
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
