// Package rediscluster starts a Redis deployment of real processes on
// loopback ports, as package cluster starts etcd: one primary, its
// replicas and Sentinels that watch the primary and promote a replica
// when it fails, so that Redis locks can be run beside etcd's under the
// same faults (issue #31). Every process is in its own process group and
// owned (package owned): Close, a second signal, or the death of
// lockbench leaves none running, and its data folder goes with it.
//
// The first primary is reached through a relay of lockbench's
// (replication.go), which tells each replica's replication link apart, so
// that the link can be cut on its own — the fault that makes a failover
// lose an acknowledged write.
// Nothing here imports etcd.
package rediscluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/lockbench/lockbench/internal/owned"
)

// DataPrefix begins the name of every Redis deployment's data folder.
const DataPrefix = "lockbench-redis-"

// MasterName is the name the Sentinels monitor the primary under.
const MasterName = "lockbench"

// Defaults of Options.
const (
	DefaultReplicas  = 2
	DefaultSentinels = 3
	// DefaultDownAfter is how long the Sentinels wait for an unanswered
	// primary before they call it down (down-after-milliseconds; Redis's
	// own default is 30 s, far longer than a test's run).
	DefaultDownAfter = time.Second
	// DefaultStartWait bounds the start of every process and the first
	// replication.
	DefaultStartWait = 20 * time.Second
)

// Options shape a deployment. Zero values take the defaults.
type Options struct {
	Replicas, Sentinels int
	// Instances, when set, starts that many independent primaries
	// instead, with no replicas and no Sentinels: Redlock's deployment.
	Instances int
	// RedisBin and SentinelBin are the programs (default redis-server and
	// redis-sentinel, on PATH).
	RedisBin, SentinelBin string
	// DownAfter is the Sentinels' down-after-milliseconds.
	DownAfter time.Duration
	// DataParent holds the data folder (default os.TempDir()).
	DataParent string
	// Clock starts every redis-server on a clock of its own, which
	// JumpClock moves (clock.go); off, they read the machine's.
	Clock bool
}

func (o *Options) defaults() error {
	if o.Instances != 0 {
		if o.Instances < 1 || o.Instances > 9 || o.Replicas != 0 || o.Sentinels != 0 {
			return fmt.Errorf("instances %d: must be 1..9, with no replicas or sentinels", o.Instances)
		}
	} else if o.Replicas == 0 {
		o.Replicas = DefaultReplicas
	}
	if o.Sentinels == 0 && o.Instances == 0 {
		o.Sentinels = DefaultSentinels
	}
	if o.RedisBin == "" {
		o.RedisBin = "redis-server"
	}
	if o.SentinelBin == "" {
		o.SentinelBin = "redis-sentinel"
	}
	if o.DownAfter == 0 {
		o.DownAfter = DefaultDownAfter
	}
	switch {
	case o.Replicas < 0 || o.Replicas > 4:
		return fmt.Errorf("replicas %d: must be 0..4", o.Replicas)
	case o.Instances == 0 && (o.Sentinels < 1 || o.Sentinels > 7):
		return fmt.Errorf("sentinels %d: must be 1..7", o.Sentinels)
	case o.DownAfter < 100*time.Millisecond:
		return fmt.Errorf("down-after %s: must be ≥100ms", o.DownAfter)
	}
	for _, bin := range []string{o.RedisBin, o.SentinelBin} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s: not found (install the Debian packages redis-server and redis-sentinel): %w", bin, err)
		}
	}
	return nil
}

// RemoveStale removes the Redis data folders in parent (os.TempDir when
// empty) whose owner is dead (see owned.RemoveStale): those of a
// lockbench killed with SIGKILL, whose processes died with it
// (owned.ProcAttr's death signal). Start calls it.
func RemoveStale(parent string) ([]owned.Stale, error) {
	return owned.RemoveStale(parent, DataPrefix, "Redis data folder")
}

// Cluster is a running deployment: nodes[0] is the first primary, the
// others its replicas; which node leads after a failover only the
// Sentinels know (Primary). With Options.Instances every node is a
// primary of its own.
type Cluster struct {
	opts      Options
	dir       string
	owner     *os.File
	nodes     []*process
	sentinels []*process
	// front stands in front of node 0, at the address everyone uses for
	// it (replication.go); nil for independent instances.
	front *relay
	// clock is the nodes' movable clock library (Options.Clock), "" when
	// they read the machine's.
	clock string
}

// Start launches the primary, the replicas (replicating through the
// primary's relay) and the Sentinels, and returns once every replica has
// synced and every Sentinel sees the primary. On any error everything
// started is stopped and the data folder removed.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	RemoveStale(opts.DataParent)
	dir, err := os.MkdirTemp(opts.DataParent, DataPrefix)
	if err != nil {
		return nil, fmt.Errorf("create data folder: %w", err)
	}
	owned.Register(dir)
	c = &Cluster{opts: opts, dir: dir}
	defer func() {
		if err != nil {
			c.Close()
			c = nil
		}
	}()
	if c.owner, err = owned.Claim(dir); err != nil {
		return c, err
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultStartWait)
	defer cancel()
	if opts.Clock {
		if c.clock, err = c.buildClock(ctx); err != nil {
			return c, err
		}
	}
	if opts.Instances > 0 {
		ports, err := freePorts(opts.Instances)
		if err != nil {
			return c, err
		}
		return c, c.startNodes(ctx, ports, false)
	}
	ports, err := freePorts(1 + opts.Replicas)
	if err != nil {
		return c, err
	}
	if err := c.startNodes(ctx, ports, true); err != nil {
		return c, err
	}
	// The Sentinels' ports are picked only now: picked with the nodes',
	// they stayed free for the seconds the replicas take to sync, long
	// enough for another process (a test beside this one) to be given one
	// and answer in a Sentinel's place.
	if ports, err = freePorts(opts.Sentinels); err != nil {
		return c, err
	}
	if err := c.startSentinels(ctx, ports); err != nil {
		return c, err
	}
	return c, nil
}

// startNodes starts the primary on ports[0] and a replica on each other
// port, replicating through the primary's relay (unless !replicate: then
// each is a primary of its own), and waits until each has synced.
func (c *Cluster) startNodes(ctx context.Context, ports []int, replicate bool) error {
	if replicate {
		r, err := startRelay(Addr(ports[0]))
		if err != nil {
			return fmt.Errorf("relay in front of the primary: %w", err)
		}
		c.front = r
	}
	for i, port := range ports {
		p := &process{Server: owned.Server{Name: fmt.Sprintf("redis%d", i)}, port: port, bin: c.opts.RedisBin, dir: filepath.Join(c.dir, fmt.Sprintf("redis%d", i))}
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", p.dir, "--save", "", "--appendonly", "no",
			"--protected-mode", "no", "--daemonize", "no", "--logfile", filepath.Join(p.dir, "redis.log")}
		if i > 0 && replicate {
			args = append(args, "--replicaof", "127.0.0.1", strconv.Itoa(c.front.port()))
		}
		p.args = args
		if c.clock != "" {
			var err error
			if p.env, err = clockEnv(c.clock, p.dir); err != nil {
				return fmt.Errorf("%s's clock: %w", p.Name, err)
			}
		}
		c.nodes = append(c.nodes, p)
		if err := p.start(); err != nil {
			return err
		}
	}
	for _, p := range c.nodes {
		if err := waitPing(ctx, p); err != nil {
			return err
		}
	}
	for i := 1; i < len(c.nodes) && replicate; i++ {
		if err := waitSynced(ctx, c.nodes[i]); err != nil {
			return err
		}
	}
	return nil
}

// startSentinels starts a Sentinel on each port, monitoring the primary
// with a quorum of a majority of them, and waits until each sees it.
func (c *Cluster) startSentinels(ctx context.Context, ports []int) error {
	quorum := len(ports)/2 + 1
	for i, port := range ports {
		p := &process{Server: owned.Server{Name: fmt.Sprintf("sentinel%d", i)}, port: port, bin: c.opts.SentinelBin, dir: filepath.Join(c.dir, fmt.Sprintf("sentinel%d", i))}
		if err := os.MkdirAll(p.dir, 0o700); err != nil {
			return err
		}
		conf := filepath.Join(p.dir, "sentinel.conf")
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode no\ndir %s\nlogfile %s\n"+
			"sentinel monitor %s 127.0.0.1 %d %d\nsentinel down-after-milliseconds %s %d\nsentinel failover-timeout %s %d\nsentinel parallel-syncs %s 1\n",
			port, p.dir, filepath.Join(p.dir, "sentinel.log"),
			MasterName, c.front.port(), quorum, MasterName, c.opts.DownAfter.Milliseconds(), MasterName, (10 * c.opts.DownAfter).Milliseconds(), MasterName)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			return err
		}
		p.args = []string{conf}
		c.sentinels = append(c.sentinels, p)
		if err := p.start(); err != nil {
			return err
		}
	}
	for _, p := range c.sentinels {
		if err := waitSentinelSees(ctx, p, c.front.port(), len(c.nodes)-1); err != nil {
			return err
		}
	}
	return nil
}

// Addr is the loopback address of a port.
func Addr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// Addrs are the data nodes' addresses, node order (node 0 the first
// primary, at its relay's address: the one the Sentinels name).
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, p := range c.nodes {
		out[i] = Addr(p.port)
	}
	if c.front != nil {
		out[0] = c.front.addr()
	}
	return out
}

// SentinelAddrs are the Sentinels' addresses: what a client that follows
// failovers dials.
func (c *Cluster) SentinelAddrs() []string {
	out := make([]string, len(c.sentinels))
	for i, p := range c.sentinels {
		out[i] = Addr(p.port)
	}
	return out
}

// DataDir is the deployment's data folder, removed by Close.
func (c *Cluster) DataDir() string { return c.dir }

func (c *Cluster) node(i int) (*process, error) {
	if i < 0 || i >= len(c.nodes) {
		return nil, fmt.Errorf("redis node %d: the deployment has nodes 0..%d", i, len(c.nodes)-1)
	}
	return c.nodes[i], nil
}

// Running says whether node i's process runs (a paused one does).
func (c *Cluster) Running(i int) bool {
	p, err := c.node(i)
	return err == nil && p.Running()
}

// Crash kills node i (SIGKILL): its unsaved data is gone (no
// persistence), as a machine's power cut takes it.
func (c *Cluster) Crash(i int) error {
	p, err := c.node(i)
	if err != nil {
		return err
	}
	return p.Kill()
}

// Restart starts a crashed node i again on its port, with empty data
// (nothing is persisted); the Sentinels make it a replica of whichever
// node leads now.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	p, err := c.node(i)
	if err != nil {
		return err
	}
	if err := p.start(); err != nil {
		return err
	}
	return waitPing(ctx, p)
}

// Pause freezes node i (SIGSTOP) until Resume: a primary that stops
// answering without closing its connections, as a long GC or VM pause.
func (c *Cluster) Pause(i int) error {
	p, err := c.node(i)
	if err != nil {
		return err
	}
	return p.Signal(true)
}

// Resume wakes a paused node i (SIGCONT).
func (c *Cluster) Resume(i int) error {
	p, err := c.node(i)
	if err != nil {
		return err
	}
	return p.Signal(false)
}

// CutReplication cuts replica i's link to the first primary (the relay
// in front of it closes the link and each new one) until
// HealReplication: writes the primary acknowledges meanwhile never reach
// that replica.
func (c *Cluster) CutReplication(i int) error {
	if _, err := c.node(i); err != nil || i == 0 || c.front == nil {
		return fmt.Errorf("cut replication of node %d: want a replica, 1..%d", i, len(c.nodes)-1)
	}
	c.front.cut(c.nodes[i].port, true)
	return nil
}

// HealReplication ends CutReplication of replica i.
func (c *Cluster) HealReplication(i int) error {
	if _, err := c.node(i); err != nil || i == 0 || c.front == nil {
		return fmt.Errorf("heal replication of node %d: want a replica, 1..%d", i, len(c.nodes)-1)
	}
	c.front.cut(c.nodes[i].port, false)
	return nil
}

// Close stops every process (SIGKILL, reaped), closes the relays and
// removes the data folder. It may be called more than once.
func (c *Cluster) Close() error {
	if c == nil {
		return nil
	}
	var errs []error
	for _, p := range append(append([]*process{}, c.sentinels...), c.nodes...) {
		if err := p.Kill(); err != nil && !errors.Is(err, owned.ErrNotRunning) {
			errs = append(errs, err)
		}
	}
	if c.front != nil {
		c.front.close()
		c.front = nil
	}
	if c.dir != "" {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove data folder: %w", err))
		}
		owned.Unregister(c.dir)
		c.dir = ""
	}
	if c.owner != nil {
		c.owner.Close()
		c.owner = nil
	}
	return errors.Join(errs...)
}

// freePorts picks n free loopback ports (listened on, then released:
// another process may take one in between, and the start then fails).
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// pollEvery is how often the waits ask again.
const pollEvery = 50 * time.Millisecond

// until calls ok every pollEvery until it returns true or ctx ends; then
// the error says what was waited for and the last answer.
func until(ctx context.Context, what string, ok func() (bool, string)) error {
	last := ""
	for {
		done, why := ok()
		if done {
			return nil
		}
		last = why
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last: %s)", what, ctx.Err(), last)
		case <-time.After(pollEvery):
		}
	}
}
