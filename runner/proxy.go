package runner

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"go.etcd.io/etcd/pkg/v3/proxy"
	"go.uber.org/zap"
)

// loopbackProxy is etcd's fault proxy (go.etcd.io/etcd/pkg/v3/proxy) with
// a loopback-only front.
//
// Why the front: proxy.NewServer listens on fmt.Sprintf(":%d", port) —
// every interface — whatever host its From names, and it cannot be
// handed a listener of ours. So the proxy listens on a Unix socket
// instead (for a From without a port it listens on From's host as given),
// and lockbench's own listener on 127.0.0.1 relays each connection to
// it. The faults (PauseTx, DelayRx, BlackholeTx, ...) are still the
// proxy's, between that socket and the member; the front only copies
// bytes, and the kernel buffers what the paused proxy does not read, as
// it did before.
//
// The socket is in Linux's abstract namespace: no file to leave behind,
// even when a second signal exits at once. Elsewhere it is a file in the
// temporary folder, removed when the proxy's listener closes.
type loopbackProxy struct {
	proxy.Server // the fault proxy, listening on inner
	inner        string
	ln           net.Listener // 127.0.0.1:port: what the client dials

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{} // both ends of every relayed connection
	wg     sync.WaitGroup        // the accept loop and the copies
	once   sync.Once
}

// proxySeq numbers the proxies' sockets within the process.
var proxySeq atomic.Int64

// innerSocket is a fresh Unix socket address for a fault proxy to listen
// on. It has no ':' so that pkg/proxy does not take a part of it for a
// port.
func innerSocket() string {
	name := fmt.Sprintf("lockbench-proxy-%d-%d", os.Getpid(), proxySeq.Add(1))
	if runtime.GOOS == "linux" {
		return "@" + name
	}
	return filepath.Join(os.TempDir(), name+".sock")
}

// startLoopbackProxy starts a fault proxy in front of the member at host
// ("127.0.0.1:port"), reached at 127.0.0.1 only.
func startLoopbackProxy(host string) (*loopbackProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on loopback: %w", err)
	}
	p := &loopbackProxy{inner: innerSocket(), ln: ln, conns: map[net.Conn]struct{}{}}
	p.Server = proxy.NewServer(proxy.ServerConfig{Logger: zap.NewNop(),
		From: url.URL{Scheme: "unix", Host: p.inner}, To: url.URL{Scheme: "tcp", Host: host}})
	select {
	case <-p.Server.Ready():
	case err := <-p.Server.Error():
		p.Server.Close()
		ln.Close()
		return nil, fmt.Errorf("fault proxy on %s: %w", p.inner, err)
	}
	p.wg.Add(1)
	go p.accept()
	go p.drain()
	return p, nil
}

// drain reads the fault proxy's errors until it closes. pkg/proxy sends
// every error it meets (each failed dial of a member that is down, each
// broken copy) on a channel of 16 and blocks until it is read: undrained,
// the 17th stops the proxy accepting for good, as a member kill's
// reconnects soon give it. lockbench has no use for them — a client sees
// its connection fail — so they are dropped.
func (p *loopbackProxy) drain() {
	for {
		select {
		case <-p.Server.Error():
		case <-p.Server.Done():
			return
		}
	}
}

// From is the loopback address clients dial ("tcp://127.0.0.1:port"), not
// the inner socket.
func (p *loopbackProxy) From() string { return "tcp://" + p.ln.Addr().String() }

// accept relays every connection to the front to the fault proxy.
func (p *loopbackProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		in, err := net.Dial("unix", p.inner)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, in) {
			return
		}
		p.wg.Add(2)
		go p.pipe(in, c)
		go p.pipe(c, in)
	}
}

// track records a relayed connection's two ends so that Close can end
// them; after Close it closes them and says false.
func (p *loopbackProxy) track(a, b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		a.Close()
		b.Close()
		return false
	}
	p.conns[a], p.conns[b] = struct{}{}, struct{}{}
	return true
}

// pipe copies src to dst; when either side ends, both close, as the
// fault proxy does with its own two ends.
func (p *loopbackProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// Close stops the front, ends every relayed connection (so the fault
// proxy's copies end too, paused or not) and closes the fault proxy. It
// returns the fault proxy's error; a second Close returns nil.
func (p *loopbackProxy) Close() error {
	var err error
	p.once.Do(func() {
		p.ln.Close()
		p.mu.Lock()
		p.closed = true
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
		err = p.Server.Close()
	})
	return err
}
