package backend

import (
	"context"
	"time"

	"github.com/lockbench/lockbench/chaos"
)

// Deployer starts a deployment of its backend for one run of one lock,
// so that the harness runs a strategy of any backend the same way: it
// asks the strategy's backend's Deployer, before the run, whether the
// scenario's faults can be done, then starts the deployment, runs, and
// closes it. etcd's cluster, with its many options (external endpoints,
// member processes, TLS), is the harness's own; every other backend is a
// Deployer.
type Deployer interface {
	// Name is the backend's name (locks.Strategy.Backend).
	Name() string
	// Refuses says why a deployment of this backend cannot take fault
	// (what the fault needs, chaos.Needs, that it has not), or nil: a run
	// is refused before anything starts, and a suite skips the cell with
	// the reason.
	Refuses(fault chaos.Fault) error
	// Deploy starts the deployment lock runs on. It returns once the
	// deployment serves; Deployment.Close stops it on every path out.
	Deploy(ctx context.Context, lock string, opts DeployOptions) (*Deployment, error)
}

// DeployOptions are what the caller decides of any deployment.
type DeployOptions struct {
	// DataParent holds the deployment's data folder (default
	// os.TempDir()).
	DataParent string
	// PeerNetwork: the run's faults cut members from their peers
	// (chaos.Needs.PeerNetwork), so the members must reach each other
	// through lockbench's relays. Without it they talk directly: a relay
	// on every commit's path would slow every figure of the run.
	PeerNetwork bool
	// Clock: the run's faults move a member's wall clock
	// (chaos.Needs.Clock), so the members must be started on a clock
	// lockbench can move. Without it they read the machine's.
	Clock bool
}

// Deployment is a running deployment of a backend.
type Deployment struct {
	Backend Backend
	Members Members
	// Kind and Version are what the run's config.json records of it
	// (cluster_kind, and the server release in etcd_version).
	Kind, Version string
	// PeerRelays says the members reach each other through lockbench's
	// relays (config.json's cluster.peer_relays).
	PeerRelays bool
	// Failover is how long the deployment may take to serve again after
	// a member fault (an election, a Sentinel promotion): the liveness
	// check's allowance, recorded as config.json's election_ms.
	Failover time.Duration
	// Close stops every process of the deployment and removes its data.
	Close func() error
}
