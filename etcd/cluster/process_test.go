package cluster

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestMain lets the test binary be an etcd member (--etcd-bin self runs
// os.Executable, which here is the test binary).
func TestMain(m *testing.M) {
	RunMemberIfAsked()
	os.Exit(m.Run())
}

// children lists the pids whose parent is this process, from /proc.
func children(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces; split after ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			out = append(out, pid)
		}
	}
	return out
}

// assertNothingLeft checks that no member process, port or folder of pc
// remains after Close.
func assertNothingLeft(t *testing.T, pc *ProcessCluster, dir string) {
	t.Helper()
	if kids := children(t); len(kids) > 0 {
		t.Errorf("child processes left after Close: %v", kids)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data folder %s left: %v", dir, err)
	}
	for _, m := range pc.members {
		for _, u := range []string{m.clientURL, m.peerURL, m.advertiseURL} {
			pu, _ := url.Parse(u)
			l, err := net.Listen("tcp", pu.Host)
			if err != nil {
				t.Errorf("port of %s still taken: %v", u, err)
				continue
			}
			l.Close()
		}
	}
}

func startSelf(t *testing.T, bin string) *ProcessCluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts etcd member processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pc, err := StartProcesses(ctx, Options{EtcdBin: bin, DataParent: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() }) // a failed test leaves no member for the next
	return pc
}

func put(t *testing.T, pc *ProcessCluster, key string) {
	t.Helper()
	putTo(t, pc.Endpoints(), key)
}

// putTo writes key through endpoints only.
func putTo(t *testing.T, endpoints []string, key string) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, Logger: zap.NewNop(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, key, "v"); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// exercise crashes and restarts the leader, pauses and resumes a
// follower, and writes through it all.
func exercise(t *testing.T, pc *ProcessCluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	put(t, pc, "a")
	l := pc.Leader()
	if l < 0 || !pc.Healthy() {
		t.Fatalf("leader %d, healthy %v after start", l, pc.Healthy())
	}
	if err := pc.Crash(l); err != nil {
		t.Fatal(err)
	}
	if pc.Running(l) || pc.Healthy() {
		t.Fatalf("member %d runs after crash", l)
	}
	if nl, err := waitLeader(ctx, pc.Tick(), pc.Leader); err != nil || nl == l {
		t.Fatalf("new leader %d (old %d): %v", nl, l, err)
	}
	if err := pc.Restart(ctx, l); err != nil {
		t.Fatal(err)
	}
	// The restarted member must follow the leader before a follower is
	// paused, or the two left are no quorum yet; the write goes through
	// them only, not to a member that cannot answer.
	leader := followedBy(ctx, t, pc, l)
	f := (leader + 1) % pc.Count()
	if f == l {
		f = (f + 1) % pc.Count()
	}
	if err := pc.Pause(f); err != nil {
		t.Fatal(err)
	}
	putTo(t, []string{pc.Endpoints()[leader], pc.Endpoints()[l]}, "b") // a quorum remains
	if err := pc.Resume(f); err != nil {
		t.Fatal(err)
	}
	if _, err := waitLeader(ctx, pc.Tick(), pc.Leader); err != nil {
		t.Fatal(err)
	}
	partitionLeader(ctx, t, pc)
}

// followedBy waits until member i names the cluster's leader as its own
// (it has heard from it since it started) and returns that leader.
func followedBy(ctx context.Context, t *testing.T, pc *ProcessCluster, i int) int {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{pc.Endpoints()[i]}, Logger: zap.NewNop(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for {
		l := pc.Leader()
		if l >= 0 {
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			mine, err1 := cli.Status(sctx, pc.Endpoints()[i])
			theirs, err2 := cli.Status(sctx, pc.Endpoints()[l])
			cancel()
			if err1 == nil && err2 == nil && mine.Leader == theirs.Header.MemberId {
				return l
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("member %d never followed a leader: %v", i, ctx.Err())
		case <-time.After(pc.Tick()):
		}
	}
}

// partitionLeader cuts the leader from its peers at the relays: the
// others elect a new leader and take writes; once healed, the old leader
// follows it.
func partitionLeader(ctx context.Context, t *testing.T, pc *ProcessCluster) {
	t.Helper()
	old := pc.Leader()
	if err := pc.Partition(old); err != nil {
		t.Fatal(err)
	}
	nl, err := waitLeader(ctx, pc.Tick(), func() int {
		if l := pc.Leader(); l != old {
			return l
		}
		return -1
	})
	if err != nil {
		t.Fatalf("no new leader while member %d is cut off: %v", old, err)
	}
	putTo(t, []string{pc.Endpoints()[nl]}, "c") // through the majority's leader
	if err := pc.Heal(old); err != nil {
		t.Fatal(err)
	}
	if _, err := waitLeader(ctx, pc.Tick(), func() int {
		if pc.Healthy() {
			return pc.Leader()
		}
		return -1
	}); err != nil {
		t.Fatalf("after heal (new leader was %d): %v", nl, err)
	}
	if err := pc.Partition(pc.Count()); err == nil {
		t.Error("Partition of a member that does not exist accepted")
	}
}

func TestProcessClusterSelf(t *testing.T) {
	pc := startSelf(t, EtcdBinSelf)
	dir := pc.DataDir()
	exercise(t, pc)
	if pc.Version() != EmbeddedVersion {
		t.Errorf("version %s, want %s", pc.Version(), EmbeddedVersion)
	}
	// A paused member must still be killed and reaped by Close.
	if err := pc.Pause(1); err != nil {
		t.Fatal(err)
	}
	if err := pc.Close(); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, pc, dir)
	if err := pc.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestProcessCluster34 runs the same on Debian's etcd 3.4 when installed.
func TestProcessCluster34(t *testing.T) {
	const bin = "/usr/bin/etcd"
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("%s absent (apt-get install etcd-server)", bin)
	}
	pc := startSelf(t, bin)
	dir := pc.DataDir()
	t.Logf("etcd %s", pc.Version())
	exercise(t, pc)
	if err := pc.Close(); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, pc, dir)
}

func TestKillAllNow(t *testing.T) {
	pc := startSelf(t, EtcdBinSelf)
	defer pc.Close()
	if n := KillAllNow(); n != pc.Count() {
		t.Errorf("KillAllNow signalled %d, want %d", n, pc.Count())
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && len(children(t)) > 0 {
		time.Sleep(50 * time.Millisecond)
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("children left after KillAllNow: %v", kids)
	}
}

func TestResolveBinaryErrors(t *testing.T) {
	if _, err := ResolveBinary(context.Background(), "/nonexistent/etcd"); err == nil {
		t.Error("missing binary accepted")
	}
	if _, err := ResolveBinary(context.Background(), "/bin/true"); err == nil || !strings.Contains(err.Error(), "etcd Version") {
		t.Errorf("/bin/true: %v, want no version line", err)
	}
}
