package zkcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/lockbench/lockbench/zookeeper/zkcluster/zktest"
)

// start starts an ensemble for a test (zktest.Need: skipped without
// ZooKeeper), closed when the test ends.
func start(t *testing.T, opts Options) *Cluster {
	t.Helper()
	zktest.Need(t)
	opts.DataParent = t.TempDir()
	began := time.Now()
	c, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d members serving, member %d leads, %s after Start", c.Count(), c.Leader(), time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() { c.Close() })
	return c
}

// quiet drops go-zookeeper's log lines.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// opWait bounds one client operation of the tests.
const opWait = 30 * time.Second

// onMember runs do over a session with the member at address alone,
// failing t when it errs or takes longer than opWait.
func onMember(t *testing.T, address, what string, do func(*zk.Conn) error) {
	t.Helper()
	conn, _, err := zk.Connect([]string{address}, 5*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	errc := make(chan error, 1)
	go func() { errc <- do(conn) }()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("%s at %s: %v", what, address, err)
		}
	case <-time.After(opWait):
		t.Fatalf("%s at %s: no answer in %s", what, address, opWait)
	}
}

// write creates path on the member at address.
func write(t *testing.T, address, path string) {
	t.Helper()
	onMember(t, address, "create "+path, func(c *zk.Conn) error {
		_, err := c.Create(path, []byte(path), 0, zk.WorldACL(zk.PermAll))
		return err
	})
}

// read reads path on the member at address, after a sync (ZooKeeper's
// reads are served by the member, which may lag its leader).
func read(t *testing.T, address, path string) {
	t.Helper()
	onMember(t, address, "read "+path, func(c *zk.Conn) error {
		if _, err := c.Sync(path); err != nil {
			return err
		}
		b, _, err := c.Get(path)
		if err == nil && string(b) != path {
			err = fmt.Errorf("value %q, want %q", b, path)
		}
		return err
	})
}

// tryRead is read that returns its error, or gives up after 5 s,
// instead of failing a test.
func tryRead(address, path string) error {
	conn, _, err := zk.Connect([]string{address}, 5*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		return err
	}
	defer conn.Close()
	errc := make(chan error, 1)
	go func() {
		if _, err := conn.Sync(path); err != nil {
			errc <- err
			return
		}
		b, _, err := conn.Get(path)
		if err == nil && string(b) != path {
			err = fmt.Errorf("value %q, want %q", b, path)
		}
		errc <- err
	}()
	select {
	case err := <-errc:
		return err
	case <-time.After(5 * time.Second):
		return errors.New("no answer in 5 s")
	}
}

// waitFor polls ok until it says true, failing t after within.
func waitFor(t *testing.T, within time.Duration, what string, ok func() (bool, string)) time.Duration {
	t.Helper()
	began := time.Now()
	last := ""
	for time.Since(began) < within {
		var done bool
		if done, last = ok(); done {
			return time.Since(began).Round(time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s (last: %s)", what, within, last)
	return 0
}

// waitMode waits until member i says want (a Mode, or "not serving").
func waitMode(t *testing.T, c *Cluster, i int, want string, within time.Duration) time.Duration {
	t.Helper()
	return waitFor(t, within, fmt.Sprintf("member %d %s", i, want), func() (bool, string) {
		mode, err := c.Mode(context.Background(), i)
		if errors.Is(err, ErrNotServing) {
			mode = "not serving"
		} else if err != nil {
			mode = err.Error()
		}
		return mode == want, mode
	})
}

// waitNewLeader waits until a member other than old leads.
func waitNewLeader(t *testing.T, c *Cluster, old int, within time.Duration) (int, time.Duration) {
	t.Helper()
	var now int
	took := waitFor(t, within, fmt.Sprintf("a leader other than member %d", old), func() (bool, string) {
		now = c.Leader()
		return now >= 0 && now != old, fmt.Sprintf("leader %d", now)
	})
	return now, took
}

// other is a member that is neither a nor b.
func other(c *Cluster, a, b int) int {
	for i := range c.Count() {
		if i != a && i != b {
			return i
		}
	}
	return -1
}

// TestEnsembleUnderFaults is the package's reason to exist: a 3-member
// ensemble serves (a write on one member is read on another, one member
// leads, every peer connection passes through lockbench's links), and
// under each fault it behaves as a ZooKeeper ensemble must: a crashed
// leader is replaced and the others serve; the restarted member rejoins
// with what it missed; a partitioned follower stops serving while the
// other two serve, and serves again once healed; a partitioned leader
// loses its role to one of the others; a paused member does not answer
// and serves again once resumed. Close then leaves no process and no
// folder.
func TestEnsembleUnderFaults(t *testing.T) {
	c := start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if v := Version(ctx, Options{}); !strings.HasPrefix(v, "3.") {
		t.Errorf("Version %q, want a 3.x release", v)
	}
	addrs := c.Addrs()
	leader := c.Leader()
	if leader < 0 {
		t.Fatal("no leader after Start")
	}
	for i := range c.Count() {
		want := ModeFollower
		if i == leader {
			want = ModeLeader
		}
		if mode, err := c.Mode(ctx, i); mode != want || err != nil {
			t.Errorf("member %d: mode %q (%v), want %q", i, mode, err, want)
		}
	}
	noDirectPeerConns(t, c)
	write(t, addrs[leader], "/start")
	read(t, addrs[(leader+1)%3], "/start")

	// Crash the leader: another is elected, and the two serve.
	if err := c.Crash(leader); err != nil {
		t.Fatal(err)
	}
	if c.Running(leader) {
		t.Error("a crashed member runs")
	}
	now, took := waitNewLeader(t, c, leader, 30*time.Second)
	t.Logf("leader %d crashed: member %d leads %s later", leader, now, took)
	write(t, addrs[now], "/after-crash")
	read(t, addrs[other(c, leader, now)], "/after-crash")

	// Restart it: it rejoins as a follower, with what it missed.
	began := time.Now()
	if err := c.Restart(ctx, leader); err != nil {
		t.Fatal(err)
	}
	t.Logf("member %d restarted and serving in %s", leader, time.Since(began).Round(time.Millisecond))
	if mode, err := c.Mode(ctx, leader); mode != ModeFollower || err != nil {
		t.Errorf("restarted member %d: mode %q (%v), want follower", leader, mode, err)
	}
	read(t, addrs[leader], "/after-crash")

	// Partition a follower: it stops serving and, its election traffic
	// cut too, stays so; the other two serve. Healed, it serves again
	// with what it missed.
	leader = c.Leader()
	f := other(c, leader, -1)
	if err := c.Partition(f); err != nil {
		t.Fatal(err)
	}
	took = waitMode(t, c, f, "not serving", 15*time.Second)
	t.Logf("follower %d partitioned: not serving %s later", f, took)
	write(t, addrs[leader], "/while-cut")
	read(t, addrs[other(c, leader, f)], "/while-cut")
	time.Sleep(3 * c.TickTime() * time.Duration(DefaultSyncLimit))
	if mode, err := c.Mode(ctx, f); !errors.Is(err, ErrNotServing) {
		t.Errorf("partitioned follower %d serves again, cut: mode %q (%v)", f, mode, err)
	}
	if err := c.Heal(f); err != nil {
		t.Fatal(err)
	}
	took = waitMode(t, c, f, ModeFollower, 30*time.Second)
	t.Logf("follower %d healed: serving %s later", f, took)
	read(t, addrs[f], "/while-cut")

	// Partition the leader: the other two elect one of them; the old
	// leader stops serving. Healed, it follows.
	leader = c.Leader()
	if err := c.Partition(leader); err != nil {
		t.Fatal(err)
	}
	now, took = waitNewLeader(t, c, leader, 30*time.Second)
	t.Logf("leader %d partitioned: member %d leads %s later", leader, now, took)
	waitMode(t, c, leader, "not serving", 15*time.Second)
	write(t, addrs[now], "/leader-cut")
	if err := c.Heal(leader); err != nil {
		t.Fatal(err)
	}
	took = waitMode(t, c, leader, ModeFollower, 30*time.Second)
	t.Logf("old leader %d healed: following %s later", leader, took)
	read(t, addrs[leader], "/leader-cut")
	noDirectPeerConns(t, c)

	// Pause a follower past syncLimit: it answers nothing, still runs,
	// and the others serve; resumed, it serves again.
	leader = c.Leader()
	f = other(c, leader, -1)
	if err := c.Pause(f); err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	mode, err := c.Mode(pctx, f)
	pcancel()
	if err == nil || errors.Is(err, ErrNotServing) || !c.Running(f) {
		t.Errorf("paused member %d: mode %q (%v), running %v; want no answer, running", f, mode, err, c.Running(f))
	}
	write(t, addrs[leader], "/while-paused")
	time.Sleep(2 * c.TickTime() * time.Duration(DefaultSyncLimit))
	if err := c.Resume(f); err != nil {
		t.Fatal(err)
	}
	took = waitMode(t, c, f, ModeFollower, 30*time.Second)
	t.Logf("member %d resumed: says follower %s later", f, took)
	// "follower" may be its state from before the pause: it serves again
	// once it has rejoined its leader, which under load takes a moment.
	took = waitFor(t, 30*time.Second, fmt.Sprintf("member %d serves /while-paused after its resume", f), func() (bool, string) {
		err := tryRead(addrs[f], "/while-paused")
		return err == nil, fmt.Sprint(err)
	})
	t.Logf("member %d resumed: read what it missed %s later", f, took)

	// Close: no member process, no folder; a second Close is fine.
	var pids []int
	for _, m := range c.members {
		pids = append(pids, m.Pid())
	}
	dir := c.DataDir()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("member pid %d alive after Close", pid)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("data folder %s left after Close: %v", dir, err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// alive says whether pid is a process that has not exited (a zombie
// nobody reaped has).
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) == 0 || f[0] != "Z"
}

// noDirectPeerConns fails t if a member holds a connection to another
// member's real quorum or election port: one that bypasses the links,
// which a partition would then not cut. Every established connection to
// those ports must be a link's (this process's).
func noDirectPeerConns(t *testing.T, c *Cluster) {
	t.Helper()
	peerPorts := map[int]bool{}
	for _, m := range c.members {
		peerPorts[m.quorumPort], peerPorts[m.electionPort] = true, true
	}
	ours := map[string]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
			ours[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	seen := 0
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "01" { // ESTABLISHED
				continue
			}
			_, hexPort, _ := strings.Cut(fields[2], ":")
			port, err := strconv.ParseInt(hexPort, 16, 32)
			if err != nil || !peerPorts[int(port)] {
				continue
			}
			seen++
			if !ours[fields[9]] {
				t.Errorf("a connection to peer port %d bypasses the links (%s: %s)", port, table, sc.Text())
			}
		}
		f.Close()
	}
	if seen == 0 {
		t.Error("no connection to any member's quorum or election port: the check saw nothing")
	}
}

// TestMembersDieWithLockbench: a lockbench killed by SIGKILL (here a
// copy of this test binary running a one-member ensemble) leaves no
// member behind (their death signal), and the next Start's RemoveStale
// removes the data folder it left.
func TestMembersDieWithLockbench(t *testing.T) {
	if parent := os.Getenv("LOCKBENCH_ZK_HELPER_PARENT"); parent != "" {
		c, err := Start(context.Background(), Options{Members: 1, DataParent: parent})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(c.members[0].Pid(), c.DataDir())
		select {} // until killed
	}
	zktest.Need(t)
	parent := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMembersDieWithLockbench$")
	cmd.Env = append(os.Environ(), "LOCKBENCH_ZK_HELPER_PARENT="+parent)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	var pid int
	var dir string
	if _, serr := fmt.Sscan(line, &pid, &dir); err != nil || serr != nil {
		t.Fatalf("helper: %q (%v, %v)", line, err, serr)
	}
	t.Cleanup(func() { // should the death signal fail, the member goes
		if alive(pid) {
			syscall.Kill(-pid, syscall.SIGKILL)
		}
	})
	if !alive(pid) {
		t.Fatalf("member pid %d not alive before the kill", pid)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	waitFor(t, 10*time.Second, fmt.Sprintf("member pid %d gone after its lockbench's SIGKILL", pid), func() (bool, string) {
		return !alive(pid), "alive"
	})
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the killed lockbench's data folder %s: %v (want it left, for RemoveStale)", dir, err)
	}
	removed, err := RemoveStale(parent)
	if err != nil || len(removed) != 1 || removed[0].Dir != dir {
		t.Fatalf("RemoveStale: %v (%v), want %s", removed, err, dir)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still there after RemoveStale: %v", dir, err)
	}
}

// TestNoPeerRelays: an ensemble started without peer relays names its
// peers' real ports in every zoo.cfg, elects a leader and serves, and
// refuses a partition, which it cannot make.
func TestNoPeerRelays(t *testing.T) {
	c := start(t, Options{NoPeerRelays: true})
	if c.Leader() < 0 {
		t.Fatal("no leader")
	}
	for _, m := range c.members {
		cfg, err := os.ReadFile(filepath.Join(m.dir, "zoo.cfg"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range c.members {
			if line := fmt.Sprintf("server.%d=127.0.0.1:%d:%d\n", p.id(), p.quorumPort, p.electionPort); !strings.Contains(string(cfg), line) {
				t.Errorf("%s's zoo.cfg lacks %q", m, line)
			}
		}
	}
	if err := c.Partition(0); !errors.Is(err, errNoPeerRelays) {
		t.Errorf("Partition: %v, want errNoPeerRelays", err)
	}
}
