// Package zkcluster starts a ZooKeeper ensemble of real member processes
// on loopback ports, as package rediscluster starts Redis and package
// cluster etcd, so that ZooKeeper locks run under the same faults as
// etcd's: crash (SIGKILL, no hand-over), restart on the member's own data,
// pause (SIGSTOP), and a partition that cuts a member from its peers
// (peers.go). Each member is a JVM running ZooKeeper's QuorumPeerMain
// directly (not zkServer.sh), so the process lockbench signals is the
// server itself; each is in its own process group and owned (package
// owned): Close, a second signal, or the death of lockbench leaves none
// running, and the data folder goes with them (a later lockbench removes
// one a killed lockbench left, RemoveStale).
//
// The ZooKeeper is the installed one (Debian's zookeeper package, 3.8.0
// in bookworm; install.go says what is needed, make zk-deps installs it).
// Nothing here imports etcd or a ZooKeeper client.
package zkcluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockbench/lockbench/internal/owned"
)

// DataPrefix begins the name of every ensemble's data folder, so that
// RemoveStale finds those a killed lockbench left.
const DataPrefix = "lockbench-zk-"

// Defaults of Options.
const (
	DefaultMembers = 3
	// DefaultTickTime is ZooKeeper's time unit here (its own default is
	// 2 s): elections, a silent peer's detection and session expiry are
	// counted in ticks, and a run lasts seconds.
	DefaultTickTime = 100 * time.Millisecond
	// DefaultInitLimit (ticks, 5 s at the default tick) bounds a
	// follower's connection and first sync with its leader: a JVM just
	// started on a loaded machine is slow.
	DefaultInitLimit = 50
	// DefaultSyncLimit (ticks, 1 s at the default tick) is how long a
	// leader waits for a follower's acknowledgement, and a follower for
	// its leader, before giving it up: how soon a paused or partitioned
	// member loses its role.
	DefaultSyncLimit = 10
	// DefaultStartWait bounds Start and Restart: three JVMs starting at
	// once on two cores take a few seconds, more under load.
	DefaultStartWait = 90 * time.Second
	// MaxSessionTimeout is the longest session a client may ask for; the
	// shortest is two ticks (ZooKeeper's floor), 200 ms at the default
	// tick.
	MaxSessionTimeout = 60 * time.Second
)

// jvmFlags are the flags of every member's JVM: a small heap and the
// fastest start (C1 only, the class-data archive, no perf-data file in
// /tmp that a SIGKILL would leave); prepare adds the member's temporary
// and error-file folders, in its own folder.
var jvmFlags = []string{
	"-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-XX:-UsePerfData",
	"-Djava.net.preferIPv4Stack=true",
	// No log4j MBeans (no log4j here) and no admin server (it binds 8080;
	// zoo.cfg says so too).
	"-Dzookeeper.jmx.log4j.disable=true", "-Dzookeeper.admin.enableServer=false",
	// A member that heard from no peer for a while asks again at most
	// every 2 s (FastLeaderElection's default backs off to 60 s), so a
	// healed or restarted member rejoins within seconds.
	"-Dzookeeper.fastleader.maxNotificationInterval=2000",
	// slf4j-simple: timestamps, and not a line per four-letter word (the
	// waits ask every 100 ms).
	"-Dorg.slf4j.simpleLogger.showDateTime=true", "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSZ",
	"-Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.server.NIOServerCnxn=warn",
}

// Options shape an ensemble. Zero values take the defaults.
type Options struct {
	// Members is the ensemble's size, 1 to 9 (default 3: the smallest
	// that serves with a member lost).
	Members int
	// Java is the java program (default "java", on PATH).
	Java string
	// Classpath is the members' class path (default DefaultClasspath:
	// Debian's ZooKeeper jar and the slf4j binding that writes its log).
	Classpath string
	// DataParent holds the data folder (default os.TempDir()).
	DataParent string
	// TickTime is ZooKeeper's tickTime (default DefaultTickTime), 10 ms
	// to 2 s.
	TickTime time.Duration
	// InitLimit and SyncLimit are ZooKeeper's, in ticks (defaults
	// DefaultInitLimit and DefaultSyncLimit).
	InitLimit, SyncLimit int
	// Fsync makes members fsync their transaction log before they
	// acknowledge (forceSync=yes). Off by default: a crash here is a
	// process's SIGKILL, which loses nothing the kernel has, and an
	// fsync on a shared disk costs a run's latencies tens of milliseconds.
	Fsync bool
	// StartWait bounds Start and Restart (default DefaultStartWait).
	StartWait time.Duration
	// NoPeerRelays starts the members talking to each other directly,
	// not through lockbench's links (peers.go): every commit's quorum
	// round then costs what it does outside lockbench, and Partition and
	// Heal are refused.
	NoPeerRelays bool
}

func (o *Options) defaults() error {
	if o.Members == 0 {
		o.Members = DefaultMembers
	}
	if o.Java == "" {
		o.Java = "java"
	}
	if o.Classpath == "" {
		o.Classpath = DefaultClasspath
	}
	if o.TickTime == 0 {
		o.TickTime = DefaultTickTime
	}
	if o.InitLimit == 0 {
		o.InitLimit = DefaultInitLimit
	}
	if o.SyncLimit == 0 {
		o.SyncLimit = DefaultSyncLimit
	}
	if o.StartWait == 0 {
		o.StartWait = DefaultStartWait
	}
	switch {
	case o.Members < 1 || o.Members > 9:
		return fmt.Errorf("members %d: must be 1..9", o.Members)
	case o.TickTime < 10*time.Millisecond || o.TickTime > 2*time.Second || o.TickTime%time.Millisecond != 0:
		return fmt.Errorf("tick time %s: must be whole milliseconds, 10ms..2s", o.TickTime)
	case o.InitLimit < 1 || o.SyncLimit < 1:
		return fmt.Errorf("init limit %d, sync limit %d: must be ≥1 tick", o.InitLimit, o.SyncLimit)
	case o.StartWait < 0:
		return fmt.Errorf("start wait %s: must be ≥0", o.StartWait)
	}
	return Available(*o)
}

// RemoveStale removes the ZooKeeper data folders in parent (os.TempDir
// when empty) whose owner is dead (see owned.RemoveStale): those of a
// lockbench killed with SIGKILL, whose members died with it (their death
// signal). Start calls it.
func RemoveStale(parent string) ([]owned.Stale, error) {
	return owned.RemoveStale(parent, DataPrefix, "ZooKeeper data folder")
}

// Cluster is a running ensemble. Member i is ZooKeeper server myid i+1.
type Cluster struct {
	opts    Options
	dir     string
	owner   *os.File
	members []*member
	// links[a][b] is member a's way to member b (peers.go).
	links [][]*link

	mu  sync.Mutex // guards cut and closed
	cut []bool     // members partitioned from their peers
	// closed is set by Close.
	closed bool
}

// Start launches the ensemble's members at once and returns once every
// member serves and one leads. On any error everything started is
// stopped and the data folder removed; the error quotes the last lines
// of the log of the member that failed. A member that could not bind a
// port it was given (another process took it between freePorts and the
// member's start: parallel suites start ensembles side by side) makes
// Start try again on new ports, up to three times.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	for attempt := 1; ; attempt++ {
		c, err := startOnce(ctx, opts)
		if err == nil || attempt == 3 || ctx.Err() != nil || !strings.Contains(err.Error(), "Address already in use") {
			return c, err
		}
	}
}

// startOnce is one attempt of Start.
func startOnce(ctx context.Context, opts Options) (c *Cluster, err error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	RemoveStale(opts.DataParent)
	dir, err := os.MkdirTemp(opts.DataParent, DataPrefix)
	if err != nil {
		return nil, fmt.Errorf("create data folder: %w", err)
	}
	owned.Register(dir)
	c = &Cluster{opts: opts, dir: dir, cut: make([]bool, opts.Members)}
	defer func() {
		if err != nil {
			c.Close()
			c = nil
		}
	}()
	if c.owner, err = owned.Claim(dir); err != nil {
		return c, err
	}
	if !opts.NoPeerRelays {
		if c.links, err = newLinks(opts.Members); err != nil {
			return c, err
		}
	}
	ports, err := freePorts(3 * opts.Members)
	if err != nil {
		return c, err
	}
	for i := range opts.Members {
		m := &member{index: i, dir: filepath.Join(dir, "zk"+strconv.Itoa(i)), java: opts.Java,
			clientPort: ports[3*i], quorumPort: ports[3*i+1], electionPort: ports[3*i+2]}
		m.Name = m.String()
		c.members = append(c.members, m)
	}
	startLinks(c.links, c.members)
	for _, m := range c.members {
		if err := c.prepare(m); err != nil {
			return c, err
		}
	}
	for _, m := range c.members {
		if err := m.start(); err != nil {
			return c, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartWait)
	defer cancel()
	return c, c.waitServing(ctx, c.indexes(), true)
}

// prepare writes member m's folder: its myid, its zoo.cfg (its own
// server line its real ports, every other member's the link to it) and
// its JVM's arguments.
func (c *Cluster) prepare(m *member) error {
	data := filepath.Join(m.dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return fmt.Errorf("%s: %w", m, err)
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(m.id())+"\n"), 0o600); err != nil {
		return fmt.Errorf("%s: %w", m, err)
	}
	forceSync := "no"
	if c.opts.Fsync {
		forceSync = "yes"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s, written by lockbench (package zkcluster)\n", m)
	fmt.Fprintf(&b, "tickTime=%d\ninitLimit=%d\nsyncLimit=%d\n", c.opts.TickTime.Milliseconds(), c.opts.InitLimit, c.opts.SyncLimit)
	fmt.Fprintf(&b, "dataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n", data, m.clientPort)
	fmt.Fprintf(&b, "minSessionTimeout=%d\nmaxSessionTimeout=%d\n", 2*c.opts.TickTime.Milliseconds(), MaxSessionTimeout.Milliseconds())
	// Every lockbench client connects from 127.0.0.1: no per-address cap
	// (ZooKeeper's default is 60).
	b.WriteString("maxClientCnxns=0\n")
	// No admin server (it binds 8080); the four-letter words the waits
	// and Leader ask; a one-member ensemble is a quorum of one, not a
	// standalone server; each member keeps its own view of its peers.
	b.WriteString("admin.enableServer=false\n4lw.commands.whitelist=srvr,mntr,ruok,stat\nstandaloneEnabled=false\nreconfigEnabled=false\n")
	// The transaction log: fsync or not (Options.Fsync), preallocated
	// 4 MB at a time instead of 64.
	fmt.Fprintf(&b, "forceSync=%s\npreAllocSize=4096\n", forceSync)
	for j, p := range c.members {
		q, e := p.quorumPort, p.electionPort
		if j != m.index && c.links != nil {
			l := c.links[m.index][j]
			q, e = l.quorum.port(), l.election.port()
		}
		fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d\n", p.id(), q, e)
	}
	cfg := filepath.Join(m.dir, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("%s: %w", m, err)
	}
	m.args = append(append([]string{}, jvmFlags...),
		"-Djava.io.tmpdir="+m.dir, "-XX:ErrorFile="+filepath.Join(m.dir, "hs_err_pid%p.log"),
		"-cp", c.opts.Classpath, MainClass, cfg)
	return nil
}

// indexes are 0..Count()-1.
func (c *Cluster) indexes() []int {
	out := make([]int, len(c.members))
	for i := range out {
		out[i] = i
	}
	return out
}

// addr is the loopback address of a port.
func addr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// Addrs are the members' client addresses ("127.0.0.1:port"), member
// order: what a ZooKeeper client's connection string lists.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = addr(m.clientPort)
	}
	return out
}

// Count is the number of members.
func (c *Cluster) Count() int { return len(c.members) }

// DataDir is the ensemble's data folder, removed by Close ("" after).
func (c *Cluster) DataDir() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dir
}

// SessionTimeouts are the shortest and longest session the members
// grant: a client's request outside them is raised or lowered to them.
func (c *Cluster) SessionTimeouts() (lo, hi time.Duration) {
	return 2 * c.opts.TickTime, MaxSessionTimeout
}

// TickTime is the members' tick: ZooKeeper counts its timeouts in it.
func (c *Cluster) TickTime() time.Duration { return c.opts.TickTime }

func (c *Cluster) member(i int) (*member, error) {
	if i < 0 || i >= len(c.members) {
		return nil, fmt.Errorf("zookeeper member %d: the ensemble has members 0..%d", i, len(c.members)-1)
	}
	return c.members[i], nil
}

// Running says whether member i's process runs (a paused one does).
func (c *Cluster) Running(i int) bool {
	m, err := c.member(i)
	return err == nil && m.Running()
}

// Crash kills member i's process group (SIGKILL): no hand-over, as a
// power cut. Its peers see its connections close at once (a leader's
// followers then elect another within about a second), unless it is
// partitioned: then, as on a cut network, they learn of it only by their
// timeouts, or at Heal.
func (c *Cluster) Crash(i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	if err := m.Kill(); err != nil {
		return fmt.Errorf("crash %s: %w", m, err)
	}
	return nil
}

// Restart starts a crashed member i again on its own data and ports, and
// waits until it serves — or, when it cannot (fewer than a quorum of
// members run unpaused and reachable from it), only until it answers.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	if c.isClosed() {
		return fmt.Errorf("restart %s: the ensemble is closed", m)
	}
	if err := m.start(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartWait)
	defer cancel()
	if c.quorumWith(i) {
		return c.waitServing(ctx, []int{i}, false)
	}
	return c.waitAnswers(ctx, m)
}

// quorumWith says whether member i and the members that run unpaused and
// are not cut from it make a majority.
func (c *Cluster) quorumWith(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for j, m := range c.members {
		if j == i || m.Running() && !m.Paused() && !c.cut[i] && !c.cut[j] {
			n++
		}
	}
	return 2*n > len(c.members)
}

// waitAnswers waits until m answers srvr, serving or not.
func (c *Cluster) waitAnswers(ctx context.Context, m *member) error {
	var last error
	for {
		if how := m.Exited(); how != "" {
			return fmt.Errorf("%s exited (%s); %s", m, how, m.logTail())
		}
		_, last = srvr(ctx, addr(m.clientPort))
		if last == nil || errors.Is(last, ErrNotServing) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer at %s: %w (last: %v); %s", m, addr(m.clientPort), ctx.Err(), last, m.logTail())
		case <-time.After(pollEvery):
		}
	}
}

// Pause freezes member i (SIGSTOP to its group) until Resume: a server
// that stops answering without closing its connections, as in a long GC
// pause; its peers give it up after syncLimit ticks.
func (c *Cluster) Pause(i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	return m.Signal(true)
}

// Resume wakes a paused member i (SIGCONT).
func (c *Cluster) Resume(i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	return m.Signal(false)
}

// Partition cuts member i from every peer, both ways, on its quorum and
// election ports, until Heal: what either side sends waits, as on a
// network that drops packets (peers.go). Its clients still reach it; it
// stops serving them once it has lost its leader or its quorum (syncLimit
// ticks), while the others, a majority, go on. It holds across a crash
// and restart of i.
func (c *Cluster) Partition(i int) error {
	if _, err := c.member(i); err != nil {
		return err
	}
	if c.links == nil {
		return errNoPeerRelays
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut[i] = true
	c.setGates()
	return nil
}

// Heal ends Partition of member i: what waited goes through, and it
// rejoins the ensemble. A link to another member still partitioned stays
// cut.
func (c *Cluster) Heal(i int) error {
	if _, err := c.member(i); err != nil {
		return err
	}
	if c.links == nil {
		return errNoPeerRelays
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut[i] = false
	c.setGates()
	return nil
}

// errNoPeerRelays is Partition's and Heal's error on an ensemble started
// with Options.NoPeerRelays.
var errNoPeerRelays = errors.New("the ensemble was started without peer relays (Options.NoPeerRelays): its members cannot be cut from each other")

// Partitioned says whether member i is cut from its peers.
func (c *Cluster) Partitioned(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return i >= 0 && i < len(c.cut) && c.cut[i]
}

// setGates opens the links between members neither of which is cut and
// cuts the others; c.mu is held.
func (c *Cluster) setGates() {
	for a, row := range c.links {
		for b, l := range row {
			if l != nil {
				l.gate.set(!c.cut[a] && !c.cut[b])
			}
		}
	}
}

func (c *Cluster) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Close kills every member (SIGKILL, reaped), closes the peer links and
// removes the data folder. It may be called more than once.
func (c *Cluster) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	var errs []error
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, m := range c.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.Kill(); err != nil && !errors.Is(err, owned.ErrNotRunning) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	closeLinks(c.links)
	c.mu.Lock()
	dir, owner := c.dir, c.owner
	c.dir, c.owner = "", nil
	c.mu.Unlock()
	if dir != "" {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove data folder: %w", err))
		}
		owned.Unregister(dir)
	}
	if owner != nil {
		owner.Close()
	}
	return errors.Join(errs...)
}

// freePorts picks n free loopback ports for members (listened on, then
// released: another process may take one in between, and the member then
// fails to start, saying so in its log). They are picked below the
// kernel's ephemeral range when it leaves room, since a member does not
// hold all its ports all the time — a follower binds its quorum port
// only when it becomes leader, and a crashed member's ports are free
// until its restart — and an ephemeral port is what the kernel gives
// every outgoing connection (a client's, a relay's): one such connection
// on a member's port would keep it from binding it again.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	lo, hi := portRange()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		port := 0
		if hi > lo && tries < 50*n {
			port = lo + rand.IntN(hi-lo)
		}
		l, err := net.Listen("tcp", addr(port))
		if err != nil {
			if port != 0 {
				continue // taken: another
			}
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// portRange is the range [lo, hi) freePorts picks from: below the
// kernel's ephemeral ports (/proc/sys/net/ipv4/ip_local_port_range) and
// above 10000; lo == hi when there is no room, or no way to tell.
func portRange() (lo, hi int) {
	const floor = 10000
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	first, err := strconv.Atoi(f[0])
	if err != nil || first < floor+1000 {
		return 0, 0
	}
	return floor, first
}
