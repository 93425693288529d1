// Package relay is a TCP relay in front of one address, on 127.0.0.1
// only, through which one client's traffic to one member passes so that a
// fault can hold it (a frozen process, a cut network), delay it or drop
// it, each way on its own. It knows no protocol, so it serves every
// backend's clients alike.
//
// It does what etcd's test proxy (go.etcd.io/etcd/pkg/v3/proxy) does, the
// way it does it: each way, a chunk read (up to 48 KiB) is held while that
// way is paused, dropped while it is blackholed, and held for the way's
// latency before it is written, so what queues behind a delayed chunk
// waits for it too, as on a congested link. Unlike that proxy it listens
// on loopback only and closes its connections when it closes. A
// connection may also be read as frames of its protocol, through a Filter
// the protocol's package writes (filter.go), so that a fault acts on one
// request or answer.
package relay

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// bufferSize is the largest chunk read and relayed at once (pkg/proxy's).
const bufferSize = 48 * 1024

// Relay relays each connection made to it to its target.
type Relay struct {
	to     string
	ln     net.Listener
	tx, rx way // tx: client → target; rx: target → client
	done   chan struct{}

	mu        sync.Mutex
	closed    bool
	conns     map[net.Conn]struct{}
	newFilter func() Filter  // SetFilter's, for connections accepted from then on
	wg        sync.WaitGroup // the accept loop and the copies
	once      sync.Once
}

// way is one direction's faults.
type way struct {
	mu        sync.Mutex
	resume    chan struct{} // closed while not paused
	latency   time.Duration
	blackhole bool
}

// init makes w flow.
func (w *way) init() {
	w.resume = make(chan struct{})
	close(w.resume)
}

// Start starts a relay to to ("host:port") on a free port of 127.0.0.1.
func Start(to string) (*Relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("relay to %s: listen on loopback: %w", to, err)
	}
	r := &Relay{to: to, ln: ln, done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	r.tx.init()
	r.rx.init()
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

// From is the address clients dial, as "tcp://127.0.0.1:port".
func (r *Relay) From() string { return "tcp://" + r.ln.Addr().String() }

// Addr is the address clients dial, as "127.0.0.1:port".
func (r *Relay) Addr() string { return r.ln.Addr().String() }

// accept relays every connection made to the relay to its target; a
// target that refuses (a member that is down) closes the client's
// connection, as the member's own refusal would.
func (r *Relay) accept() {
	defer r.wg.Done()
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return // closed
		}
		out, err := net.Dial("tcp", r.to)
		if err != nil {
			in.Close()
			continue
		}
		f, ok := r.track(in, out)
		if !ok {
			return
		}
		r.wg.Add(2)
		go r.copy(out, in, &r.tx, newFramer(f, Tx))
		go r.copy(in, out, &r.rx, newFramer(f, Rx))
	}
}

// track records a relayed connection's two ends so that Close can end
// them, and returns the Filter it is read through (nil: none); after
// Close it closes them and says false.
func (r *Relay) track(a, b net.Conn) (Filter, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		a.Close()
		b.Close()
		return nil, false
	}
	r.conns[a], r.conns[b] = struct{}{}, struct{}{}
	if r.newFilter == nil {
		return nil, true
	}
	return r.newFilter(), true
}

// copy relays src to dst chunk by chunk under w's faults, through fr
// when the connection is read as frames (SetFilter); when either side
// ends, or a frame cuts the connection, both close.
func (r *Relay) copy(dst, src net.Conn, w *way, fr *framer) {
	defer func() {
		dst.Close()
		src.Close()
		r.mu.Lock()
		delete(r.conns, dst)
		delete(r.conns, src)
		r.mu.Unlock()
		r.wg.Done()
	}()
	buf := make([]byte, bufferSize)
	for {
		n, err := src.Read(buf)
		if n == 0 || err != nil && !errors.Is(err, io.EOF) {
			return
		}
		w.mu.Lock()
		resume := w.resume
		w.mu.Unlock()
		select { // pause first, then drop or delay
		case <-resume:
		case <-r.done:
			return
		}
		w.mu.Lock()
		drop, lat := w.blackhole, w.latency
		w.mu.Unlock()
		if drop {
			fr.lost()
			continue
		}
		if lat > 0 {
			t := time.NewTimer(lat)
			select {
			case <-t.C:
			case <-r.done:
				t.Stop()
				return
			}
		}
		out, cut := fr.feed(buf[:n])
		if _, err := dst.Write(out); err != nil || cut {
			return
		}
	}
}

// pause holds what passes w until unpause.
func (w *way) pause() {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.resume:
		w.resume = make(chan struct{})
	default: // already paused
	}
}

func (w *way) unpause() {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.resume:
	default:
		close(w.resume)
	}
}

func (w *way) delay(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.latency = d
}

func (w *way) drop(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.blackhole = on
}

// PauseTx holds what the client sends until UnpauseTx; PauseRx what it
// receives. The bytes are held, not lost, as a cut network or a frozen
// process delays them inside a TCP connection.
func (r *Relay) PauseTx()   { r.tx.pause() }
func (r *Relay) UnpauseTx() { r.tx.unpause() }
func (r *Relay) PauseRx()   { r.rx.pause() }
func (r *Relay) UnpauseRx() { r.rx.unpause() }

// DelayTx holds each chunk the client sends for d before relaying it (0
// ends it); DelayRx does the same to what it receives.
func (r *Relay) DelayTx(d time.Duration) { r.tx.delay(d) }
func (r *Relay) DelayRx(d time.Duration) { r.rx.delay(d) }

// BlackholeTx drops what the client sends; BlackholeRx what it receives.
func (r *Relay) BlackholeTx() { r.tx.drop(true) }
func (r *Relay) BlackholeRx() { r.rx.drop(true) }

// Close stops accepting, ends every relayed connection (paused or not)
// and waits for the copies to return. A second Close does nothing.
func (r *Relay) Close() error {
	var err error
	r.once.Do(func() {
		err = r.ln.Close()
		close(r.done)
		r.mu.Lock()
		r.closed = true
		for c := range r.conns {
			c.Close()
		}
		r.mu.Unlock()
		r.wg.Wait()
	})
	return err
}
