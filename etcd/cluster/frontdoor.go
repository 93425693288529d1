package cluster

import (
	"io"
	"net"
	"sync"
)

// frontDoor is a member's client port as clients see it: a raw TCP relay
// to the member's real listener. A crash closes it together with every
// connection through it, as a dead host's connections die: clients fail
// over at once instead of hanging on streams of a stopped server (etcd's
// own shutdown keeps those open until its graceful stop times out).
// TLS passes through untouched.
type frontDoor struct {
	addr, target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newFrontDoor(addr, target string) *frontDoor {
	return &frontDoor{addr: addr, target: target, conns: map[net.Conn]struct{}{}}
}

// open starts accepting on addr (again, after a shut).
func (f *frontDoor) open() error {
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.ln = ln
	f.mu.Unlock()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				f.relay(c)
			}()
		}
	}()
	return nil
}

// track adds c to the open connections, or reports false when the door is
// shut (c must then be closed by the caller).
func (f *frontDoor) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ln == nil {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *frontDoor) untrack(cs ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range cs {
		delete(f.conns, c)
		c.Close()
	}
}

func (f *frontDoor) relay(down net.Conn) {
	if !f.track(down) {
		down.Close()
		return
	}
	up, err := net.Dial("tcp", f.target)
	if err != nil {
		f.untrack(down)
		return
	}
	if !f.track(up) {
		f.untrack(down, up)
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		// A plain buffered copy, not io.Copy: between two TCP connections
		// io.Copy splices through a kernel pipe, and a relay blocked in
		// splice holds that pipe's two descriptors. With a relay per
		// direction per connection that was 4 pipe descriptors beside the 4
		// sockets of each client connection, 12 of a client's 25 with 3
		// members (measured through /proc/PID/fd): 1,000 clients ran out of
		// a 20,000 open-file limit. The buffer costs relayBuf of memory per
		// direction instead.
		buf := make([]byte, relayBuf)
		io.CopyBuffer(onlyWriter{dst}, onlyReader{src}, buf)
		done <- struct{}{}
	}
	go pipe(up, down)
	go pipe(down, up)
	<-done // either side ending ends both
	f.untrack(down, up)
	<-done
}

// relayBuf is the front door's copy buffer per direction of a connection:
// big enough for a typical gRPC frame, small enough for thousands of
// clients (each has one connection to every member).
const relayBuf = 8 << 10

// onlyReader and onlyWriter hide ReadFrom and WriteTo from io.CopyBuffer,
// so that it uses its buffer and never splices (see relay).
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

type onlyWriter struct{ w io.Writer }

func (o onlyWriter) Write(p []byte) (int, error) { return o.w.Write(p) }

// shut closes the listener and every connection through it, and waits for
// its goroutines.
func (f *frontDoor) shut() {
	f.mu.Lock()
	ln := f.ln
	f.ln = nil
	for c := range f.conns {
		c.Close()
		delete(f.conns, c)
	}
	f.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	f.wg.Wait()
}
