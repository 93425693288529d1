package cluster

import (
	"fmt"
	"math/rand/v2"
	"net"
	"time"
)

// Peer traffic shaping: the relays in front of the members' peer ports
// (peerproxy.go) can slow or thin one member's peer traffic instead of
// cutting it, as etcd's robustness suite does to a member's peer proxy
// (tests/robustness/failpoint in etcd-io/etcd: DelayPeerNetwork,
// DropPeerNetwork). A shaped member's traffic is every relayed connection
// into it and every one it dialled, both directions: all of its raft
// messages, heartbeats and snapshots.

// PeerShape is what the relays do to one member's peer traffic. The zero
// value relays it untouched.
type PeerShape struct {
	// Delay holds each relayed chunk that long, plus a uniform draw from
	// [0, Jitter), before it goes on: chunks queue behind each other, as
	// on a slow link.
	Delay, Jitter time.Duration
	// Drop is the share (0..1) of relayed chunks lost: a lost chunk is
	// not delivered and its connection is reset, both ends closed, so
	// that what it carried and whatever was queued behind it is lost
	// with it, as when a middlebox drops a connection; etcd's peer
	// (rafthttp) dials again and raft sends the lost messages again. A
	// chunk is never dropped from inside a stream that carries on: that
	// corrupts the stream in a way no network does (TCP checksums and
	// retransmits), and a raft message decoded from the remains can carry
	// indexes the receiver does not have, which makes raft panic
	// ("tocommit is out of range"), as a first version of this relay did.
	Drop float64
}

// Validate refuses a shape the relays cannot apply.
func (s PeerShape) Validate() error {
	switch {
	case s.Delay < 0 || s.Jitter < 0:
		return fmt.Errorf("peer shape: delay %s and jitter %s must be ≥0", s.Delay, s.Jitter)
	case s.Drop < 0 || s.Drop >= 1:
		return fmt.Errorf("peer shape: drop share %g must be in [0, 1)", s.Drop)
	}
	return nil
}

// relayChunk is how much of a stream a relay reads and forwards at once.
const relayChunk = 32 << 10

// setShape shapes member i's peer traffic from now on (connections open
// already included, from their next chunk).
func (pc *peerCuts) setShape(i int, s PeerShape) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.shape == nil {
		pc.shape = map[int]PeerShape{}
	}
	pc.shape[i] = s
}

// shapeOf is the shaping of a connection from dialler from (-1: unknown)
// into member to: the receiving member's when it is shaped, else the
// dialler's.
func (pc *peerCuts) shapeOf(from, to int) PeerShape {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if s := pc.shape[to]; s != (PeerShape{}) || from < 0 {
		return s
	}
	return pc.shape[from]
}

// relay1 copies src to dst, one direction of a connection from dialler
// from into member to, applying the shaping in force for each chunk,
// until either side fails or a chunk is dropped; the caller then closes
// the connection.
func (pc *peerCuts) relay1(dst, src net.Conn, from, to int) {
	buf := make([]byte, relayChunk)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			s := pc.shapeOf(from, to)
			if d := s.Delay + jitter(s.Jitter); d > 0 {
				time.Sleep(d)
			}
			if s.Drop > 0 && rand.Float64() < s.Drop {
				return // the caller closes both ends
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// jitter is a uniform draw from [0, j), 0 when j is.
func jitter(j time.Duration) time.Duration {
	if j <= 0 {
		return 0
	}
	return rand.N(j)
}
