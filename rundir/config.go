package rundir

import (
	"encoding/json"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// Run is what a run is: the one record of its identity, which the
// harness fills once and config.json, summary.json and every suite cell
// carry (Config and report.Summary embed it), so that a reader never
// rebuilds it from several files. The JSON names are a contract.
type Run struct {
	RunID string `json:"run_id"`
	Lock  string `json:"lock"`
	Seed  int64  `json:"seed"`
	// KeepAlive is the policy that kept the clients' leases (see
	// locks.EffectiveKeepAlive): it decides how long a cut-off holder
	// believes, so the same cell under two policies is two cells.
	KeepAlive string `json:"keepalive"`
	// Backend is the system the lock ran on ("etcd", "redis":
	// locks.Strategy.Backend); "" in files written before it was
	// recorded, which are etcd's.
	Backend string `json:"backend,omitempty"`
	// Etcd is the --etcd-bin the members ran as processes ("self" or a
	// path as given) and EtcdVersion their release, both "" for the
	// embedded cluster and external ones (Config.Cluster has their
	// release): a suite may run several binaries, and the same cell
	// differs by them.
	Etcd        string `json:"etcd,omitempty"`
	EtcdVersion string `json:"etcd_version,omitempty"`
	// ScenarioHash is the scenario's definition as a hash
	// (scenarios.Scenario.Hash): two runs of one name may have run two
	// definitions.
	ScenarioHash string `json:"scenario_hash,omitempty"`
	// Lockbench is the lockbench build that made the run (ThisBuild).
	Lockbench string `json:"lockbench_version,omitempty"`
	// Schema is the SchemaVersion of the files that carry this record
	// (config.json, summary.json), so a reader knows which keys mean
	// what; 0 in files written before it existed.
	Schema int `json:"schema_version,omitempty"`
}

// Config is config.json: everything needed to understand or repeat a run.
// The harness writes it and Load reads it with this one type, so the file
// and its readers cannot disagree. The JSON names are a contract.
type Config struct {
	Run
	// Scenario is the scenario as it ran (scenarios.Scenario's JSON),
	// kept as bytes: this package is the contract below the code that
	// reads scenarios.
	Scenario json.RawMessage `json:"scenario"`
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
	// InjectDelay is the test-only delay added before every grant
	// (--inject-delay), empty when none: such a run's figures are not the
	// strategy's own.
	InjectDelay string `json:"inject_delay,omitempty"`
	// Worker is set in the folder of one worker of a run that several
	// processes drove together (run --worker I/N): its share, which the
	// merge of the workers' folders checks.
	Worker *Worker `json:"worker,omitempty"`
	// MergedFrom names, in a merged run's folder (lockbench merge), the
	// workers' run folders it was made from, by worker index.
	MergedFrom []string `json:"merged_from,omitempty"`
}

// Worker is one worker's share of a run: worker Index (from 1) of Count
// drove the scenario's clients Index−1, Index−1+Count, …
type Worker struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// ClockSkewNS is the test-only skew its history's clock was given
	// (--clock-skew); such a run shows the merge's alignment, not a lock.
	ClockSkewNS int64 `json:"clock_skew_ns,omitempty"`
}

// ClusterConfig records the cluster a run used, since figures and the
// liveness bound depend on it. For an external cluster, tick and fsync are
// unknown (0/false) and election_ms is the value assumed for the liveness
// bound; credentials are never recorded beyond the user name and the
// paths of the TLS files.
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
	// Kind is the kind of cluster lockbench started ("embedded",
	// "process"); empty for an external one. EtcdBin is the member
	// processes' binary (docs/processes.md).
	Kind    string `json:"cluster_kind,omitempty"`
	EtcdBin string `json:"etcd_bin,omitempty"`
	// PeerRelays and SnapshotCount say whether the members ran with peer
	// relays and a snapshot count of lockbench's (harness.ClusterFor
	// gives both to cells whose faults need them); omitted when off.
	PeerRelays    bool   `json:"peer_relays,omitempty"`
	SnapshotCount uint64 `json:"snapshot_count,omitempty"`
}

// HostInfo records the machine, since absolute figures depend on it.
type HostInfo struct {
	CPUs int    `json:"cpus"`
	OS   string `json:"os"`
	Arch string `json:"arch"`
	// CPUModel and Kernel complete the fingerprint that tells compare
	// whether two suites ran on the same kind of machine (empty where the
	// system does not say, e.g. without /proc).
	CPUModel string `json:"cpu_model,omitempty"`
	Kernel   string `json:"kernel,omitempty"`
}

// ThisHost describes the machine this process runs on, for the records
// of runs and benchmarks made here.
func ThisHost() HostInfo {
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return HostInfo{CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		CPUModel: CPUModel(string(cpuinfo)), Kernel: strings.TrimSpace(string(kernel))}
}

// CPUModel is the first "model name" in a /proc/cpuinfo text (on arm64,
// whose cpuinfo has none, the first "CPU part"), or "".
func CPUModel(cpuinfo string) string {
	for _, field := range []string{"model name", "CPU part"} {
		for line := range strings.Lines(cpuinfo) {
			k, v, ok := strings.Cut(line, ":")
			if ok && strings.TrimSpace(k) == field {
				return strings.TrimSpace(v)
			}
		}
	}
	return ""
}

// commit is the commit `make build` stamps (-ldflags -X), for builds
// that record no VCS information (GOFLAGS=-buildvcs=false, as on
// machines that build many checkouts); "+dirty" is part of it then.
var commit string

// ThisBuild names the lockbench build running: its module version and,
// when the build recorded them, its commit (and "+dirty" for a tree with
// changes), e.g. "(devel) 35f804c+dirty". It says which code made a
// record, since verdicts change with the checker.
func ThisBuild() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	rev, dirty := commit, false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value[:min(len(s.Value), 12)]
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return v
	}
	if dirty {
		rev += "+dirty"
	}
	return v + " " + rev
}
