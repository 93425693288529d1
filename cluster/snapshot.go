package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Catching a follower up by snapshot, as etcd's robustness suite's
// BlackholeUntilSnapshot failpoint does (tests/robustness/failpoint in
// etcd-io/etcd): the follower is cut from its peers until the leader's
// log has moved past it by more than the snapshot threshold (the leader
// has then compacted the entries the follower lacks), then healed, so
// that the leader can only send it a snapshot. Traffic moves the log; so
// do writes of the fault's own, to one key outside every run's
// namespace (under the harness's clean prefix), so that the fault takes
// a bounded time whatever the workload.

// CatchUpKey is the key snapshot-catchup writes to move the leader's log.
const CatchUpKey = "/lockbench/chaos/snapshot-catchup"

// catchUpWait bounds one catch-up: the writes, the heal, the snapshot.
const catchUpWait = time.Minute

// catchUpWriters is how many writes snapshot-catchup keeps in flight.
const catchUpWriters = 8

// CatchUp is what one catch-up by snapshot did, for tests and messages.
type CatchUp struct {
	// Behind is how far the follower's applied index was behind the
	// leader's when it was healed; Threshold the cluster's.
	Behind, Threshold uint64
	// Writes is how many writes the fault made itself.
	Writes int
	// SnapshotsSent is the leader's etcd_network_snapshot_send_success
	// for the follower, before the cut and once it caught up.
	SnapshotsSent [2]float64
	// Applied is the follower's applied index once it caught up.
	Applied uint64
}

// CatchUpBySnapshot cuts follower i from its peers until the leader's
// applied index is more than c.SnapshotThreshold() ahead of its own,
// heals it, and waits until it has applied what the leader had then. It
// fails when i leads, or when the leader sent it no snapshot (it caught
// up some other way: the threshold was not passed).
func CatchUpBySnapshot(ctx context.Context, c Members, i int) (CatchUp, error) {
	var out CatchUp
	ctx, cancel := context.WithTimeout(ctx, catchUpWait)
	defer cancel()
	leader := c.Leader()
	switch {
	case leader < 0:
		return out, fmt.Errorf("snapshot catch-up of member %d: no member leads", i)
	case leader == i:
		return out, fmt.Errorf("snapshot catch-up of member %d: it leads; the fault needs a follower", i)
	}
	lcli, err := dialMember(c, leader)
	if err != nil {
		return out, fmt.Errorf("snapshot catch-up of member %d: %w", i, err)
	}
	defer lcli.Close()
	fcli, err := dialMember(c, i)
	if err != nil {
		return out, fmt.Errorf("snapshot catch-up of member %d: %w", i, err)
	}
	defer fcli.Close()
	st, err := fcli.Status(ctx, c.Endpoints()[i])
	if err != nil {
		return out, fmt.Errorf("snapshot catch-up of member %d: its status: %w", i, err)
	}
	id := fmt.Sprintf("%x", st.Header.MemberId)
	if out.SnapshotsSent[0], err = snapshotsSent(ctx, c, leader, id); err != nil {
		return out, fmt.Errorf("snapshot catch-up of member %d: %w", i, err)
	}
	out.Threshold = c.SnapshotThreshold()
	if err := c.Partition(i); err != nil {
		return out, err
	}
	out.Behind, out.Writes, err = fallBehind(ctx, c, lcli, fcli, leader, i, out.Threshold)
	herr := c.Heal(i)
	if err != nil || herr != nil {
		return out, fmt.Errorf("snapshot catch-up of member %d: %w", i, errors.Join(err, herr))
	}
	// A member that applied a snapshot reports the applied index it had
	// before (Status's RaftAppliedIndex, in etcd 3.7) until it applies
	// the next entry: one write per poll gives it one.
	target := appliedIndex(ctx, lcli, c.Endpoints()[leader])
	for {
		if _, err := lcli.Put(ctx, CatchUpKey, "caught-up?"); err == nil {
			out.Writes++
		}
		out.Applied = appliedIndex(ctx, fcli, c.Endpoints()[i])
		if out.Applied >= target {
			break
		}
		if !sleepCtx(ctx, 20*time.Millisecond) {
			return out, fmt.Errorf("snapshot catch-up of member %d: applied %d of %d: %w", i, out.Applied, target, ctx.Err())
		}
	}
	if out.SnapshotsSent[1], err = snapshotsSent(ctx, c, leader, id); err != nil {
		return out, fmt.Errorf("snapshot catch-up of member %d: %w", i, err)
	}
	if out.SnapshotsSent[1] <= out.SnapshotsSent[0] {
		return out, fmt.Errorf("snapshot catch-up of member %d: it caught up %d entries behind without a snapshot (threshold %d)", i, out.Behind, out.Threshold)
	}
	return out, nil
}

// fallBehind writes CatchUpKey until the leader's applied index is more
// than threshold ahead of follower i's, and returns how far behind it is
// and how many writes it took.
func fallBehind(ctx context.Context, c Members, lcli, fcli *clientv3.Client, leader, i int, threshold uint64) (uint64, int, error) {
	wctx, stop := context.WithCancel(ctx)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		writes int
	)
	for range catchUpWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for wctx.Err() == nil {
				if _, err := lcli.Put(wctx, CatchUpKey, "x"); err == nil {
					mu.Lock()
					writes++
					mu.Unlock()
				}
			}
		}()
	}
	var behind uint64
	var err error
	for {
		l := appliedIndex(ctx, lcli, c.Endpoints()[leader])
		f := appliedIndex(ctx, fcli, c.Endpoints()[i])
		if f > 0 && l > f+threshold {
			behind = l - f
			break
		}
		if !sleepCtx(ctx, 20*time.Millisecond) {
			err = fmt.Errorf("leader at %d, follower at %d, threshold %d: %w", l, f, threshold, ctx.Err())
			break
		}
	}
	stop()
	wg.Wait()
	return behind, writes, err
}

// appliedIndex is a member's applied raft index, 0 when it does not
// answer (the caller polls).
func appliedIndex(ctx context.Context, cli *clientv3.Client, ep string) uint64 {
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := cli.Status(sctx, ep)
	if err != nil {
		return 0
	}
	return st.RaftAppliedIndex
}

// snapshotsSent reads member leader's metrics for how many snapshots it
// sent to the member with id (hex): etcd_network_snapshot_send_success.
func snapshotsSent(ctx context.Context, c Members, leader int, id string) (float64, error) {
	tlsCfg, err := c.ClientTLSConfig()
	if err != nil {
		return 0, err
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}, Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Endpoints()[leader]+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("metrics of member %d: %w", leader, err)
	}
	defer resp.Body.Close()
	want := `etcd_network_snapshot_send_success{To="` + id + `"} `
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), want); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, sc.Err() // none sent yet: the series appears at the first
}

// sleepCtx sleeps d, false when ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
