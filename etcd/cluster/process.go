package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/version"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockbench/lockbench/internal/owned"
)

// EtcdBinSelf is the --etcd-bin value that runs lockbench's own binary as
// each member (MemberCommand), so that no etcd binary is needed.
const EtcdBinSelf = "self"

// EmbeddedVersion is the etcd release built into lockbench: the embedded
// cluster's, and a "self" member process's.
var EmbeddedVersion = version.Version

// ProcessCluster is an etcd cluster whose members are operating-system
// processes: lockbench's own binary (EtcdBinSelf) or another etcd binary
// of release 3.4 or later. Unlike the embedded kind it can freeze a member
// (SIGSTOP) and crashes it the way the kernel does (SIGKILL), and it runs
// old releases whose bugs users live with. Close it on every path out;
// every process is also killed by KillAllNow and, on Linux, when
// lockbench itself dies (PR_SET_PDEATHSIG).
type ProcessCluster struct {
	opts    Options
	bin     Binary
	dir     string
	owner   *os.File
	initial string
	members []*procMember
	stale   []Stale
	// cuts and relays: the relay in front of each member's peer port,
	// through which Partition cuts it (peerproxy.go).
	cuts   peerCuts
	relays []*peerRelay
}

// The process cluster is one kind of Members.
var _ Members = (*ProcessCluster)(nil)

// Binary is an etcd executable and the release it runs.
type Binary struct {
	// Path is the executable; Prefix the arguments before the flags
	// (MemberCommand when Path is lockbench itself).
	Path    string
	Prefix  []string
	Version Version
}

// ResolveBinary finds what --etcd-bin names: EtcdBinSelf, or the path of
// an etcd binary whose release it asks (`PATH --version`).
func ResolveBinary(ctx context.Context, etcdBin string) (Binary, error) {
	if etcdBin == EtcdBinSelf {
		exe, err := os.Executable()
		if err != nil {
			return Binary{}, fmt.Errorf("etcd-bin self: find lockbench's own binary: %w", err)
		}
		v, err := ParseVersion("etcd Version: " + EmbeddedVersion)
		return Binary{Path: exe, Prefix: []string{MemberCommand}, Version: v}, err
	}
	path, err := exec.LookPath(etcdBin)
	if err != nil {
		return Binary{}, fmt.Errorf("etcd-bin %s: %w", etcdBin, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	if err != nil {
		return Binary{}, fmt.Errorf("etcd-bin %s --version: %w (%s)", path, err, firstLine(string(out)))
	}
	v, err := ParseVersion(string(out))
	if err != nil {
		return Binary{}, fmt.Errorf("etcd-bin %s: %w", path, err)
	}
	if !v.AtLeast(MinVersion.Major, MinVersion.Minor) {
		return Binary{}, fmt.Errorf("etcd-bin %s is etcd %s: lockbench runs etcd %d.%d and later", path, v, MinVersion.Major, MinVersion.Minor)
	}
	return Binary{Path: path, Version: v}, nil
}

// StartProcesses starts opts.Members member processes of opts.EtcdBin and
// waits until they have a leader. On any error everything it started is
// killed and its data folder removed.
func StartProcesses(ctx context.Context, opts Options) (*ProcessCluster, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if opts.TLS {
		return nil, fmt.Errorf("TLS: not supported by the %s cluster yet (use the embedded cluster)", KindProcess)
	}
	if opts.LeaseCheckpoint {
		return nil, fmt.Errorf("lease checkpoint: not supported by the %s cluster yet (use the embedded cluster)", KindProcess)
	}
	if opts.SnapshotCount > 0 {
		return nil, fmt.Errorf("snapshot count: not supported by the %s cluster yet (use the embedded cluster)", KindProcess)
	}
	bin, err := ResolveBinary(ctx, opts.EtcdBin)
	if err != nil {
		return nil, err
	}
	// Checked before anything starts: flags this release lacks.
	if _, err := memberFlags(bin.Version, memberSpec{UnsafeNoFsync: opts.UnsafeNoFsync, FeatureGates: opts.FeatureGates}); err != nil {
		return nil, err
	}
	stale := opts.removeStale()
	for attempt := 1; ; attempt++ {
		pc, err := startProcesses(ctx, opts, bin)
		if err == nil {
			pc.stale = stale
			return pc, nil
		}
		// A free port taken between picking and binding: try new ones.
		if attempt == maxStartAttempts || !isAddrInUse(err) {
			return nil, err
		}
	}
}

func startProcesses(ctx context.Context, opts Options, bin Binary) (pc *ProcessCluster, err error) {
	dir, err := os.MkdirTemp(opts.DataParent, DataPrefix)
	if err != nil {
		return nil, fmt.Errorf("create data folder: %w", err)
	}
	pc = &ProcessCluster{opts: opts, bin: bin, dir: dir}
	owned.Register(dir)
	defer func() {
		if err != nil {
			pc.Close()
		}
	}()
	if pc.owner, err = owned.Claim(dir); err != nil {
		return pc, err
	}
	ports, err := freePorts(2 * opts.Members)
	if err != nil {
		return pc, err
	}
	var initial []string
	for i := 0; i < opts.Members; i++ {
		r, err := startPeerRelay(&pc.cuts, i, fmt.Sprintf("127.0.0.1:%d", ports[2*i+1]))
		if err != nil {
			return pc, err
		}
		pc.relays = append(pc.relays, r)
		m := &procMember{
			index:        i,
			name:         fmt.Sprintf("m%d", i),
			clientURL:    fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
			peerURL:      fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
			advertiseURL: r.URL(),
			dir:          filepath.Join(dir, fmt.Sprintf("m%d", i)),
			logPath:      filepath.Join(dir, fmt.Sprintf("m%d.log", i)),
		}
		pc.members = append(pc.members, m)
		initial = append(initial, m.name+"="+m.advertiseURL)
	}
	pc.initial = strings.Join(initial, ",")
	// Members of a new cluster start together: each waits for a quorum.
	for _, m := range pc.members {
		if err := pc.spawn(m, "new"); err != nil {
			return pc, err
		}
	}
	if err := pc.waitAllReady(ctx); err != nil {
		return pc, err
	}
	if _, err := waitLeader(ctx, pc.opts.Tick, pc.Leader); err != nil {
		return pc, err
	}
	return pc, pc.learnIDs(ctx)
}

// learnIDs maps each member's id to its index, so that the peer relays
// know who dialled them (X-Server-From).
func (pc *ProcessCluster) learnIDs(ctx context.Context) error {
	cli, err := pc.members[0].statusClient()
	if err != nil {
		return fmt.Errorf("member list: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := cli.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("member list: %w", err)
	}
	ids := map[string]int{}
	for _, mem := range resp.Members {
		for _, m := range pc.members {
			if mem.Name == m.name {
				ids[fmt.Sprintf("%x", mem.ID)] = m.index
			}
		}
	}
	if len(ids) != len(pc.members) {
		return fmt.Errorf("member list: %d of %d members named", len(ids), len(pc.members))
	}
	pc.cuts.mu.Lock()
	pc.cuts.ids = ids
	pc.cuts.mu.Unlock()
	return nil
}

// waitAllReady waits for every member to serve clients, in parallel.
func (pc *ProcessCluster) waitAllReady(ctx context.Context) error {
	errs := make(chan error, len(pc.members))
	for _, m := range pc.members {
		go func() { errs <- pc.waitReady(ctx, m) }()
	}
	var all []error
	for range pc.members {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// waitLeader polls leader until it names one, or ctx ends.
func waitLeader(ctx context.Context, tick time.Duration, leader func() int) (int, error) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		if l := leader(); l >= 0 {
			return l, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("wait for leader: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// Kind is KindProcess.
func (pc *ProcessCluster) Kind() string { return KindProcess }

// Version is the release of the members' binary.
func (pc *ProcessCluster) Version() string { return pc.bin.Version.String() }

// Binary is the members' executable and release, for the run's record.
func (pc *ProcessCluster) Binary() Binary { return pc.bin }

// Endpoints are the members' client URLs, running or not.
func (pc *ProcessCluster) Endpoints() []string {
	out := make([]string, len(pc.members))
	for i, m := range pc.members {
		out[i] = m.clientURL
	}
	return out
}

// DirectEndpoints are the Endpoints: a member process has no relay in
// front of it (a SIGKILL cuts its connections by itself).
func (pc *ProcessCluster) DirectEndpoints() []string { return pc.Endpoints() }

// Count is the number of members.
func (pc *ProcessCluster) Count() int { return len(pc.members) }

// Running reports whether member i's process is alive (paused or not).
func (pc *ProcessCluster) Running(i int) bool {
	if i < 0 || i >= len(pc.members) {
		return false
	}
	return pc.members[i].alive()
}

// Healthy reports whether every member runs, none is paused, and one
// leads.
func (pc *ProcessCluster) Healthy() bool {
	for _, m := range pc.members {
		if !m.alive() || m.isPaused() {
			return false
		}
	}
	return pc.Leader() >= 0
}

// Tick is the raft heartbeat interval.
func (pc *ProcessCluster) Tick() time.Duration { return pc.opts.Tick }

// Election is the election timeout.
func (pc *ProcessCluster) Election() time.Duration { return pc.opts.Election }

// UnsafeNoFsync reports whether the members run without fsync.
func (pc *ProcessCluster) UnsafeNoFsync() bool { return pc.opts.UnsafeNoFsync }

// PeerRelays is true: every member process's peers reach it through a
// relay.
func (pc *ProcessCluster) PeerRelays() bool { return true }

// SnapshotCount is 0: member processes run with etcd's default.
func (pc *ProcessCluster) SnapshotCount() uint64 { return 0 }

// TLS is false: the process cluster serves plain http.
func (pc *ProcessCluster) TLS() bool { return false }

// ClientTLSConfig is nil: no TLS.
func (pc *ProcessCluster) ClientTLSConfig() (*tls.Config, error) { return nil, nil }

// DataDir is the data folder (members' data and logs), removed by Close.
func (pc *ProcessCluster) DataDir() string { return pc.dir }

// StaleRemoved are the dead processes' data folders Start removed.
func (pc *ProcessCluster) StaleRemoved() []Stale { return pc.stale }

// newClient connects to one endpoint, for probes and status.
func newClient(endpoint string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, Logger: zap.NewNop(), DialKeepAliveTime: time.Second, DialKeepAliveTimeout: time.Second})
}

// ResolveBinaries resolves each --etcd-bin value of a version matrix
// (ResolveBinary) and refuses duplicates: the same value or binary twice,
// or two binaries of one release, since a suite keys its cells by release
// (report.Summary.Key) and two such columns could not be told apart.
func ResolveBinaries(ctx context.Context, etcdBins []string) ([]Binary, error) {
	if len(etcdBins) == 0 {
		return nil, fmt.Errorf("etcd-bin: no binary given")
	}
	out := make([]Binary, 0, len(etcdBins))
	for i, eb := range etcdBins {
		if eb == "" {
			return nil, fmt.Errorf("etcd-bin: empty entry %d in the list", i+1)
		}
		b, err := ResolveBinary(ctx, eb)
		if err != nil {
			return nil, err
		}
		for j, prev := range out {
			switch {
			case etcdBins[j] == eb:
				return nil, fmt.Errorf("etcd-bin: %s given twice: give each binary once", eb)
			case sameBinary(prev, b):
				return nil, fmt.Errorf("etcd-bin: %s and %s are the same binary (%s): give each once", etcdBins[j], eb, b.Path)
			case prev.Version == b.Version:
				return nil, fmt.Errorf("etcd-bin: %s and %s both run etcd %s: a suite keys its cells by release, give one binary per release", etcdBins[j], eb, b.Version)
			}
		}
		out = append(out, b)
	}
	return out, nil
}

// sameBinary reports whether a and b run the same executable the same way
// (a path and a symlink to it, "./etcd" and its absolute path).
func sameBinary(a, b Binary) bool {
	if !slices.Equal(a.Prefix, b.Prefix) {
		return false
	}
	if a.Path == b.Path {
		return true
	}
	sa, err1 := os.Stat(a.Path)
	sb, err2 := os.Stat(b.Path)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}
