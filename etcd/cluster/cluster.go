// Package cluster runs a real N-member etcd cluster inside the process
// (server/v3/embed) on free loopback ports, and does to its members what a
// chaos test needs: crash (no leadership hand-over), restart on the same
// data, cut a member from its peers and heal it.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/types"
	"go.etcd.io/etcd/pkg/v3/featuregate"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/lockbench/lockbench/internal/owned"
)

// Defaults: a short tick and election timeout so that faults resolve in a
// fraction of a second instead of the production 100 ms / 1 s.
const (
	DefaultMembers   = 3
	DefaultTick      = 50 * time.Millisecond
	DefaultElection  = 500 * time.Millisecond
	DefaultStartWait = 30 * time.Second
	maxStartAttempts = 3
	// CloseTimeout bounds how long Close waits for members to stop.
	CloseTimeout = 15 * time.Second
)

// Options configure an embedded cluster. The zero value is the default
// cluster: 3 members, 50 ms tick, 500 ms election, fsync on, silent.
type Options struct {
	Members int
	// Tick is the raft heartbeat interval; Election the election timeout.
	Tick, Election time.Duration
	// UnsafeNoFsync disables fsync: faster, but a crash may lose data.
	UnsafeNoFsync bool
	// Verbose sends etcd's own logs (info and above) to stderr.
	Verbose bool
	// DataParent is where the data folder is created (default: os.TempDir).
	DataParent string
	// TLS serves clients over https: a CA, a server certificate (IP SAN
	// 127.0.0.1) and a client certificate are generated into the data
	// folder (see TLSFiles), and every client must present a certificate
	// signed by that CA. Peers talk plain http among themselves.
	TLS bool
	// OnStaleRemoved, when set, hears of each data folder of a dead
	// process that Start removed from DataParent (see RemoveStale), so
	// that the user learns where the space came back from.
	OnStaleRemoved func(Stale)
	// EtcdBin, when set, runs the members as processes (StartProcesses,
	// Open): EtcdBinSelf (lockbench's own binary) or an etcd binary's
	// path. Empty: the embedded cluster. docs/processes.md.
	EtcdBin string
	// LeaseCheckpoint turns on etcd's LeaseCheckpoint feature gate (with
	// LeaseCheckpointPersist): the leader sends followers each lease's
	// remaining TTL, so that a new leader need not give it a full TTL
	// again (etcd #20273). Embedded cluster only.
	LeaseCheckpoint bool
	// FeatureGates is etcd's --feature-gates value (for instance
	// "FastLeaseKeepAlive=false"), so that a test can measure a gate
	// off and on: set on the embedded members' server feature gate, or
	// passed as the flag to member processes (etcd 3.6 and later, where
	// the flag exists; an older binary is refused). Empty: etcd's
	// defaults.
	FeatureGates string
	// PeerRelays puts a relay in front of each embedded member's peer
	// port, as the process cluster always has, so that the peer faults
	// can delay or drop one member's peer traffic (ShapePeers). Off by
	// default: the relay adds a user-space copy to every raft message,
	// which would move every run's commit latency.
	PeerRelays bool
	// SnapshotCount is etcd's --snapshot-count (applied entries between
	// two snapshots) and also its --snapshot-catchup-entries (entries the
	// leader keeps behind a snapshot for slow followers); 0 keeps etcd's
	// defaults (10,000 and 5,000). A low count lets snapshot-catchup push
	// a follower past the leader's log in a second rather than after
	// 15,000 writes. Embedded cluster only.
	SnapshotCount uint64
}

func (o *Options) defaults() error {
	if o.Members == 0 {
		o.Members = DefaultMembers
	}
	if o.Tick == 0 {
		o.Tick = DefaultTick
	}
	if o.Election == 0 {
		o.Election = DefaultElection
	}
	switch {
	case o.Members < 1 || o.Members > 9:
		return fmt.Errorf("members %d: must be 1..9", o.Members)
	case o.Tick < time.Millisecond:
		return fmt.Errorf("tick %s: must be ≥1ms", o.Tick)
	case o.Election < 5*o.Tick:
		return fmt.Errorf("election timeout %s: must be ≥5× the tick (%s)", o.Election, o.Tick)
	}
	return nil
}

// Member is one etcd server of the cluster.
type Member struct {
	Index int
	Name  string
	// ClientURL is what clients dial: the member's front door.
	ClientURL string
	PeerURL   string
	dir       string
	// listenURL is where etcd itself serves clients, behind the front door.
	listenURL string
	// listenPeerURL is where etcd itself listens for peers: PeerURL, or,
	// with Options.PeerRelays, the port behind the member's relay.
	listenPeerURL string
	front         *frontDoor

	mu   sync.Mutex
	etcd *embed.Etcd // nil while crashed
	id   types.ID
	// closing is closed when the last crashed server has released its
	// listeners and data directory; a restart waits for it.
	closing chan struct{}
}

// waitClosed blocks until a crashed server's shutdown has finished.
func (m *Member) waitClosed(ctx context.Context) error {
	m.mu.Lock()
	ch := m.closing
	m.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ID is the member's raft ID.
func (m *Member) ID() types.ID {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.id
}

// Running reports whether the member's server is up.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.etcd != nil
}

// Cluster is an embedded etcd cluster. Close it on every path out: it owns
// listeners, goroutines and a temporary data folder.
type Cluster struct {
	opts    Options
	dir     string
	members []*Member
	initial string
	tls     tlsFiles // set when opts.TLS
	// owner holds the flock on the data folder's PIDFile while the
	// cluster is open (see owner.go).
	owner *os.File
	// stale are the dead processes' data folders Start removed.
	stale []Stale
	// cuts and relays: with Options.PeerRelays, the relay in front of
	// each member's peer port, through which ShapePeers acts.
	cuts   peerCuts
	relays []*peerRelay
}

// Start launches the cluster and waits until it has a leader. On any error
// everything it started is stopped and its data folder removed.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	stale := opts.removeStale()
	for attempt := 1; ; attempt++ {
		c, err = start(ctx, opts)
		if c != nil {
			c.stale = stale
		}
		// Free ports are picked then released; another process may take one
		// in between. Retry on that, not on anything else.
		if err == nil || attempt == maxStartAttempts || !isAddrInUse(err) {
			return c, err
		}
	}
}

func start(ctx context.Context, opts Options) (c *Cluster, err error) {
	dir, err := os.MkdirTemp(opts.DataParent, "lockbench-etcd-")
	if err != nil {
		return nil, fmt.Errorf("create data folder: %w", err)
	}
	c = &Cluster{opts: opts, dir: dir}
	owned.Register(dir)
	if c.owner, err = owned.Claim(dir); err != nil {
		c.Close()
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			c.Close()
			panic(r)
		}
		if err != nil {
			c.Close()
			c = nil
		}
	}()
	clientScheme := "http"
	if opts.TLS {
		clientScheme = "https"
		if c.tls, err = generateTLS(filepath.Join(dir, tlsDir)); err != nil {
			return c, fmt.Errorf("generate TLS certificates: %w", err)
		}
	}
	ports, err := freePorts(3 * opts.Members)
	if err != nil {
		return c, err
	}
	var initial []string
	for i := 0; i < opts.Members; i++ {
		m := &Member{
			Index:     i,
			Name:      fmt.Sprintf("m%d", i),
			ClientURL: fmt.Sprintf("%s://127.0.0.1:%d", clientScheme, ports[3*i]),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[3*i+1]),
			listenURL: fmt.Sprintf("%s://127.0.0.1:%d", clientScheme, ports[3*i+2]),
			dir:       filepath.Join(dir, fmt.Sprintf("m%d", i)),
		}
		m.listenPeerURL = m.PeerURL
		if opts.PeerRelays {
			r, err := startPeerRelay(&c.cuts, i, fmt.Sprintf("127.0.0.1:%d", ports[3*i+1]))
			if err != nil {
				return c, err
			}
			c.relays = append(c.relays, r)
			m.PeerURL = r.URL()
		}
		m.front = newFrontDoor(fmt.Sprintf("127.0.0.1:%d", ports[3*i]), fmt.Sprintf("127.0.0.1:%d", ports[3*i+2]))
		if err := m.front.open(); err != nil {
			return c, fmt.Errorf("member %s front door: %w", m.Name, err)
		}
		c.members = append(c.members, m)
		initial = append(initial, m.Name+"="+m.PeerURL)
	}
	c.initial = strings.Join(initial, ",")

	// Members of a new cluster must start together: each waits for a quorum.
	errs := make(chan error, len(c.members))
	for _, m := range c.members {
		go func() { errs <- c.startMember(ctx, m, embed.ClusterStateFlagNew) }()
	}
	var first error
	for range c.members {
		if e := <-errs; e != nil && first == nil {
			first = e
		}
	}
	if first != nil {
		return c, first
	}
	if _, err := c.WaitLeader(ctx); err != nil {
		return c, err
	}
	c.learnIDs()
	return c, nil
}

func (c *Cluster) config(m *Member, state string) (*embed.Config, error) {
	cfg := embed.NewConfig()
	cfg.Name = m.Name
	cfg.Dir = m.dir
	cu, err := url.Parse(m.listenURL)
	if err != nil {
		return nil, err
	}
	pu, err := url.Parse(m.PeerURL)
	if err != nil {
		return nil, err
	}
	lpu, err := url.Parse(m.listenPeerURL)
	if err != nil {
		return nil, err
	}
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*lpu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	if c.opts.SnapshotCount > 0 {
		cfg.SnapshotCount = c.opts.SnapshotCount
		cfg.SnapshotCatchUpEntries = c.opts.SnapshotCount
	}
	cfg.InitialCluster = c.initial
	cfg.InitialClusterToken = "lockbench"
	cfg.ClusterState = state
	cfg.TickMs = uint(c.opts.Tick / time.Millisecond)
	cfg.ElectionMs = uint(c.opts.Election / time.Millisecond)
	cfg.UnsafeNoFsync = c.opts.UnsafeNoFsync
	cfg.ListenMetricsUrls = nil
	if c.opts.LeaseCheckpoint {
		fg, ok := cfg.ServerFeatureGate.(featuregate.MutableFeatureGate)
		if !ok {
			return nil, fmt.Errorf("lease checkpoint: etcd's feature gates cannot be set")
		}
		if err := fg.Set("LeaseCheckpoint=true,LeaseCheckpointPersist=true"); err != nil {
			return nil, fmt.Errorf("lease checkpoint: %w", err)
		}
	}
	if c.opts.FeatureGates != "" {
		fg, ok := cfg.ServerFeatureGate.(featuregate.MutableFeatureGate)
		if !ok {
			return nil, fmt.Errorf("feature gates %q: etcd's feature gates cannot be set", c.opts.FeatureGates)
		}
		if err := fg.Set(c.opts.FeatureGates); err != nil {
			return nil, fmt.Errorf("feature gates %q (want etcd's Gate=true|false,…): %w", c.opts.FeatureGates, err)
		}
	}
	if c.opts.TLS {
		cfg.ClientTLSInfo = c.tls.serverTLSInfo()
	}
	// A throwaway cluster: should someone enable auth on it, a login need
	// not cost a 50 ms bcrypt (seconds under the race detector).
	cfg.BcryptCost = 4 // bcrypt.MinCost
	cfg.Metrics = "basic"
	if c.opts.Verbose {
		cfg.LogLevel = "info"
		cfg.LogOutputs = []string{"stderr"}
	} else {
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	}
	return cfg, nil
}

func (c *Cluster) startMember(ctx context.Context, m *Member, state string) error {
	cfg, err := c.config(m, state)
	if err != nil {
		return fmt.Errorf("member %s: %w", m.Name, err)
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start member %s: %w", m.Name, err)
	}
	wait := time.NewTimer(DefaultStartWait)
	defer wait.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("start member %s: %w", m.Name, err)
	case <-ctx.Done():
		e.Close()
		return fmt.Errorf("start member %s: %w", m.Name, ctx.Err())
	case <-wait.C:
		e.Close()
		return fmt.Errorf("start member %s: not ready after %s", m.Name, DefaultStartWait)
	}
	m.mu.Lock()
	m.etcd, m.id = e, e.Server.MemberID()
	m.mu.Unlock()
	return nil
}

// Members returns the cluster's members, index order.
func (c *Cluster) Members() []*Member { return c.members }

// Endpoints are the client URLs of all members, running or not.
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.ClientURL
	}
	return out
}

// DirectEndpoints are the URLs where each member's etcd itself serves
// clients (embed's own listener), bypassing the front doors. A client on
// them saves a user-space relay per RPC and per watch event, but a crash
// does not cut its connections (etcd keeps them open until its graceful
// stop gives up), so only runs without member faults may use them; the
// addresses stay the same across a restart.
func (c *Cluster) DirectEndpoints() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.DirectURL()
	}
	return out
}

// DirectURL is where the member's etcd serves clients behind its front
// door (see Cluster.DirectEndpoints for when a client may use it).
func (m *Member) DirectURL() string { return m.listenURL }

// DataDir is the cluster's temporary data folder, removed by Close.
func (c *Cluster) DataDir() string { return c.dir }

// StaleRemoved are the data folders of dead processes that Start removed
// before it made this cluster's own, for the caller to report.
func (c *Cluster) StaleRemoved() []Stale { return c.stale }

// Tick is the cluster's raft heartbeat interval.
func (c *Cluster) Tick() time.Duration { return c.opts.Tick }

// UnsafeNoFsync reports whether the cluster runs without fsync.
func (c *Cluster) UnsafeNoFsync() bool { return c.opts.UnsafeNoFsync }

// PeerRelays reports whether the members were started with peer relays
// (Options.PeerRelays).
func (c *Cluster) PeerRelays() bool { return c.opts.PeerRelays }

// SnapshotCount is Options.SnapshotCount (0: etcd's default).
func (c *Cluster) SnapshotCount() uint64 { return c.opts.SnapshotCount }

// Healthy reports whether every member runs and one leads: a cluster fit
// to start a new run on.
func (c *Cluster) Healthy() bool {
	for _, m := range c.members {
		if !m.Running() {
			return false
		}
	}
	return c.Leader() >= 0
}

// Election is the cluster's election timeout.
func (c *Cluster) Election() time.Duration { return c.opts.Election }

// Leader returns the index of the member that running members agree leads,
// or -1 when there is none (no quorum, or an election in progress).
func (c *Cluster) Leader() int {
	votes := map[types.ID]int{}
	for _, m := range c.members {
		m.mu.Lock()
		if m.etcd != nil {
			if l := m.etcd.Server.Leader(); l != 0 {
				votes[l]++
			}
		}
		m.mu.Unlock()
	}
	for _, m := range c.members {
		if !m.Running() {
			continue
		}
		// The leader must be running, believe itself leader, and be the
		// leader for a majority of the cluster.
		if votes[m.ID()] > len(c.members)/2 {
			m.mu.Lock()
			self := m.etcd.Server.Leader() == m.id
			m.mu.Unlock()
			if self {
				return m.Index
			}
		}
	}
	return -1
}

// WaitLeader polls until a leader is agreed on, or ctx ends.
func (c *Cluster) WaitLeader(ctx context.Context) (int, error) {
	tick := time.NewTicker(c.opts.Tick / 2)
	defer tick.Stop()
	for {
		if l := c.Leader(); l >= 0 {
			return l, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("wait for leader: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// ErrNotRunning is returned for a fault on a member that is already down.
var ErrNotRunning = errors.New("member is not running")

// ErrRunning is returned by Restart for a member that is up.
var ErrRunning = errors.New("member is already running")

// Crash stops member i the way a power cut does: the raft loop halts at once
// with no leadership transfer (HardStop), then its listeners and client
// connections are closed so clients see the connection drop. Close would
// hand leadership to a peer first, which is not a crash.
func (c *Cluster) Crash(i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	m.mu.Lock()
	e := m.etcd
	m.etcd = nil
	m.mu.Unlock()
	if e == nil {
		return fmt.Errorf("crash %s: %w", m.Name, ErrNotRunning)
	}
	e.Server.HardStop()
	// Its connections die with it, as a dead host's do: clients fail over
	// now, and etcd's shutdown has no open stream left to wait for.
	m.front.shut()
	// The raft loop is gone: the member is crashed from here on. Closing
	// the listeners and open streams takes up to a second (etcd waits for
	// idle peer connections), so it happens in the background; Restart and
	// Close wait for it.
	done := make(chan struct{})
	m.mu.Lock()
	m.closing = done
	m.mu.Unlock()
	go func() {
		defer close(done)
		e.Close()
	}()
	return nil
}

// Restart starts a crashed member again on its own data directory and
// waits until it is ready to serve.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	if m.Running() {
		return fmt.Errorf("restart %s: %w", m.Name, ErrRunning)
	}
	if err := m.waitClosed(ctx); err != nil {
		return fmt.Errorf("restart %s: %w", m.Name, err)
	}
	if err := m.front.open(); err != nil {
		return fmt.Errorf("restart %s: front door: %w", m.Name, err)
	}
	// The old listeners may take a moment to release their ports.
	return whilePortBusy(ctx, m.Name, 50*time.Millisecond, func() error {
		return c.startMember(ctx, m, embed.ClusterStateFlagExisting)
	})
}

// Partition cuts member i from all its peers, in both directions, while
// leaving its client port open: clients connected to it stay connected to
// a member that cannot reach a quorum.
func (c *Cluster) Partition(i int) error { return c.cut(i, true) }

// Heal undoes Partition of member i.
func (c *Cluster) Heal(i int) error { return c.cut(i, false) }

func (c *Cluster) cut(i int, cut bool) error {
	target, err := c.member(i)
	if err != nil {
		return err
	}
	link := func(from *Member, to types.ID) {
		from.mu.Lock()
		defer from.mu.Unlock()
		switch {
		case from.etcd == nil:
		case cut:
			from.etcd.Server.CutPeer(to)
		default:
			from.etcd.Server.MendPeer(to)
		}
	}
	for _, m := range c.members {
		if m != target {
			link(target, m.ID())
			link(m, target.ID())
		}
	}
	return nil
}

func (c *Cluster) member(i int) (*Member, error) {
	if i < 0 || i >= len(c.members) {
		return nil, fmt.Errorf("member %d: cluster has members 0..%d", i, len(c.members)-1)
	}
	return c.members[i], nil
}

// StuckDumpEnv names a file into which Close writes every goroutine's stack
// when members do not stop in time: to find where etcd's shutdown waits.
const StuckDumpEnv = "LOCKBENCH_STUCK_DUMP"

// dumpGoroutines writes all stacks to path and says where they went.
func dumpGoroutines(path string) string {
	f, err := os.Create(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if err := pprof.Lookup("goroutine").WriteTo(f, 2); err != nil {
		return err.Error()
	}
	return "written to " + path
}

// Close stops every member and removes the data folder. It is safe to call
// more than once and on a partly started cluster.
func (c *Cluster) Close() error {
	if c == nil {
		return nil
	}
	var wg sync.WaitGroup
	for _, m := range c.members {
		m.mu.Lock()
		e := m.etcd
		m.etcd = nil
		m.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if e == nil { // crashed: its shutdown may still be running
				m.waitClosed(context.Background())
				return
			}
			// HardStop first: a graceful leadership transfer while the
			// whole cluster shuts down only costs time.
			e.Server.HardStop()
			e.Close()
		}()
	}
	for _, m := range c.members {
		if m.front != nil {
			m.front.shut()
		}
	}
	done := make(chan struct{})
	defer func() {
		for _, r := range c.relays {
			r.close()
		}
		c.relays = nil
	}()
	go func() {
		wg.Wait()
		close(done)
	}()
	var stuck error
	select {
	case <-done:
	case <-time.After(CloseTimeout):
		// etcd's gRPC stop can wait forever on a server-side call that never
		// returns: a v3lock Lock whose watch went through the member's
		// in-process client after that client's watch stream deadlocked
		// under a burst of cancels (etcd issues #18879, #20716). Give up on
		// it rather than hang the run; the process exit reclaims it.
		stuck = fmt.Errorf("etcd members did not stop within %s", CloseTimeout)
		if path := os.Getenv(StuckDumpEnv); path != "" {
			stuck = fmt.Errorf("%w (goroutines: %s)", stuck, dumpGoroutines(path))
		}
	}
	if c.dir == "" {
		return stuck
	}
	// Removed even when members did not stop in time (stuck): their
	// goroutines may still hold files, but the process exits soon after
	// and nothing may stay behind in $TMPDIR.
	err := os.RemoveAll(c.dir)
	owned.Unregister(c.dir)
	c.dir = ""
	if c.owner != nil {
		c.owner.Close() // drops the flock
		c.owner = nil
	}
	if err != nil {
		return errors.Join(stuck, fmt.Errorf("remove data folder: %w", err))
	}
	return stuck
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// restartTries is how many times a restart tries its member's ports
// before it gives up on them.
const restartTries = 20

// whilePortBusy runs start, a restart of member name, again every pause
// for as long as it fails because a port is still in use, up to
// restartTries runs, and returns its last error (nil once it succeeds). A
// restarted member must come back on its own ports (its peers and clients
// know it by them), and those of its crashed self are released a moment
// after the crash, not at once.
func whilePortBusy(ctx context.Context, name string, pause time.Duration, start func() error) error {
	var last error
	for range restartTries {
		if last = start(); last == nil || !isAddrInUse(last) {
			return last
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("restart %s: %w", name, ctx.Err())
		case <-time.After(pause):
		}
	}
	return last
}

func isAddrInUse(err error) bool {
	return err != nil && strings.Contains(err.Error(), "address already in use")
}
