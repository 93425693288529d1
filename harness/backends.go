package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/redis/redisbackend"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/zookeeper/zkbackend"
)

// deployers are the backends other than etcd, each starting a deployment
// of its own for every run of one of its strategies. A new backend adds
// its line here.
var deployers = []backend.Deployer{redisbackend.Deployer{}, zkbackend.Deployer{}}

// checkBackend fails for a name that is no backend's.
func checkBackend(name string) error {
	valid := []string{etcdlocks.Backend}
	for _, d := range deployers {
		valid = append(valid, d.Name())
	}
	if !slices.Contains(valid, name) {
		return fmt.Errorf("unknown backend %q: valid backends are %s", name, strings.Join(valid, ", "))
	}
	return nil
}

// BackendOf is the backend lock runs on (locks.Strategy.Backend), ""
// for an unknown lock.
func BackendOf(lock string) string {
	st, err := locks.Lookup(lock)
	if err != nil {
		return ""
	}
	return st.Backend
}

// DeployerOf is the Deployer of lock's backend, nil for etcd's (or an
// unknown lock's): those run on the cluster RunSpec.Cluster describes.
func DeployerOf(lock string) backend.Deployer {
	name := BackendOf(lock)
	for _, d := range deployers {
		if d.Name() == name {
			return d
		}
	}
	return nil
}

// OwnDeployment says whether lock runs on a deployment of its own
// backend that lockbench starts for each run, where the flags that choose
// or shape an etcd cluster do not apply, and names that backend.
func OwnDeployment(lock string) (backendName string, own bool) {
	if d := DeployerOf(lock); d != nil {
		return d.Name(), true
	}
	return "", false
}

// RunDeployed starts the deployment spec.Lock runs on (d's), runs spec
// on it through the runner as an etcd run is, and writes the run folder.
// The deployment is closed on every path out.
func RunDeployed(ctx context.Context, d backend.Deployer, spec RunSpec) (res *Result, err error) {
	needs := spec.Scenario.Needs()
	dep, err := d.Deploy(ctx, spec.Lock, backend.DeployOptions{DataParent: spec.Cluster.DataParent, PeerNetwork: needs.PeerNetwork, Clock: needs.Clock})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", d.Name(), err)
	}
	defer func() {
		if cerr := dep.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close %s: %w", d.Name(), cerr)
		}
	}()
	m := dep.Members
	return runTarget(ctx, spec, target{
		endpoints: m.Endpoints(), backend: dep.Backend, members: m,
		config: rundir.ClusterConfig{Members: m.Count(), Endpoints: m.Endpoints(), Kind: dep.Kind,
			Version: dep.Version, ElectionMS: dep.Failover.Milliseconds(), PeerRelays: dep.PeerRelays},
	})
}

// Refused says why the deployment s's lock runs on cannot take the
// faults of s's scenario, or nil: etcd's cluster of s's options (with
// what the faults need of it, ClusterFor), or another backend's.
func (s RunSpec) refused() error {
	if err := notFor(s.Lock, s.Scenario); err != nil {
		return err
	}
	if d := DeployerOf(s.Lock); d != nil {
		return DeployerRefuses(d, s.Lock, s.Scenario)
	}
	return Refused(ClusterFor(s.Cluster, s.Scenario), s.Scenario)
}

// notFor says why sc is not for lock's backend (scenarios.Scenario.Backends), or nil.
func notFor(lock string, sc scenarios.Scenario) error {
	if b := BackendOf(lock); !sc.For(b) {
		return inputErr("scenario %s is for %s only, and %s runs on %s", sc.Name, strings.Join(sc.Backends, ", "), lock, b)
	}
	return nil
}

// DeployerRefuses says why d's deployment for lock cannot run sc's
// faults (and, when d's deployment differs by lock, its steps), as
// Refused says it of etcd's cluster.
func DeployerRefuses(d backend.Deployer, lock string, sc scenarios.Scenario) error {
	for _, f := range sc.FaultKinds() {
		if err := d.Refuses(f); err != nil {
			return inputErr("scenario %s: %v", sc.Name, err)
		}
	}
	if sr, ok := d.(backend.StepRefuser); ok {
		for i, st := range sc.Faults() {
			if err := sr.RefusesStep(lock, st); err != nil {
				return inputErr("scenario %s: step %d (%s): %v", sc.Name, i+1, strings.TrimSpace(st.Fault.Name()+" "+st.Target.String()), err)
			}
		}
	}
	return nil
}

// CheckLockService probes etcd's lock service on c after a run of lock,
// if lock runs on it (locks.Strategy.LockService), so that a later run on
// c does not inherit a service the run left stuck; c nil (an external
// cluster, not lockbench's to replace) is not probed. It returns what it
// found ("" when sound or not probed) and whether c must be replaced.
func CheckLockService(ctx context.Context, c cluster.Members, lock string) (found string, replace bool) {
	if st, _ := locks.Lookup(lock); c == nil || !st.LockService || ctx.Err() != nil {
		return "", false
	}
	err := c.CheckLockService(ctx)
	if err == nil || ctx.Err() != nil {
		return "", false
	}
	return err.Error(), errors.Is(err, cluster.ErrLockServiceStuck)
}
