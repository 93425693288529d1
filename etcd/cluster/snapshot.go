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
	// leader's when it was healed; Threshold how far it had to be (1.5 ×
	// the cluster's SnapshotThreshold).
	Behind, Threshold uint64
	// Writes is how many writes the fault made itself.
	Writes int
	// SnapshotsSent is the leader's etcd_network_snapshot_send_success
	// for the follower, before the cut and once it caught up.
	SnapshotsSent [2]float64
	// Applied is the revision the follower served once it caught up.
	Applied int64
	// Tries is how many cuts it took (see CatchUpBySnapshot).
	Tries int
}

// CatchUpBySnapshot cuts follower i from its peers until the leader's
// applied index is more than 1.5 × c.SnapshotThreshold() ahead of its
// own, heals it, and waits until it has applied what the leader had then.
// When the leader sent it no snapshot (it had not compacted its log: etcd
// holds compaction for 30 s after it sends any snapshot,
// releaseDelayAfterSnapshot, e.g. to a member just replaced), it tries
// again, until catchUpWait or ctx ends. It fails when i leads, or when no
// try ended in a snapshot.
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
	cu := catchUp{c: c, leader: leader, i: i, out: &out}
	var err error
	if cu.lcli, err = dialMember(c, leader); err != nil {
		return out, fmt.Errorf("snapshot catch-up of member %d: %w", i, err)
	}
	defer cu.lcli.Close()
	if cu.fcli, err = dialMember(c, i); err != nil {
		return out, fmt.Errorf("snapshot catch-up of member %d: %w", i, err)
	}
	defer cu.fcli.Close()
	st, err := cu.fcli.Status(ctx, c.Endpoints()[i])
	if err != nil {
		return out, fmt.Errorf("snapshot catch-up of member %d: its status: %w", i, err)
	}
	cu.id = fmt.Sprintf("%x", st.Header.MemberId)
	if out.SnapshotsSent[0], err = snapshotsSent(ctx, c, leader, cu.id); err != nil {
		return out, fmt.Errorf("snapshot catch-up of member %d: %w", i, err)
	}
	// Half as far again as the threshold: the follower may hold entries
	// it has not applied (its raft match is ahead of its applied index),
	// and the leader compacts its log a moment after each snapshot, at
	// most a snapshot count behind it; a lag of just past the threshold
	// was caught up without a snapshot (218 behind at 200, in a run).
	out.Threshold = c.SnapshotThreshold() * 3 / 2
	for {
		out.Tries++
		sent, err := cu.try(ctx)
		switch {
		case err != nil:
			return out, fmt.Errorf("snapshot catch-up of member %d: %w", i, err)
		case sent:
			return out, nil
		case ctx.Err() != nil:
			return out, fmt.Errorf("snapshot catch-up of member %d: %d tries caught it up %d entries behind without a snapshot (threshold %d; etcd holds its log for 30 s after it sends a snapshot): %w", i, out.Tries, out.Behind, out.Threshold, ctx.Err())
		}
	}
}

// catchUp is one CatchUpBySnapshot under way.
type catchUp struct {
	c          Members
	leader, i  int
	lcli, fcli *clientv3.Client
	id         string // the follower's member ID (hex)
	out        *CatchUp
}

// try cuts the follower until it is past the threshold, heals it, waits
// until it caught up, and says whether the leader sent it a snapshot.
func (cu catchUp) try(ctx context.Context) (bool, error) {
	c, out := cu.c, cu.out
	if err := c.Partition(cu.i); err != nil {
		return false, err
	}
	behind, writes, err := fallBehind(ctx, c, cu.lcli, cu.fcli, cu.leader, cu.i, out.Threshold)
	out.Behind, out.Writes = behind, out.Writes+writes
	if herr := c.Heal(cu.i); err != nil || herr != nil {
		return false, errors.Join(err, herr)
	}
	// Caught up: the follower serves, from its own store, the revision of
	// a write made after the heal. Not its Status: Status reads the
	// member's alarm store, which applying a snapshot replaces without a
	// lock (EtcdServer.Alarms against restoreAlarms, etcd v3.7.3
	// server.go): a data race the race detector reports whenever the
	// follower is asked while it takes the snapshot.
	var target int64
	for target == 0 {
		if resp, err := cu.lcli.Put(ctx, CatchUpKey, "caught-up?"); err == nil {
			out.Writes++
			target = resp.Header.Revision
		} else if !sleepCtx(ctx, 20*time.Millisecond) {
			return false, fmt.Errorf("write after the heal: %w", err)
		}
	}
	for {
		out.Applied = servedRevision(ctx, cu.fcli)
		if out.Applied >= target {
			break
		}
		if !sleepCtx(ctx, 20*time.Millisecond) {
			return false, fmt.Errorf("serves revision %d of %d: %w", out.Applied, target, ctx.Err())
		}
	}
	// The sender counts its snapshot once the receiver has answered:
	// give it a moment after the follower is seen caught up.
	for range 10 {
		if out.SnapshotsSent[1], err = snapshotsSent(ctx, c, cu.leader, cu.id); err != nil || out.SnapshotsSent[1] > out.SnapshotsSent[0] {
			return err == nil, err
		}
		if !sleepCtx(ctx, 50*time.Millisecond) {
			break
		}
	}
	return false, nil
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
				if _, err := lcli.Put(wctx, CatchUpKey, "x"); err != nil {
					sleepCtx(wctx, 10*time.Millisecond) // no leader for a moment: do not spin
					continue
				}
				mu.Lock()
				writes++
				mu.Unlock()
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

// servedRevision is the revision member cli serves from its own store (a
// serializable read of CatchUpKey), 0 when it does not answer.
func servedRevision(ctx context.Context, cli *clientv3.Client) int64 {
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	resp, err := cli.Get(rctx, CatchUpKey, clientv3.WithSerializable())
	if err != nil {
		return 0
	}
	return resp.Header.Revision
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
