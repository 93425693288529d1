// Package harness runs one cell of work end to end: it starts (or connects
// to) the etcd cluster, runs a scenario against a lock strategy, checks the
// history and writes the run folder. The CLI only parses flags and calls it.
package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/cluster"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/scenario"
)

// DefaultOut is where run folders go unless --out says otherwise.
const DefaultOut = "results/runs"

// Run file names inside a run folder (a contract: tools read them). The
// report package reads run folders too, so the names live there.
const (
	ConfigFile  = report.ConfigFile
	HistoryFile = report.HistoryFile
	SummaryFile = report.SummaryFile
	HTMLFile    = report.HTMLFile
)

// RunSpec is one run as the user asked for it, already validated.
type RunSpec struct {
	Lock      string
	Scenario  scenario.Scenario
	Seed      int64
	KeepAlive locks.KeepAlive
	// RPCTimeout bounds each unary request of a lock client: 0 means
	// locks.DefaultRPCTimeout, < 0 none.
	RPCTimeout time.Duration
	// SharedConns is runner.Config.SharedConns (0: a connection each).
	SharedConns int
	Cluster     cluster.Options
	// Out is the parent folder of run folders.
	Out string
	// Started, when set, is told once the cluster is up and the clients are
	// about to connect.
	Started func(endpoints []string)
}

// Validate checks everything that can be checked before a cluster starts,
// so that bad input never leaves anything behind.
func (s RunSpec) Validate() error {
	if _, err := locks.Lookup(s.Lock); err != nil {
		return err
	}
	if err := s.Scenario.Validate(); err != nil {
		return err
	}
	if err := runner.CheckSharedConns(s.Scenario, s.SharedConns); err != nil {
		return err
	}
	if _, err := (locks.Options{TTL: s.Scenario.TTL(), KeepAlive: s.KeepAlive}).WithDefaults(); err != nil {
		return err
	}
	if s.Out == "" {
		return errors.New("output folder is empty")
	}
	return nil
}

// Config is config.json: everything needed to understand or repeat a run.
type Config struct {
	RunID     string            `json:"run_id"`
	Lock      string            `json:"lock"`
	Scenario  scenario.Scenario `json:"scenario"`
	Seed      int64             `json:"seed"`
	KeepAlive locks.KeepAlive   `json:"keepalive"`
	// RPCTimeoutMS is the lock clients' per-request deadline (0: none).
	RPCTimeoutMS int64 `json:"rpc_timeout_ms"`
	// SharedConns is how many etcd connections the clients shared (0: one
	// each).
	SharedConns int           `json:"shared_conns,omitempty"`
	Prefix      string        `json:"prefix"`
	Cluster     ClusterConfig `json:"cluster"`
	Started     time.Time     `json:"started"`
	GoVersion   string        `json:"go_version"`
	Host        HostInfo      `json:"host"`
}

// ClusterConfig records the cluster a run used. For an external cluster,
// tick and fsync are unknown (0/false) and election_ms is the value
// assumed for the liveness bound; credentials are never recorded beyond
// the user name and the paths of the TLS files.
type ClusterConfig struct {
	Members       int      `json:"members"`
	TickMS        int64    `json:"tick_ms"`
	ElectionMS    int64    `json:"election_ms"`
	UnsafeNoFsync bool     `json:"unsafe_no_fsync"`
	Endpoints     []string `json:"endpoints"`
	// External is set when the run used a cluster lockbench did not start.
	External bool `json:"external,omitempty"`
	// TLS is set when clients talked https.
	TLS     bool   `json:"tls,omitempty"`
	CACert  string `json:"cacert,omitempty"`
	Cert    string `json:"cert,omitempty"`
	Key     string `json:"key,omitempty"`
	User    string `json:"user,omitempty"`
	Version string `json:"etcd_version,omitempty"`
}

// HostInfo records the machine, since absolute figures depend on it.
type HostInfo struct {
	CPUs int    `json:"cpus"`
	OS   string `json:"os"`
	Arch string `json:"arch"`
}

// Result is a finished run.
type Result struct {
	Dir     string
	Summary report.Summary
}

// Run starts an embedded cluster, runs spec on it, checks the history and
// writes the run folder. The cluster is closed and its data removed on every
// path out. When ctx ends early the run stops cleanly and is still written,
// marked interrupted.
func Run(ctx context.Context, spec RunSpec) (res *Result, err error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	c, err := cluster.Start(ctx, spec.Cluster)
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

// RunOn runs spec on a running embedded cluster (see Run). The run's keys
// live under their own prefix and are deleted at the end, so runs can share
// a cluster.
func RunOn(ctx context.Context, c *cluster.Cluster, spec RunSpec) (*Result, error) {
	if err := spec.Validate(); err != nil {
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
		election:  c.Election(),
		config: ClusterConfig{
			Members: len(c.Members()), TickMS: c.Tick().Milliseconds(), ElectionMS: c.Election().Milliseconds(),
			UnsafeNoFsync: c.UnsafeNoFsync(), Endpoints: c.Endpoints(), TLS: c.TLS(),
		},
	})
}

// target is the cluster a run's clients connect to, embedded or external.
type target struct {
	endpoints []string
	cluster   *cluster.Cluster // nil: external, no member faults
	client    clientv3.Config  // TLS, credentials
	prefix    string           // "": /lockbench/<run-id>/
	dial      time.Duration    // 0: the runner's default
	election  time.Duration    // for the liveness bound
	config    ClusterConfig    // what config.json records
}

func runTarget(ctx context.Context, spec RunSpec, t target) (*Result, error) {
	runID := NewRunID(spec.Lock, spec.Scenario.Name, spec.Seed)
	prefix := t.prefix
	if prefix == "" {
		prefix = "/lockbench/" + runID + "/"
	}
	cfg := Config{
		RunID:        runID,
		Lock:         spec.Lock,
		Scenario:     spec.Scenario,
		Seed:         spec.Seed,
		KeepAlive:    spec.KeepAlive,
		RPCTimeoutMS: locks.RPCTimeoutOf(spec.RPCTimeout).Milliseconds(),
		SharedConns:  spec.SharedConns,
		Prefix:       prefix,
		Cluster:      t.config,
		GoVersion:    runtime.Version(),
		Host:         HostInfo{CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH},
	}
	if spec.Started != nil {
		spec.Started(t.endpoints)
	}
	out, err := runner.Run(ctx, runner.Config{
		Scenario: spec.Scenario, Lock: spec.Lock, Seed: spec.Seed, Prefix: cfg.Prefix,
		Endpoints: t.endpoints, Cluster: t.cluster, ClientConfig: t.client, DialTimeout: t.dial,
		KeepAlive: spec.KeepAlive, RPCTimeout: spec.RPCTimeout, SharedConns: spec.SharedConns,
	})
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	cfg.Started = out.Start.UTC()
	rep := check.Check(out.Events, CheckOptions(spec.Scenario, t.election))
	sum := report.Summarize(report.Run{
		ID: runID, Lock: spec.Lock, Scenario: spec.Scenario.Name, Clients: spec.Scenario.Clients,
		Seed: spec.Seed, Elapsed: out.Elapsed, Interrupted: out.Interrupted, Stopped: out.Stopped,
		LeaseTTL: spec.Scenario.TTL(),
	}, out.Events, rep)
	dir, err := writeRunFolder(spec.Out, runID, cfg, out.Events, sum)
	if err != nil {
		return nil, err
	}
	return &Result{Dir: dir, Summary: sum}, nil
}

// CheckOptions derives the checker's bounds from the scenario and cluster:
// a stall is a free lock with waiters for longer than a lease TTL plus an
// election, the longest any correct lock may take to recover.
func CheckOptions(sc scenario.Scenario, election time.Duration) check.Options {
	return check.Options{LivenessBound: sc.TTL() + election}
}

// NewRunID names a run so that folders sort by time and say what ran.
func NewRunID(lock, scenario string, seed int64) string {
	return fmt.Sprintf("%s-%s-%s-s%d", time.Now().UTC().Format("20060102T150405.000Z"), lock, scenario, seed)
}

// writeRunFolder writes the run's files into a hidden staging folder and
// renames it into place, so a run folder is either complete or absent.
func writeRunFolder(parent, runID string, cfg Config, events []history.Event, sum report.Summary) (string, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", parent, err)
	}
	stage, err := os.MkdirTemp(parent, "."+runID+"-")
	if err != nil {
		return "", fmt.Errorf("create run folder: %w", err)
	}
	defer os.RemoveAll(stage) // a no-op once renamed
	if err := report.WriteJSON(filepath.Join(stage, ConfigFile), cfg); err != nil {
		return "", err
	}
	if err := history.WriteFile(filepath.Join(stage, HistoryFile), events); err != nil {
		return "", fmt.Errorf("write history: %w", err)
	}
	if err := report.WriteJSON(filepath.Join(stage, SummaryFile), sum); err != nil {
		return "", err
	}
	if err := report.WriteRunHTMLFile(filepath.Join(stage, HTMLFile), cfg, events, sum); err != nil {
		return "", fmt.Errorf("write %s: %w", HTMLFile, err)
	}
	if err := os.Chmod(stage, 0o755); err != nil {
		return "", err
	}
	dir := filepath.Join(parent, runID)
	if err := os.Rename(stage, dir); err != nil {
		return "", fmt.Errorf("move run folder into place: %w", err)
	}
	return dir, nil
}
