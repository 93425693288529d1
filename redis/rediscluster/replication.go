package rediscluster

import (
	"bytes"
	"net"
	"strconv"
	"sync"
)

// relay stands in front of the first primary: its address is the
// primary's for everyone (clients, Sentinels and replicas), and it
// forwards every connection. It tells a replica's replication
// connection apart by the handshake the replica sends first (`REPLCONF
// listening-port P`), so that one replica's link can be cut on its own
// (CutReplication): cut closes that replica's connection and closes each
// new one it opens as soon as it names itself, so the replica sees its
// link down and retries, and the writes the primary acknowledges
// meanwhile never reach it.
//
// Why in front of the primary, not beside each replica: a Sentinel
// rewrites a replica that replicates from an address other than the
// primary's it monitors (`+fix-slave-config`, after failover-timeout), so
// a relay of a replica's own is bypassed ten seconds into a run.
type relay struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	cutOff map[int]bool // replica listening ports whose link is cut
	conns  map[net.Conn]*relayed
	closed bool
	wg     sync.WaitGroup
}

// relayed is one forwarded connection: its two ends, and the replica it
// replicates to (its listening port), 0 for any other client.
type relayed struct {
	in, out net.Conn
	replica int
}

// startRelay listens on a free loopback port and forwards to target.
func startRelay(target string) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, target: target, cutOff: map[int]bool{}, conns: map[net.Conn]*relayed{}}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

func (r *relay) addr() string { return r.ln.Addr().String() }

func (r *relay) port() int { return r.ln.Addr().(*net.TCPAddr).Port }

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", r.target)
		if err != nil {
			in.Close() // the primary is down: as a refused connection
			continue
		}
		c := &relayed{in: in, out: out}
		if !r.track(c) {
			continue
		}
		r.wg.Add(2)
		go r.upstream(c)
		go r.pipe(c, in, out)
	}
}

// track adds a relayed connection, unless the relay was closed meanwhile.
func (r *relay) track(c *relayed) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		c.in.Close()
		c.out.Close()
		return false
	}
	r.conns[c.in] = c
	return true
}

// handshakeScan bounds how much of a connection's first bytes are read
// for a replica's handshake.
const handshakeScan = 4096

// upstream copies what the client sends to the primary, reading its
// first bytes for `REPLCONF listening-port P`: from then on the
// connection is replica P's link, closed at once if that link is cut.
func (r *relay) upstream(c *relayed) {
	defer r.wg.Done()
	defer r.drop(c)
	var seen []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := c.in.Read(buf)
		if n > 0 {
			if c.replica == 0 && len(seen) < handshakeScan {
				seen = append(seen, buf[:n]...)
				if p := listeningPort(seen); p > 0 && !r.identify(c, p) {
					return
				}
			}
			if _, werr := c.out.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// listeningPort finds `REPLCONF listening-port P` in a RESP stream's
// first bytes: P, or 0 when it is not (yet) there.
func listeningPort(b []byte) int {
	i := bytes.Index(b, []byte("listening-port\r\n$"))
	if i < 0 {
		return 0
	}
	rest := b[i+len("listening-port\r\n$"):]
	_, value, ok := bytes.Cut(rest, []byte("\r\n"))
	if !ok {
		return 0
	}
	digits, _, ok := bytes.Cut(value, []byte("\r\n"))
	if !ok {
		return 0
	}
	p, err := strconv.Atoi(string(digits))
	if err != nil {
		return 0
	}
	return p
}

// identify marks c as replica port's link; false (and c closed) if that
// link is cut.
func (r *relay) identify(c *relayed, port int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c.replica = port
	if r.cutOff[port] {
		c.in.Close()
		c.out.Close()
		return false
	}
	return true
}

// pipe copies what the primary sends back to the client.
func (r *relay) pipe(c *relayed, dst, src net.Conn) {
	defer r.wg.Done()
	defer r.drop(c)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
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

// drop closes both ends of c and forgets it.
func (r *relay) drop(c *relayed) {
	c.in.Close()
	c.out.Close()
	r.mu.Lock()
	delete(r.conns, c.in)
	r.mu.Unlock()
}

// cut cuts replica port's link (closing it) or heals it.
func (r *relay) cut(port int, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cutOff[port] = on
	if !on {
		return
	}
	for _, c := range r.conns {
		if c.replica == port {
			c.in.Close()
			c.out.Close()
		}
	}
}

// close stops the relay and waits for its goroutines.
func (r *relay) close() {
	r.mu.Lock()
	r.closed = true
	for _, c := range r.conns {
		c.in.Close()
		c.out.Close()
	}
	r.mu.Unlock()
	r.ln.Close()
	r.wg.Wait()
}
