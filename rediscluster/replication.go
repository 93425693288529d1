package rediscluster

import (
	"io"
	"net"
	"sync"
)

// relay forwards a replica's replication connection to the primary, so
// that the link can be cut on its own (CutReplication): cut closes every
// connection it carries, and while cut it closes each new one at once, so
// the replica sees its link down and retries, and the writes the primary
// acknowledges meanwhile never reach it.
type relay struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	isCut  bool
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// startRelay listens on a free loopback port and forwards to target.
func startRelay(target string) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

func (r *relay) addr() string { return r.ln.Addr().String() }

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		refuse := r.isCut || r.closed
		r.mu.Unlock()
		if refuse {
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", r.target)
		if err != nil {
			in.Close()
			continue
		}
		if !r.track(in, out) {
			continue
		}
		r.wg.Add(2)
		go r.pipe(in, out)
		go r.pipe(out, in)
	}
}

// track adds both ends of a relayed connection, unless the relay was cut
// or closed meanwhile (then it closes them and says so).
func (r *relay) track(in, out net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.isCut || r.closed {
		in.Close()
		out.Close()
		return false
	}
	r.conns[in], r.conns[out] = struct{}{}, struct{}{}
	return true
}

// pipe copies from src to dst until either ends, then closes both.
func (r *relay) pipe(dst, src net.Conn) {
	defer r.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
	r.mu.Lock()
	delete(r.conns, dst)
	delete(r.conns, src)
	r.mu.Unlock()
}

// cut cuts the link (closing what it carries) or heals it.
func (r *relay) cut(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.isCut = on
	if on {
		for c := range r.conns {
			c.Close()
		}
	}
}

// close stops the relay and waits for its goroutines.
func (r *relay) close() {
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.ln.Close()
	r.wg.Wait()
}
