// Package harness runs one cell of work end to end: it starts (or connects
// to) the etcd cluster, runs a scenario against a lock strategy, checks the
// history and writes the run folder; and suites of cells. The CLI only
// parses flags and calls it; package bench builds its benchmarks on it.
package harness

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/etcd"
	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
)

// DefaultOut is where run folders go unless the caller names another
// parent folder (RunSpec.Out).
const DefaultOut = "results/runs"

// RunSpec is one run as the user asked for it, already validated.
type RunSpec struct {
	Lock      string
	Scenario  scenarios.Scenario
	Seed      int64
	KeepAlive etcdlocks.KeepAlive
	// RPCTimeout bounds each unary request of a lock client: 0 means
	// etcdlocks.DefaultRPCTimeout, < 0 none.
	RPCTimeout time.Duration
	// SharedConns is runner.Config.SharedConns (0: a connection each).
	SharedConns int
	Cluster     cluster.Options
	// Out is the parent folder of run folders.
	Out string
	// Started, when set, is told once the cluster is up and the clients are
	// about to connect.
	Started func(endpoints []string)
	// Progress, when set, is told about once a second how the run goes
	// (runner.Config.Progress).
	Progress func(elapsed time.Duration, grants int64)
	// InjectDelay, test-only, delays every grant of this run's lock by
	// that long (runner.Config.GrantDelay): a regression on demand.
	InjectDelay time.Duration
	// Notice, when set, hears decisions the harness took for the user,
	// such as shared connections picked because a connection per client
	// would not fit the open-file limit: they change what is measured.
	Notice func(msg string)
	// Worker, when set, makes this process one of several that drive the
	// run together on an external cluster (runner.Worker); RunExternal
	// takes it, with the prefix every worker shares.
	Worker runner.Worker
	// ClockSkew, test-only, skews the history's clock (runner.Config).
	ClockSkew time.Duration
	// RunID, when set, names the run (default NewRunID): a suite running
	// cells in parallel issues ids that no two of its runs share.
	RunID string
	// InSuite: Out is a suite's folder, whose page the run's page links.
	InSuite bool
}

// Validate checks everything that can be checked before a cluster starts,
// so that bad input never leaves anything behind.
func (s RunSpec) Validate() error { return s.validate(true) }

// ValidateInput is Validate without whether the cluster kind can do the
// scenario's faults: a suite decides that per binary and skips such cells
// with a note.
func (s RunSpec) ValidateInput() error { return s.validate(false) }

// validate is Validate, or ValidateInput without refuse.
func (s RunSpec) validate(refuse bool) error {
	if _, err := locks.Lookup(s.Lock); err != nil {
		return err
	}
	if err := s.Scenario.Validate(); err != nil {
		return err
	}
	if err := s.Scenario.CheckNames(registryNames); err != nil {
		return err
	}
	members := s.Cluster.Members
	if members == 0 {
		members = cluster.DefaultMembers
	}
	// A deployment that differs by lock checks its own members
	// (backend.StepRefuser, in refused), and a scenario not for the
	// lock's backend makes no run of it (notFor); the others have etcd's
	// count.
	if _, own := DeployerOf(s.Lock).(backend.StepRefuser); !own && s.Scenario.For(BackendOf(s.Lock)) {
		if err := s.Scenario.CheckMembers(members); err != nil {
			return err
		}
	}
	if refuse {
		if err := s.refused(); err != nil {
			return err
		}
	}
	if err := runner.CheckSharedConns(s.Scenario, s.SharedConns); err != nil {
		return err
	}
	if err := runner.CheckWorker(s.Worker, s.Scenario); err != nil {
		return err
	}
	if err := checkClients(s.Scenario.Clients, s.SharedConns); err != nil {
		return err
	}
	// etcd's leases are whole seconds; another backend's lock takes the
	// TTL its scenario allows it (scenarios.MinMillisecondTTL), and a
	// scenario not for etcd makes no etcd run to check (notFor).
	if DeployerOf(s.Lock) == nil && s.Scenario.For(BackendOf(s.Lock)) {
		if _, err := (etcdlocks.Options{Options: locks.Options{TTL: s.Scenario.TTL()}, KeepAlive: s.KeepAlive}).WithDefaults(); err != nil {
			return err
		}
	}
	if s.Out == "" {
		return errors.New("output folder is empty")
	}
	return nil
}

// registryNames are the names a scenario's expectations may use: the
// registered strategies, the keepalive policies and the backends.
var registryNames = verdict.Names{
	Lock:      func(l string) error { _, err := locks.Lookup(l); return err },
	KeepAlive: func(k string) error { _, err := etcdlocks.ParseKeepAlive(k); return err },
	Backend:   checkBackend,
}

// Result is a finished run: where its folder is and what it found, for
// the caller to print or to aggregate (suite, bench).
type Result struct {
	Dir     string
	Summary report.Summary
}

// Run starts a cluster (embedded, or member processes when
// spec.Cluster.EtcdBin is set), runs spec on it, checks the history and
// writes the run folder. The cluster is closed and its data removed on every
// path out. When ctx ends early the run stops cleanly and is still written,
// marked interrupted.
func Run(ctx context.Context, spec RunSpec) (res *Result, err error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if d := DeployerOf(spec.Lock); d != nil {
		return RunDeployed(ctx, d, spec)
	}
	members := spec.Cluster.Members
	if members == 0 {
		members = cluster.DefaultMembers
	}
	// Before the cluster starts: a run that cannot fit costs nothing.
	if err := spec.fitFDs(members, true); err != nil {
		return nil, err
	}
	if opts := ClusterFor(spec.Cluster, spec.Scenario); !SameFaultOptions(opts, spec.Cluster) {
		if spec.Notice != nil {
			spec.Notice(fmt.Sprintf("scenario %s: %s", spec.Scenario.Name, FaultOptionsNote(spec.Cluster, opts)))
		}
		spec.Cluster = opts
	}
	c, err := cluster.Open(ctx, spec.Cluster)
	if err != nil {
		return nil, fmt.Errorf("start etcd cluster: %w", err)
	}
	defer func() {
		if cerr := c.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close etcd cluster: %w", cerr)
		}
	}()
	return RunOn(ctx, c, spec)
}

// RunOn runs spec on a running cluster lockbench started (see Run), which
// spec.Cluster describes: a scenario whose faults need peer relays or a
// low snapshot count needs c started with ClusterFor's options. The run's
// keys live under their own prefix and are deleted at the end, so runs can
// share a cluster.
func RunOn(ctx context.Context, c cluster.Members, spec RunSpec) (*Result, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := spec.fitFDs(c.Count(), true); err != nil {
		return nil, err
	}
	tlsCfg, err := c.ClientTLSConfig()
	if err != nil {
		return nil, fmt.Errorf("cluster TLS: %w", err)
	}
	return runTarget(ctx, spec, target{
		endpoints: c.Endpoints(),
		cluster:   c,
		client:    clientv3.Config{TLS: tlsCfg},
		config:    ClusterConfig(c),
	})
}

// target is the cluster a run's clients connect to, embedded or external.
type target struct {
	endpoints []string
	cluster   cluster.Members      // nil: external, no member faults
	client    clientv3.Config      // TLS, credentials
	prefix    string               // "": /lockbench/<run-id>/
	runID     string               // "": a new one (NewRunID)
	parent    string               // the folder of a run-id prefix ("": /lockbench/)
	dial      time.Duration        // 0: the runner's default
	config    rundir.ClusterConfig // what config.json records; its election_ms sets the liveness bound
	// backend and members, when set, are another backend than etcd and
	// its deployment (runDeployed); unset, the run is on etcd, on cluster.
	backend backend.Backend
	members backend.Members
}

// runnerBackend is what the runner drives: t's backend, or etcd on t's
// cluster with spec's client settings.
func (t target) runnerBackend(spec RunSpec) (backend.Backend, backend.Members) {
	if t.backend != nil {
		return t.backend, t.members
	}
	return etcd.Backend{ClientConfig: t.client, DialTimeout: t.dial, KeepAlive: spec.KeepAlive, RPCTimeout: spec.RPCTimeout}, etcd.MembersOf(t.cluster)
}

func runTarget(ctx context.Context, spec RunSpec, t target) (*Result, error) {
	runID, prefix := t.identify(spec)
	scenarioJSON, err := json.Marshal(spec.Scenario)
	if err != nil {
		return nil, fmt.Errorf("run %s: encode the scenario: %w", runID, err)
	}
	cfg := rundir.Config{
		Run:          identity(runID, spec, t),
		Scenario:     scenarioJSON,
		RPCTimeoutMS: etcdlocks.RPCTimeoutOf(spec.RPCTimeout).Milliseconds(),
		SharedConns:  spec.SharedConns,
		Prefix:       prefix,
		Cluster:      t.config,
		GoVersion:    runtime.Version(),
		Host:         rundir.ThisHost(),
	}
	if spec.InjectDelay != 0 {
		cfg.InjectDelay = spec.InjectDelay.String()
	}
	if w := spec.Worker; w.Count > 1 {
		cfg.Worker = &rundir.Worker{Index: w.Index, Count: w.Count, ClockSkewNS: int64(spec.ClockSkew)}
	}
	if spec.Started != nil {
		spec.Started(t.endpoints)
	}
	logs := markLogs(t.cluster)
	probe := startSchedProbe()
	b, members := t.runnerBackend(spec)
	out, err := runner.Run(ctx, runner.Config{
		Scenario: spec.Scenario, Lock: spec.Lock, Seed: spec.Seed, Prefix: cfg.Prefix,
		Endpoints: t.endpoints, Cluster: members, Backend: b,
		SharedConns: spec.SharedConns,
		GrantDelay:  spec.InjectDelay, Worker: spec.Worker, ClockSkew: spec.ClockSkew, Progress: spec.Progress,
	})
	sat := probe.stop()
	if errors.Is(err, backend.ErrClaimed) {
		// Another run took the prefix first: bad input, as a prefix that
		// holds keys is, and nothing of this run was written.
		return nil, inputErr("run %s: %v: two runs may not share a prefix; choose another (--prefix), or wait for the other run to end", runID, err)
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	cfg.Started = out.Start.UTC()
	if len(out.Endpoints) > 0 {
		// What the clients dialed: the members' own listeners when the
		// scenario needs no front door (runner's data path).
		cfg.Cluster.Endpoints = out.Endpoints
	}
	res, err := finishRun(spec.Out, cfg, spec.Scenario, out, sat, spec.InSuite)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	if err := logs.copyTo(res.Dir); err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	return res, nil
}

// identify is the run's id and key prefix: the target's, else a new id
// and PARENT<run-id>/ (PARENT /lockbench/ unless the target names one).
func (t target) identify(spec RunSpec) (runID, prefix string) {
	runID, prefix = cmp.Or(t.runID, spec.RunID), t.prefix
	if runID == "" {
		runID = NewRunID(spec.Lock, spec.Scenario.Name, spec.Seed)
		if w := spec.Worker; w.Count > 1 {
			runID += fmt.Sprintf("-w%dof%d", w.Index, w.Count)
		}
	}
	if prefix == "" {
		prefix = cmp.Or(t.parent, DefaultCleanPrefix) + runID + "/"
	}
	return runID, prefix
}

// NewRunID names a run so that folders sort by time and say what ran.
func NewRunID(lock, scenario string, seed int64) string {
	return fmt.Sprintf("%s-%s-%s-s%d", time.Now().UTC().Format("20060102T150405.000Z"), lock, scenario, seed)
}

// etcdBinOf is the member processes' binary, for config.json; "" for the
// embedded kind.
// ClusterConfig is what config.json and bench.json record of a cluster
// lockbench started.
func ClusterConfig(c cluster.Members) rundir.ClusterConfig {
	return rundir.ClusterConfig{
		Members: c.Count(), TickMS: c.Tick().Milliseconds(), ElectionMS: c.Election().Milliseconds(),
		UnsafeNoFsync: c.UnsafeNoFsync(), Endpoints: c.Endpoints(), TLS: c.TLS(),
		Version: c.Version(), Kind: c.Kind(), EtcdBin: etcdBinOf(c),
		PeerRelays: c.PeerRelays(), SnapshotCount: c.SnapshotCount(),
	}
}

func etcdBinOf(c cluster.Members) string {
	if pc, ok := c.(*cluster.ProcessCluster); ok {
		b := pc.Binary()
		if len(b.Prefix) > 0 {
			return b.Path + " " + b.Prefix[0]
		}
		return b.Path
	}
	return ""
}

// identity is the run's identity (rundir.Run), filled here once: config.json
// and summary.json both carry it, with the build that made them and the
// version of their format.
func identity(runID string, spec RunSpec, t target) rundir.Run {
	return rundir.Run{
		RunID: runID, Lock: spec.Lock, Seed: spec.Seed,
		KeepAlive: string(etcdlocks.EffectiveKeepAlive(spec.Lock, spec.KeepAlive)),
		Backend:   BackendOf(spec.Lock),
		Etcd:      etcdOf(spec, t), EtcdVersion: etcdVersionOf(t),
		ScenarioHash: spec.Scenario.Hash(), Lockbench: rundir.ThisBuild(), Schema: rundir.SchemaVersion,
	}
}

// etcdOf is the --etcd-bin a run's member processes ran ("self" or the
// path as given), for its summary; "" on the embedded and external kinds.
func etcdOf(spec RunSpec, t target) string {
	if t.config.Kind != cluster.KindProcess {
		return ""
	}
	if spec.Cluster.EtcdBin != "" {
		return spec.Cluster.EtcdBin
	}
	return t.config.EtcdBin
}

// etcdVersionOf is the member processes' release for a run's summary (""
// unless the members are processes: config.json has the others').
func etcdVersionOf(t target) string {
	if t.config.Kind != cluster.KindProcess {
		return ""
	}
	return t.config.Version
}

// CatchUpSnapshotCount is the snapshot count (etcd's --snapshot-count and
// --snapshot-catchup-entries) of the cluster a scenario with
// snapshot-catchup gets when the user set none: its follower must fall
// 1.5 × (count + catch-up entries) = 300 entries behind, through writes
// of the fault's own, which took 0.20–0.52 s in the extended suite
// (docs/scenarios.md), where etcd's default of 10,000 would take 22,500
// writes. Only those cells get it: a snapshot every 100 entries is work
// no other cell should pay for, so they keep etcd's default.
const CatchUpSnapshotCount = 100

// ClusterFor is opts with what sc's faults need of the cluster and the
// user did not ask for, so that a scenario runs without flags of its
// own: peer relays on the embedded cluster (member processes always have
// them), a snapshot count of CatchUpSnapshotCount. What the cluster kind
// cannot give (a snapshot count on member processes) is left for refused
// to say.
func ClusterFor(opts cluster.Options, sc scenarios.Scenario) cluster.Options {
	if opts.EtcdBin != "" {
		return opts
	}
	needs := sc.Needs()
	if needs.PeerRelays {
		opts.PeerRelays = true
	}
	if needs.SnapshotCount && opts.SnapshotCount == 0 {
		opts.SnapshotCount = CatchUpSnapshotCount
	}
	return opts
}

// SameFaultOptions says whether clusters of a and b can take the same
// faults: ClusterFor's fields agree (cluster.Options holds a func, so it
// is not comparable as a whole).
func SameFaultOptions(a, b cluster.Options) bool {
	return a.PeerRelays == b.PeerRelays && a.SnapshotCount == b.SnapshotCount
}

// FaultOptionsNote says what ClusterFor added to from, for the user: it
// changes what is measured (the relays slow every commit).
func FaultOptionsNote(from, to cluster.Options) string {
	var adds []string
	if to.PeerRelays && !from.PeerRelays {
		adds = append(adds, "peer relays (as --peer-relays; every commit a little slower)")
	}
	if to.SnapshotCount != from.SnapshotCount {
		adds = append(adds, fmt.Sprintf("a snapshot count of %d (as --snapshot-count %d)", to.SnapshotCount, to.SnapshotCount))
	}
	return "its faults need the cluster started with " + strings.Join(adds, " and ")
}

// Refused says why a cluster of opts cannot run sc's faults, or nil.
func Refused(opts cluster.Options, sc scenarios.Scenario) error {
	for _, f := range sc.FaultKinds() {
		if err := cluster.Refuses(opts, f); err != nil {
			return fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
	}
	return nil
}
