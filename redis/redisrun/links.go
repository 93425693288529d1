package redisrun

import (
	"context"
	"errors"
	"net"
	"sync"
)

// errLinkCut is a dial's error while the clients' links to an address
// are cut.
var errLinkCut = errors.New("link cut by the nemesis")

// links is one client's side of the network: each of its connections to
// a Redis server is dialed through it, so that the nemesis can cut that
// client off from some servers (closing what is open, refusing new dials)
// while the servers themselves, and the other clients, run on: a
// partition between the client and those servers.
type links struct {
	mu    sync.Mutex
	cut   map[string]bool
	conns map[net.Conn]string
	d     net.Dialer
}

func newLinks() *links { return &links{cut: map[string]bool{}, conns: map[net.Conn]string{}} }

// dial is a go-redis Options.Dialer.
func (l *links) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	l.mu.Lock()
	cut := l.cut[addr]
	l.mu.Unlock()
	if cut {
		return nil, errLinkCut
	}
	c, err := l.d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut[addr] { // cut while dialing
		c.Close()
		return nil, errLinkCut
	}
	tc := &trackedConn{Conn: c, l: l}
	l.conns[tc] = addr
	return tc, nil
}

// set cuts (on) or heals the client's links to addrs.
func (l *links) set(on bool, addrs ...string) {
	l.mu.Lock()
	for _, a := range addrs {
		l.cut[a] = on
	}
	var closing []net.Conn
	for c, a := range l.conns {
		if on && l.cut[a] {
			closing = append(closing, c)
		}
	}
	l.mu.Unlock()
	for _, c := range closing {
		c.Close() // outside mu: Close forgets itself under it
	}
}

// trackedConn forgets itself when closed.
type trackedConn struct {
	net.Conn
	l    *links
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
