package rundir

import (
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/scenarios"
)

// Config is config.json: everything needed to understand or repeat a run.
// The harness writes it and Load reads it with this one type, so the file
// and its readers cannot disagree. The JSON names are a contract.
type Config struct {
	RunID     string             `json:"run_id"`
	Lock      string             `json:"lock"`
	Scenario  scenarios.Scenario `json:"scenario"`
	Seed      int64              `json:"seed"`
	KeepAlive locks.KeepAlive    `json:"keepalive"`
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

// LivenessBound is how long a free lock may keep waiters before the
// liveness check calls it a stall: the scenario's lease TTL plus the
// cluster's election timeout, the longest any correct lock may take to
// recover (docs/design.md §4). A config that lacks them (an old or
// hand-made one) gets the harness's defaults. The harness and Load both
// use it, so a re-check applies the bound the run was checked with.
func (c Config) LivenessBound() time.Duration {
	election := time.Duration(c.Cluster.ElectionMS) * time.Millisecond
	if election <= 0 {
		election = check.DefaultElectionTimeout
	}
	ttl := c.Scenario.TTL()
	if ttl <= 0 {
		ttl = check.DefaultLeaseTTL
	}
	return ttl + election
}

// CheckOptions are the checker's options for the run c describes.
func (c Config) CheckOptions() check.Options {
	return check.Options{LivenessBound: c.LivenessBound()}
}
