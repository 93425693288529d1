package zkbackend

import (
	"context"
	"fmt"
	"time"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/zookeeper/zkcluster"
	"github.com/lockbench/lockbench/zookeeper/zklocks"
)

// Failover is what a ZooKeeper run records as the ensemble's election
// time, which the liveness check allows after a member fault: a
// follower notices a dead leader within syncLimit ticks and the election
// that follows takes a few hundred milliseconds on zkcluster's short tick
// (docs/backends.md).
const Failover = 6 * time.Second

// Deployer starts ZooKeeper ensembles for runs (backend.Deployer).
type Deployer struct{}

var _ backend.Deployer = Deployer{}

// Name is ZooKeeper's backend name.
func (Deployer) Name() string { return zklocks.Backend }

// Deploy starts a 3-member ensemble from the installed ZooKeeper
// (make zk-deps).
func (Deployer) Deploy(ctx context.Context, _ string, opts backend.DeployOptions) (*backend.Deployment, error) {
	zopts := zkcluster.Options{DataParent: opts.DataParent, NoPeerRelays: !opts.PeerNetwork}
	if err := zkcluster.Available(zopts); err != nil {
		return nil, err
	}
	c, err := zkcluster.Start(ctx, zopts)
	if err != nil {
		return nil, err
	}
	return &backend.Deployment{Backend: Backend{}, Members: Members{c}, Kind: "zookeeper",
		Version: zkcluster.Version(ctx, zopts), Failover: Failover, PeerRelays: opts.PeerNetwork, Close: c.Close}, nil
}

// Refuses says why an ensemble cannot take fault, or nil: the faults of
// etcd's peer relays, snapshots and operator API (ZooKeeper has no call
// that revokes a session, compacts or hands the leadership over),
// Redis's asynchronous replication and empty restarts, and a fault that
// reads another system's client protocol. The faults that read
// ZooKeeper's (lose-create-reply) are its own.
func (Deployer) Refuses(fault chaos.Fault) error {
	switch n := fault.Needs(); {
	case n.OperatorAPI:
		return fmt.Errorf("fault %s is an operator's call of etcd's API (revoke a lease, compact, defragment, move the leader, replace a member), which ZooKeeper has not", fault.Name())
	case n.PeerRelays || n.SnapshotCount:
		return fmt.Errorf("fault %s acts on etcd's peer relays or snapshots, which a ZooKeeper ensemble lockbench starts has not", fault.Name())
	case n.AsyncReplication:
		return fmt.Errorf("fault %s: ZooKeeper commits only what a quorum has: it has no asynchronous replication link to cut (the fault is Redis's)", fault.Name())
	case n.Protocol != "" && n.Protocol != chaos.ProtocolZooKeeper:
		return fmt.Errorf("fault %s reads %s's client protocol at the client's relays; ZooKeeper's clients speak their own", fault.Name(), n.Protocol)
	case n.Clock:
		return fmt.Errorf("fault %s: ZooKeeper's leader expires sessions on the JVM's monotonic clock (System.nanoTime, through its Time.currentElapsedTime), which a wall-clock jump does not move (the fault is Redis's, whose keys expire on the wall clock)", fault.Name())
	case n.EmptyRestart:
		return fmt.Errorf("fault %s: a ZooKeeper member restarts on its own data (its snapshot and log): it cannot come back empty (the fault is Redis's, whose nodes persist nothing)", fault.Name())
	}
	return nil
}

// Members is an ensemble as the runner's members (backend.Members).
type Members struct{ *zkcluster.Cluster }

var _ backend.Members = Members{}

// Endpoints are the members' client addresses as URLs, member order.
func (m Members) Endpoints() []string {
	var out []string
	for _, a := range m.Addrs() {
		out = append(out, "zk://"+a)
	}
	return out
}

// DirectEndpoints are Endpoints: no relay stands in front of a member
// for every client.
func (m Members) DirectEndpoints() []string { return m.Endpoints() }
