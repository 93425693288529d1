package cluster

import (
	"fmt"

	"go.etcd.io/etcd/server/v3/etcdserver"
)

// learnIDs maps each running embedded member's raft ID to its index, so
// that the peer relays (Options.PeerRelays) know who dialled them.
func (c *Cluster) learnIDs() {
	if len(c.relays) == 0 {
		return
	}
	ids := map[string]int{}
	for _, m := range c.members {
		if id := m.ID(); id != 0 {
			ids[id.String()] = m.Index
		}
	}
	c.cuts.mu.Lock()
	c.cuts.ids = ids
	c.cuts.mu.Unlock()
}

// ShapePeers delays or drops member i's peer traffic at its relays; the
// cluster must have been started with Options.PeerRelays.
func (c *Cluster) ShapePeers(i int, s PeerShape) error {
	if _, err := c.member(i); err != nil {
		return err
	}
	if len(c.relays) == 0 {
		return fmt.Errorf("shape member %d's peer traffic: %w: the %s cluster relays its peer traffic only when started with peer relays (--peer-relays)", i, ErrUnsupported, KindEmbedded)
	}
	if err := s.Validate(); err != nil {
		return err
	}
	c.cuts.setShape(i, s)
	return nil
}

// ShapePeers delays or drops member i's peer traffic at its relays.
func (pc *ProcessCluster) ShapePeers(i int, s PeerShape) error {
	if _, err := pc.member(i); err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return err
	}
	pc.cuts.setShape(i, s)
	return nil
}

// SnapshotThreshold is the snapshot count plus the catch-up entries the
// members run with (Options.SnapshotCount, or etcd's defaults).
func (c *Cluster) SnapshotThreshold() uint64 {
	if n := c.opts.SnapshotCount; n > 0 {
		return 2 * n
	}
	return etcdserver.DefaultSnapshotCount + etcdserver.DefaultSnapshotCatchUpEntries
}

// SnapshotThreshold is etcd's default: the process cluster does not set
// the snapshot count.
func (pc *ProcessCluster) SnapshotThreshold() uint64 {
	return etcdserver.DefaultSnapshotCount + etcdserver.DefaultSnapshotCatchUpEntries
}
