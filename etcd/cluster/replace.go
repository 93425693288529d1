package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// Replacing a member, as an operator replaces a dead disk (and etcd's
// robustness suite's MemberReplace failpoint does, tests/robustness/
// failpoint in etcd-io/etcd): the member dies, is removed from the
// cluster (MemberRemove), its data is wiped, and a fresh member with the
// same name and peer URL is added (MemberAdd) and started with
// --initial-cluster-state=existing, so that it joins with an empty store
// and a new raft ID and must be sent the whole state by the leader.

// replaceWait bounds one replacement: two membership changes, a start and
// the catch-up of an empty member.
const replaceWait = 30 * time.Second

// replacement is what one kind of Members does to its member i during a
// replacement, around the membership changes that are the same for both.
type replacement struct {
	// stop kills the member (its data is about to go).
	stop func(ctx context.Context) error
	// dir is the member's data folder, wiped between the two changes.
	dir string
	// peerURL is the URL the fresh member is added with: what its peers
	// dial.
	peerURL string
	// start starts the fresh member (state existing) and waits until it
	// serves.
	start func(ctx context.Context) error
}

// replaceMember replaces member i of c: stop, remove, wipe, add, start.
// Once begun it runs to its end, bounded by replaceWait alone, even when
// ctx ends first (a run's clock ran out): one cut halfway leaves the
// cluster a member short, or with a member added that never starts, for
// every fault and run after it. A fresh member whose first publish of
// itself is lost publishes again only after etcd's request timeout, so a
// replacement takes up to about 12 s.
func replaceMember(ctx context.Context, c Members, i int, r replacement) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), replaceWait)
	defer cancel()
	via := -1
	for j := 0; j < c.Count(); j++ {
		if j != i && c.Running(j) {
			via = j
			break
		}
	}
	if via < 0 {
		return fmt.Errorf("replace member %d: no other member runs to ask", i)
	}
	cli, err := dialMember(c, via)
	if err != nil {
		return fmt.Errorf("replace member %d: %w", i, err)
	}
	defer cli.Close()
	old, err := memberID(ctx, cli, r.peerURL)
	if err != nil {
		return fmt.Errorf("replace member %d: %w", i, err)
	}
	if err := r.stop(ctx); err != nil {
		return fmt.Errorf("replace member %d: stop it: %w", i, err)
	}
	if err := whileUnhealthy(ctx, func() error { _, err := cli.MemberRemove(ctx, old); return err }); err != nil {
		return fmt.Errorf("replace member %d: remove %x: %w", i, old, err)
	}
	if err := os.RemoveAll(r.dir); err != nil {
		return fmt.Errorf("replace member %d: wipe its data: %w", i, err)
	}
	if err := addMember(ctx, cli, r.peerURL); err != nil {
		return fmt.Errorf("replace member %d: add a fresh one: %w", i, err)
	}
	if err := r.start(ctx); err != nil {
		return fmt.Errorf("replace member %d: start the fresh one: %w", i, err)
	}
	return nil
}

// memberID is the ID of the member whose peer URL is peerURL, as the
// cluster's member list says.
func memberID(ctx context.Context, cli *clientv3.Client, peerURL string) (uint64, error) {
	resp, err := cli.MemberList(ctx)
	if err != nil {
		return 0, fmt.Errorf("member list: %w", err)
	}
	for _, m := range resp.Members {
		for _, u := range m.PeerURLs {
			if u == peerURL {
				return m.ID, nil
			}
		}
	}
	return 0, fmt.Errorf("member list: no member has peer URL %s", peerURL)
}

// Replace removes member i and adds a fresh one with empty data in its
// place (see replaceMember); the fresh member has a new raft ID.
func (c *Cluster) Replace(ctx context.Context, i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	return replaceMember(ctx, c, i, replacement{
		stop: func(ctx context.Context) error {
			if err := c.Crash(i); err != nil {
				return err
			}
			return m.waitClosed(ctx)
		},
		dir:     m.dir,
		peerURL: m.PeerURL,
		start: func(ctx context.Context) error {
			if err := m.front.open(); err != nil {
				return fmt.Errorf("front door: %w", err)
			}
			err := whilePortBusy(ctx, m.Name, 50*time.Millisecond, func() error {
				return c.startMember(ctx, m, embed.ClusterStateFlagExisting)
			})
			c.learnIDs()
			return err
		},
	})
}

// Replace removes member i's process and adds a fresh one with empty
// data in its place (see replaceMember).
func (pc *ProcessCluster) Replace(ctx context.Context, i int) error {
	m, err := pc.member(i)
	if err != nil {
		return err
	}
	return replaceMember(ctx, pc, i, replacement{
		stop:    func(context.Context) error { return m.kill(5 * time.Second) },
		dir:     m.dir,
		peerURL: m.advertiseURL,
		start: func(ctx context.Context) error {
			if err := pc.startExisting(ctx, m); err != nil {
				return err
			}
			return pc.learnIDs(ctx)
		},
	})
}

// addMember adds a member with peerURL, again while etcd refuses it as
// unhealthy (whileUnhealthy).
func addMember(ctx context.Context, cli *clientv3.Client, peerURL string) error {
	return whileUnhealthy(ctx, func() error { _, err := cli.MemberAdd(ctx, []string{peerURL}); return err })
}

// whileUnhealthy runs a membership change again while etcd refuses it as
// unhealthy: its strict reconfiguration check wants the member it asks
// connected to every voting peer for the last 5 s (HealthInterval), which
// a cluster just started, or one just out of a fault, is not yet (a
// remove 1 s after the start was refused so, under make test).
func whileUnhealthy(ctx context.Context, change func() error) error {
	for {
		err := change()
		if err == nil || !errors.Is(err, rpctypes.ErrUnhealthy) {
			return err
		}
		if !sleepCtx(ctx, 200*time.Millisecond) {
			return fmt.Errorf("%w (and %w)", err, ctx.Err())
		}
	}
}
