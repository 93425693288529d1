package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"sync"
	"time"
)

// Peer partitions on member processes. Each member advertises, as its
// peer URL, a relay (peerRelay) that lockbench runs in front of the port
// it really listens on, so every connection a peer opens to it passes
// through lockbench. etcd's peers talk both ways over connections either
// side dials (a member's stream readers dial the peer it reads from; its
// pipeline dials the peer it sends to), and all of them dial the one
// advertised URL from 127.0.0.1, so a relay cannot tell peers apart by
// address. It tells them apart by what they say: every raft request
// (stream, pipeline, snapshot) carries "X-Server-From: <member id>" in its
// first HTTP request head, and a connection is only ever used by the
// member that dialled it. Cutting member i then means: every connection
// into i is closed and refused, and every connection whose dialler says
// it is i is closed and refused, whichever member it goes to.
//
// What it cannot cut: requests without that header that the cut member
// dials to another (lease renewals a follower forwards to the leader over
// /leases, version and membership probes). They reach the others while the
// cut member still believes in a leader, i.e. until its election timeout;
// the embedded kind's CutPeer does not cut them at all. A cut connection
// is closed (the peer sees a reset or EOF at once), not silently dropped:
// etcd redials every 100 ms and is refused each time.

// peerHeadLimit bounds how much of a connection's first request head a
// relay reads to find its dialler.
const peerHeadLimit = 16 << 10

// peerHeadTimeout bounds the wait for that head: an idle connection is
// let through unidentified.
const peerHeadTimeout = 2 * time.Second

// peerCuts is the partition state of a process cluster's relays: which
// members are cut from all their peers, and the member ids by which a
// connection's dialler is known.
type peerCuts struct {
	mu    sync.Mutex
	cut   map[int]bool
	ids   map[string]int // member id (hex, as in X-Server-From) → index
	relay []*peerRelay
	// shape is each member's peer traffic shaping (peershape.go).
	shape map[int]PeerShape
}

// allowed says whether a connection into member to from dialler from (-1:
// unknown) may pass.
func (pc *peerCuts) allowed(from, to int) bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return !pc.cut[to] && (from < 0 || !pc.cut[from])
}

// dialler is the index of the member with id, or -1.
func (pc *peerCuts) dialler(id string) int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if i, ok := pc.ids[id]; ok {
		return i
	}
	return -1
}

// setCut cuts member i from its peers (or mends it) and closes every
// connection the new state forbids.
func (pc *peerCuts) setCut(i int, cut bool) {
	pc.mu.Lock()
	if pc.cut == nil {
		pc.cut = map[int]bool{}
	}
	pc.cut[i] = cut
	relays := pc.relay
	pc.mu.Unlock()
	for _, r := range relays {
		r.enforce()
	}
}

// peerRelay relays TCP connections from a member's advertised peer URL to
// the port it listens on, closing those its cluster's cuts forbid.
type peerRelay struct {
	to     int // the member it fronts
	target string
	cuts   *peerCuts
	l      net.Listener
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[*relayConn]struct{}
	closed bool
}

// relayConn is one relayed connection: the dialler's side, the member's
// side once dialled, and who dialled (-1: unknown).
type relayConn struct {
	mu           sync.Mutex
	from         int
	client, peer net.Conn
}

func (c *relayConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.client.Close()
	if c.peer != nil {
		c.peer.Close()
	}
}

func (c *relayConn) dialler() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.from
}

// startPeerRelay listens on a free loopback port for member to, whose
// real peer listener is target ("127.0.0.1:port").
func startPeerRelay(cuts *peerCuts, to int, target string) (*peerRelay, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("peer relay for member %d: %w", to, err)
	}
	r := &peerRelay{to: to, target: target, cuts: cuts, l: l, conns: map[*relayConn]struct{}{}}
	cuts.mu.Lock()
	cuts.relay = append(cuts.relay, r)
	cuts.mu.Unlock()
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

// URL is the relay's address as a peer URL: what the member advertises.
func (r *peerRelay) URL() string { return "http://" + r.l.Addr().String() }

func (r *peerRelay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.l.Accept()
		if err != nil {
			return // closed
		}
		rc := &relayConn{from: -1, client: c}
		if !r.track(rc) {
			c.Close()
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer r.untrack(rc)
			r.serve(rc)
		}()
	}
}

// serve identifies c's dialler from its first request head, then relays
// it to the member unless a cut forbids it (checked again once it is
// tracked as identified, so that a cut made meanwhile is not missed).
func (r *peerRelay) serve(rc *relayConn) {
	head, from := r.identify(rc.client)
	rc.mu.Lock()
	rc.from = from
	rc.mu.Unlock()
	if !r.cuts.allowed(from, r.to) {
		rc.close()
		return
	}
	p, err := net.DialTimeout("tcp", r.target, time.Second)
	if err != nil {
		rc.close() // the member is down: as if its port were closed
		return
	}
	rc.mu.Lock()
	rc.peer = p
	rc.mu.Unlock()
	if !r.cuts.allowed(from, r.to) {
		rc.close()
		return
	}
	if _, err := p.Write(head); err != nil {
		rc.close()
		return
	}
	done := make(chan struct{})
	go func() {
		r.cuts.relay1(rc.client, p, from, r.to)
		rc.close()
		close(done)
	}()
	r.cuts.relay1(p, rc.client, from, r.to)
	rc.close()
	<-done
}

// identify reads c's first request head (what has arrived of it, up to
// peerHeadLimit) and returns the bytes read and the member named by its
// X-Server-From header (-1 when none or unknown).
func (r *peerRelay) identify(c net.Conn) ([]byte, int) {
	c.SetReadDeadline(time.Now().Add(peerHeadTimeout))
	defer c.SetReadDeadline(time.Time{})
	var buf bytes.Buffer
	chunk := make([]byte, 4096)
	for buf.Len() < peerHeadLimit && !bytes.Contains(buf.Bytes(), []byte("\r\n\r\n")) {
		n, err := c.Read(chunk)
		buf.Write(chunk[:n])
		if err != nil {
			break
		}
	}
	return buf.Bytes(), r.cuts.dialler(serverFrom(buf.Bytes()))
}

// serverFrom is the X-Server-From header of an HTTP request head, or "".
func serverFrom(head []byte) string {
	end := bytes.Index(head, []byte("\r\n\r\n"))
	if end < 0 {
		return ""
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(head[:end+4])))
	if _, err := tp.ReadLine(); err != nil { // the request line
		return ""
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	return h.Get("X-Server-From")
}

func (r *peerRelay) track(c *relayConn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *peerRelay) untrack(c *relayConn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.conns, c)
}

// enforce closes the connections the current cuts forbid.
func (r *peerRelay) enforce() {
	r.mu.Lock()
	var drop []*relayConn
	for c := range r.conns {
		if !r.cuts.allowed(c.dialler(), r.to) {
			drop = append(drop, c)
		}
	}
	r.mu.Unlock()
	for _, c := range drop {
		c.close()
	}
}

// close stops the relay and every connection through it, and waits for
// its goroutines.
func (r *peerRelay) close() {
	r.mu.Lock()
	r.closed = true
	conns := make([]*relayConn, 0, len(r.conns))
	for c := range r.conns {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	r.l.Close()
	for _, c := range conns {
		c.close()
	}
	r.wg.Wait()
}
