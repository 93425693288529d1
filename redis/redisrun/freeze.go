package redisrun

import (
	"context"
	"net"
	"sync"
)

// dialFunc is a go-redis Options.Dialer.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// freeze is one client process frozen whole (a GC or VM pause), as the
// etcd runner's pause-client freezes one: its worker stops at its next
// checkpoint, and its connections' reads and writes wait until the thaw,
// the Locker's renewals included. A reply that arrives meanwhile is held
// until the thaw too, so a frozen client learns nothing while frozen.
type freeze struct {
	mu     sync.Mutex
	thawed chan struct{} // non-nil while frozen; closed at the thaw
}

// stop freezes the client.
func (f *freeze) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.thawed == nil {
		f.thawed = make(chan struct{})
	}
}

// thaw lets the client run on.
func (f *freeze) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.thawed != nil {
		close(f.thawed)
		f.thawed = nil
	}
}

// wait is a checkpoint: it returns at once unless the client is frozen,
// and then at the thaw.
func (f *freeze) wait() {
	f.mu.Lock()
	ch := f.thawed
	f.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// dial dials through next; the connection's reads and writes stop while
// the client is frozen.
func (f *freeze) dial(next dialFunc) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		f.wait()
		c, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return frozenConn{Conn: c, f: f}, nil
	}
}

// frozenConn is a connection of a client that may be frozen.
type frozenConn struct {
	net.Conn
	f *freeze
}

func (c frozenConn) Read(b []byte) (int, error) {
	c.f.wait()
	n, err := c.Conn.Read(b)
	c.f.wait() // a reply that came while frozen is read at the thaw
	return n, err
}

func (c frozenConn) Write(b []byte) (int, error) {
	c.f.wait()
	return c.Conn.Write(b)
}
