package zkcluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// Peer partitions. Every member reaches every other through relays of
// lockbench's, one link per ordered pair (a, b): member a's zoo.cfg
// names, as member b's quorum and election addresses, the two
// listeners of link (a, b), which forward to b's real ports. Each
// member's own server line is its real ports (it binds them), so each
// member has a zoo.cfg of its own; with reconfigEnabled=false ZooKeeper
// 3.8 keeps each member's view (it neither stores nor adopts the
// leader's configuration: QuorumPeer.setLastSeenQuorumVerifier and
// processReconfig return at once).
//
// Every connection a member opens to a peer then passes through a link
// that knows both ends, with one exception this file mends: on the
// election port a member with the smaller id that dials a larger one is
// hung up on, and the larger dials back — to the address the smaller
// sent in its first message (QuorumCnxManager.handleConnection), which
// is its real election port, not a relay. The election listener of link
// (a, b) therefore rewrites that first message's address to the election
// listener of link (b, a), so that the call back passes through a link
// too.
//
// Cutting member i (Partition) stops every link from or to i: what is
// sent on a relayed connection waits in the relay (and behind it, in the
// sockets' buffers), and a connection opened meanwhile is accepted but
// not forwarded, as a network that drops packets holds TCP's traffic
// until it mends or a side gives up. ZooKeeper's own timeouts then act
// as on a real partition: a learner that hears nothing from its leader
// for syncLimit ticks drops it, a leader that hears from no quorum for
// syncLimit ticks steps down. Heal lets what waited through.

// Election protocol versions of QuorumCnxManager's first message (3.5+):
// the version, the sender's id, then its election address(es) as a
// length-prefixed string. A first long ≥ 0 is the older form, the id
// alone.
const (
	electionProtoV1 = -65536
	electionProtoV2 = -65535
)

// electionAddrMax bounds the address string of a first message (as
// QuorumCnxManager's own maxBuffer does).
const electionAddrMax = 4096

// headWait bounds the read of an election connection's first message.
const headWait = 10 * time.Second

// dialWait bounds a relay's dial of its member; dialPatience is how long
// it tries again while the member refuses, every dialRetry.
const (
	dialWait     = 2 * time.Second
	dialPatience = 2 * time.Second
	dialRetry    = 50 * time.Millisecond
)

// gate is one link's state: open, or cut (what is sent waits).
type gate struct {
	mu   sync.Mutex
	open chan struct{} // closed while the link is open
}

func newGate() *gate {
	g := &gate{open: make(chan struct{})}
	close(g.open)
	return g
}

// set opens or cuts the link.
func (g *gate) set(open bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
		if !open {
			g.open = make(chan struct{})
		}
	default:
		if open {
			close(g.open)
		}
	}
}

// wait returns true once the link is open, false if done closes first.
func (g *gate) wait(done <-chan struct{}) bool {
	g.mu.Lock()
	ch := g.open
	g.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-done:
		return false
	}
}

// link is member from's way to member to: a relay in front of to's
// quorum port and one in front of its election port, under one gate.
type link struct {
	from, to         int
	gate             *gate
	quorum, election *peerRelay
}

// peerRelay forwards every connection made to it to target, under its
// link's gate; head, when set, reads a connection's first message and
// returns what to send in its place.
type peerRelay struct {
	ln     net.Listener
	target string
	gate   *gate
	head   func(io.Reader) ([]byte, error)
	done   chan struct{}

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

// newPeerRelay listens on a free loopback port; it forwards to its
// target once started.
func newPeerRelay(g *gate) (*peerRelay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("peer relay: %w", err)
	}
	return &peerRelay{ln: ln, gate: g, done: make(chan struct{}), conns: map[net.Conn]struct{}{}}, nil
}

// start accepts connections until close.
func (r *peerRelay) start() {
	r.wg.Add(1)
	go r.accept()
}

func (r *peerRelay) port() int { return r.ln.Addr().(*net.TCPAddr).Port }

func (r *peerRelay) accept() {
	defer r.wg.Done()
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return // closed
		}
		if !r.track(in) {
			return
		}
		r.wg.Add(1)
		go r.serve(in)
	}
}

// serve forwards one connection: its first message (rewritten by head),
// once the link is open, then both ways.
func (r *peerRelay) serve(in net.Conn) {
	defer r.wg.Done()
	defer r.forget(in)
	var first []byte
	if r.head != nil {
		in.SetReadDeadline(time.Now().Add(headWait))
		b, err := r.head(in)
		if err != nil {
			return
		}
		in.SetReadDeadline(time.Time{})
		first = b
	}
	out := r.dial()
	if out == nil {
		return // the member is down: the dialler sees its connection end
	}
	if !r.track(out) {
		return
	}
	defer r.forget(out)
	if len(first) > 0 {
		if _, err := out.Write(first); err != nil {
			return
		}
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.pipe(in, out)
	}()
	r.pipe(out, in)
}

// dial connects to the target once the link is open, trying again for
// dialPatience while the target refuses: a leader binds its quorum port
// only once elected, and a follower that learned of it first would
// otherwise see the relay hang up on it, take that for a failed leader,
// and start another election, where a refused connection makes it try
// again (Learner.connectToLeader). nil when the target stayed down or
// the relay closed.
func (r *peerRelay) dial() net.Conn {
	var deadline time.Time // from the first refusal, not from a wait on the gate
	for {
		if !r.gate.wait(r.done) {
			return nil
		}
		out, err := net.DialTimeout("tcp", r.target, dialWait)
		if err == nil {
			return out
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(dialPatience)
		} else if time.Now().After(deadline) {
			return nil
		}
		select {
		case <-r.done:
			return nil
		case <-time.After(dialRetry):
		}
	}
}

// pipe copies src to dst, each chunk once the link is open; when src
// ends, both close (the other pipe then ends too) once the link is open:
// a side's end, like its bytes, does not cross a cut, so a member that
// crashes or gives up on a connection is not seen to across a partition.
func (r *peerRelay) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 || err != nil {
			if !r.gate.wait(r.done) {
				return
			}
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// track records a connection so that close can end it; after close it
// closes it and says false.
func (r *peerRelay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		c.Close()
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *peerRelay) forget(c net.Conn) {
	c.Close()
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
}

// close stops accepting, ends every connection (waiting or not) and
// waits for the relay's goroutines. A second close does nothing.
func (r *peerRelay) close() {
	r.once.Do(func() {
		r.ln.Close()
		close(r.done)
		r.mu.Lock()
		r.closed = true
		for c := range r.conns {
			c.Close()
		}
		r.mu.Unlock()
		r.wg.Wait()
	})
}

// rewriteElectionAddr returns the head of an election relay: it reads
// QuorumCnxManager's first message and sends it on with back as the
// dialler's election address (an older, id-only message is sent on as it
// is: the receiver then dials back from its own zoo.cfg, which names a
// relay).
func rewriteElectionAddr(back string) func(io.Reader) ([]byte, error) {
	return func(in io.Reader) ([]byte, error) {
		var v [8]byte
		if _, err := io.ReadFull(in, v[:]); err != nil {
			return nil, err
		}
		proto := int64(binary.BigEndian.Uint64(v[:]))
		if proto >= 0 {
			return v[:], nil
		}
		if proto != electionProtoV1 && proto != electionProtoV2 {
			return nil, fmt.Errorf("election connection: unknown protocol version %d", proto)
		}
		var rest [12]byte // sid, address length
		if _, err := io.ReadFull(in, rest[:]); err != nil {
			return nil, err
		}
		n := int32(binary.BigEndian.Uint32(rest[8:]))
		if n <= 0 || n > electionAddrMax {
			return nil, errors.New("election connection: bad address length " + strconv.Itoa(int(n)))
		}
		if _, err := io.CopyN(io.Discard, in, int64(n)); err != nil {
			return nil, err
		}
		out := make([]byte, 0, 20+len(back))
		out = append(out, v[:]...)
		out = append(out, rest[:8]...)
		out = binary.BigEndian.AppendUint32(out, uint32(len(back)))
		return append(out, back...), nil
	}
}

// newLinks listens for the links of every ordered pair of n members.
// Their ports are taken before the members' are picked (freePorts), so
// that no member is given a port a link holds.
func newLinks(n int) ([][]*link, error) {
	links := make([][]*link, n)
	fail := func(err error) ([][]*link, error) {
		closeLinks(links)
		return nil, err
	}
	for a := range n {
		links[a] = make([]*link, n)
		for b := range n {
			if a == b {
				continue
			}
			l := &link{from: a, to: b, gate: newGate()}
			links[a][b] = l
			var err error
			if l.quorum, err = newPeerRelay(l.gate); err != nil {
				return fail(err)
			}
			if l.election, err = newPeerRelay(l.gate); err != nil {
				return fail(err)
			}
		}
	}
	return links, nil
}

// startLinks points every link at its member's real quorum and election
// ports, and starts it. Each election relay rewrites the dialler's
// address to the link back.
func startLinks(links [][]*link, members []*member) {
	for a, row := range links {
		for b, l := range row {
			if l == nil {
				continue
			}
			l.quorum.target = addr(members[b].quorumPort)
			l.election.target = addr(members[b].electionPort)
			l.election.head = rewriteElectionAddr(addr(links[b][a].election.port()))
		}
	}
	for _, row := range links {
		for _, l := range row {
			if l != nil {
				l.quorum.start()
				l.election.start()
			}
		}
	}
}

// closeLinks closes every link's relays (one never started closes at
// once).
func closeLinks(links [][]*link) {
	for _, row := range links {
		for _, l := range row {
			if l == nil {
				continue
			}
			for _, r := range []*peerRelay{l.quorum, l.election} {
				if r != nil {
					r.close()
				}
			}
		}
	}
}
