package cluster

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestReplaceMember: replacing a follower leaves a member list of the
// same size in which its peer URL has a new ID, the cluster serves
// writes, and the fresh member, started on empty data, serves what was
// written before it came.
func TestReplaceMember(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli := client(t, c.Endpoints()...)
	if _, err := cli.Put(ctx, "/before-replace", "1"); err != nil {
		t.Fatal(err)
	}
	leader, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := (leader + 1) % c.Count()
	old := c.Members()[i].ID()
	if err := c.Replace(ctx, i); err != nil {
		t.Fatal(err)
	}
	fresh := c.Members()[i].ID()
	list, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for _, m := range list.Members {
		ids = append(ids, m.ID)
	}
	t.Logf("member %d: ID %s replaced by %s; member list %x", i, old, fresh, ids)
	switch {
	case fresh == old || fresh == 0:
		t.Fatalf("member %d kept ID %s", i, old)
	case len(ids) != c.Count() || slices.Contains(ids, uint64(old)) || !slices.Contains(ids, uint64(fresh)):
		t.Fatalf("member list %x: want %d members with %s and without %s", ids, c.Count(), fresh, old)
	}
	if _, err := cli.Put(ctx, "/after-replace", "1"); err != nil {
		t.Fatal(err)
	}
	// Serializable: the fresh member answers from its own store.
	mcli := client(t, c.Endpoints()[i])
	for _, k := range []string{"/before-replace", "/after-replace"} {
		var got *clientv3.GetResponse
		for got == nil || len(got.Kvs) == 0 {
			if got, err = mcli.Get(ctx, k, clientv3.WithSerializable()); err != nil {
				t.Fatal(err)
			}
			if ctx.Err() != nil {
				t.Fatalf("the fresh member never served %s", k)
			}
		}
	}
}

// commitLatencies puts n keys under prefix one after another through
// cli, each again until it is acknowledged or putBound has passed (as a
// client would: a put that failed under a fault still has to get in),
// and returns the time each took, acknowledged or not, and the count
// acknowledged. Counting only the acknowledged ones would leave out the
// slowest: under drop-peers 7 of 20 puts were acknowledged within 3 s,
// at a median of 6 ms.
func commitLatencies(ctx context.Context, cli *clientv3.Client, prefix string, n int) ([]time.Duration, int) {
	const putBound = 5 * time.Second
	var out []time.Duration
	acked := 0
	for k := range n {
		start := time.Now()
		for time.Since(start) < putBound {
			pctx, cancel := context.WithTimeout(ctx, putBound-time.Since(start))
			_, err := cli.Put(pctx, fmt.Sprintf("%s/%03d", prefix, k), "v")
			cancel()
			if err == nil {
				acked++
				break
			}
		}
		out = append(out, time.Since(start))
	}
	return out, acked
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestShapePeers: delaying the leader's peer traffic by d raises the
// median commit latency by at least d (an append and its answer both
// cross a shaped relay, so each commit waits 2d at least, which no
// unshaped cluster adds); dropping half of its chunks raises the mean, and
// every acknowledged write is there once the shaping ends.
func TestShapePeers(t *testing.T) {
	c := startClusterWith(t, Options{UnsafeNoFsync: true, PeerRelays: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	leader, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cli := client(t, c.Endpoints()[leader])
	const n = 40
	base, _ := commitLatencies(ctx, cli, "/base", n)
	const d = 30 * time.Millisecond
	if err := c.ShapePeers(leader, PeerShape{Delay: d, Jitter: d / 2}); err != nil {
		t.Fatal(err)
	}
	delayed, dacked := commitLatencies(ctx, cli, "/delayed", n)
	if err := c.ShapePeers(leader, PeerShape{Drop: 0.5}); err != nil {
		t.Fatal(err)
	}
	dropped, acked := commitLatencies(ctx, cli, "/dropped", n/4)
	if err := c.ShapePeers(leader, PeerShape{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("commit latency p50 (max) of %d puts through the leader: unshaped %s (%s), delay %s±%s %s (%s), drop 50%% %s (%s), %d of %d acknowledged",
		n, median(base), slices.Max(base), d, d/2, median(delayed), slices.Max(delayed), median(dropped), maxOf(dropped), acked, n/4)
	if median(delayed) < median(base)+d {
		t.Errorf("delay %s: commit p50 %s, not %s above the unshaped %s", d, median(delayed), d, median(base))
	}
	// Half the chunks lost: a commit that loses one waits for raft to send
	// its append again, after a heartbeat or a redial, so the mean is many
	// times the unshaped one (and at least a tick). Not the median: of 10
	// puts, most may lose no chunk (p50 3.9 ms beside a max of 791 ms,
	// once, under make test).
	if want := max(5*mean(base), c.Tick()); mean(dropped) < want {
		t.Errorf("drop 50%%: commit mean %s, want ≥ %s", mean(dropped), want)
	}
	requireKept(ctx, t, cli, "/delayed/", dacked)
	requireKept(ctx, t, cli, "/dropped/", acked)
	if err := (&Cluster{}).ShapePeers(0, PeerShape{}); err == nil {
		t.Error("a cluster without members shaped member 0")
	}
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

func maxOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return slices.Max(ds)
}

// TestShapePeersNeedsRelays: the embedded cluster started without peer
// relays refuses to shape, naming the option.
func TestShapePeersNeedsRelays(t *testing.T) {
	c := startCluster(t)
	if err := c.ShapePeers(0, PeerShape{Delay: time.Millisecond}); err == nil {
		t.Fatal("shaped peer traffic without relays")
	} else {
		t.Log(err)
	}
}

// TestCatchUpBySnapshot: a follower cut until the leader's log passed it
// by more than the snapshot threshold catches up once healed, and the
// leader's etcd_network_snapshot_send_success for it has risen: it was
// sent a snapshot. A cut that ends before the threshold sends none, so
// the metric can tell the two apart.
func TestCatchUpBySnapshot(t *testing.T) {
	t.Parallel()
	c := startClusterWith(t, Options{UnsafeNoFsync: true, SnapshotCount: 100, Verbose: os.Getenv("LB_VERBOSE") != ""})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := (leader + 1) % c.Count()
	// The control: a short cut, healed long before the threshold.
	cli := client(t, c.Endpoints()[leader])
	if err := c.Partition(i); err != nil {
		t.Fatal(err)
	}
	commitLatencies(ctx, cli, "/short-cut", 20)
	if err := c.Heal(i); err != nil {
		t.Fatal(err)
	}
	commitLatencies(ctx, cli, "/healed", 20)
	st, err := cli.Status(ctx, c.Endpoints()[i])
	if err != nil {
		t.Fatal(err)
	}
	if sent, err := snapshotsSent(ctx, c, leader, fmt.Sprintf("%x", st.Header.MemberId)); err != nil || sent != 0 {
		t.Fatalf("after a cut of 20 writes: %v snapshots sent (%v)", sent, err)
	}
	got, err := CatchUpBySnapshot(ctx, c, i)
	t.Logf("member %d: %d entries behind (threshold %d) after %d writes in %d tries; snapshots sent to it %v; applied %d", i, got.Behind, got.Threshold, got.Writes, got.Tries, got.SnapshotsSent, got.Applied)
	if err != nil {
		t.Fatal(err)
	}
	if got.Behind <= got.Threshold || got.SnapshotsSent[1] <= got.SnapshotsSent[0] {
		t.Fatalf("%+v: not past the threshold, or no snapshot sent", got)
	}
	if _, err := CatchUpBySnapshot(ctx, c, leader); err == nil {
		t.Error("caught the leader up by snapshot")
	}
}

// TestProcessPeerFaults: on member processes (lockbench's own binary),
// replacing a follower gives its peer URL a new ID in the member list
// and the cluster takes writes; delaying the leader's peer traffic at the
// relays raises the median commit latency by at least the delay, and
// dropping half of it loses no acknowledged write.
func TestProcessPeerFaults(t *testing.T) {
	t.Parallel()
	pc := startSelf(t, EtcdBinSelf)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	leader, err := waitLeader(ctx, pc.Tick(), pc.Leader)
	if err != nil {
		t.Fatal(err)
	}
	cli := client(t, pc.Endpoints()[leader])
	i := (leader + 1) % pc.Count()
	old, err := memberID(ctx, cli, pc.members[i].advertiseURL)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Replace(ctx, i); err != nil {
		t.Fatal(err)
	}
	fresh, err := memberID(ctx, cli, pc.members[i].advertiseURL)
	if err != nil || fresh == old {
		t.Fatalf("member %d: ID %x, then %x (%v)", i, old, fresh, err)
	}
	const n = 20
	base, _ := commitLatencies(ctx, cli, "/base", n)
	const d = 30 * time.Millisecond
	if err := pc.ShapePeers(leader, PeerShape{Delay: d, Jitter: d / 2}); err != nil {
		t.Fatal(err)
	}
	delayed, dacked := commitLatencies(ctx, cli, "/delayed", n)
	if err := pc.ShapePeers(leader, PeerShape{Drop: 0.5}); err != nil {
		t.Fatal(err)
	}
	dropped, acked := commitLatencies(ctx, cli, "/dropped", n/4)
	if err := pc.ShapePeers(leader, PeerShape{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("member %d: ID %x replaced by %x; commit p50 through the leader: unshaped %s, delay %s±%s %s, drop 50%% %s (%d of %d acknowledged)",
		i, old, fresh, median(base), d, d/2, median(delayed), median(dropped), acked, n/4)
	if median(delayed) < median(base)+d {
		t.Errorf("delay %s: commit p50 %s, not %s above the unshaped %s", d, median(delayed), d, median(base))
	}
	requireKept(ctx, t, cli, "/delayed/", dacked)
	requireKept(ctx, t, cli, "/dropped/", acked)
}

// requireKept fails t unless at least acked keys are under prefix: no
// write that was acknowledged under a fault is lost.
func requireKept(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix string, acked int) {
	t.Helper()
	got, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if int(got.Count) < acked {
		t.Errorf("%s: %d writes acknowledged, %d there after", prefix, acked, got.Count)
	}
}
