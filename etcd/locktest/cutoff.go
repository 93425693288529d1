package locktest

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/locks"
)

// cancelCutOff: B waits behind A; then B is cut off from every member (its
// traffic held, as a partition does: nothing lost, nothing delivered) and
// its Lock is cancelled. The Lock must return within the cancel check's
// bound (check.Options.CancelBound for clients without a per-request
// deadline), not when the network comes back: etcd's concurrency.Mutex
// cleans up a cancelled wait with the client's context (etcd #18082) and
// waits for the members as long as they are away. Then A, cut off the same
// way, releases with a context cancelled 100 ms in: its Unlock must
// return within the bound too.
func (s *suite) cancelCutOff() {
	t := s.t
	if !s.env.CutOff {
		t.Skip("Env.CutOff not set")
	}
	bound := check.Options{RequestTimeout: -1}.WithDefaults().CancelBound
	a, ra := s.cutLocker()
	b, rb := s.cutLocker()
	ga := s.mustLock(a)
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		g, err := b.Lock(ctx)
		if err == nil {
			err = errors.New("granted " + g.Key)
		}
		done <- err
	}()
	time.Sleep(500 * time.Millisecond) // B is queued behind A
	rb.hold(true)
	time.Sleep(100 * time.Millisecond)
	cancel()
	took, err := returnWithin(done, bound+5*time.Second)
	rb.hold(false)
	switch {
	case err == nil:
		t.Fatalf("B's Lock, cancelled while cut off, did not return within %s", bound+5*time.Second)
	case took > bound:
		t.Errorf("B's Lock, cancelled while cut off from every member, returned %s after the cancel (%v): past the %s a cancelled call may take", took.Round(time.Millisecond), err, bound)
	}
	ra.hold(true)
	uctx, ucancel := context.WithTimeout(s.ctx, 100*time.Millisecond)
	defer ucancel()
	udone := make(chan error, 1)
	start := time.Now()
	go func() { udone <- a.Unlock(uctx, ga) }()
	_, uerr := returnWithin(udone, bound+5*time.Second)
	took = time.Since(start) - 100*time.Millisecond
	ra.hold(false)
	if uerr == nil && took > bound {
		t.Errorf("A's Unlock, its context ended while cut off, returned %s after its end: past the %s a cancelled call may take", took.Round(time.Millisecond), bound)
	}
}

// returnWithin waits up to d for a call's error; err is nil when it did not
// return (a nil error is turned into a non-nil one by the caller's send).
func returnWithin(done <-chan error, d time.Duration) (time.Duration, error) {
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		if err == nil {
			err = errors.New("returned nil")
		}
		return time.Since(start), err
	case <-t.C:
		return d, nil
	}
}

// cutLocker makes a Locker whose client reaches the members through relays
// that can hold its traffic.
func (s *suite) cutLocker() (locks.Locker, *relays) {
	s.t.Helper()
	rs := &relays{}
	s.mu.Lock()
	s.closers = append(s.closers, rs.close)
	s.mu.Unlock()
	var eps []string
	for _, ep := range s.env.Endpoints {
		r, err := startRelay(ep)
		if err != nil {
			s.t.Fatalf("relay to %s: %v", ep, err)
		}
		rs.rs = append(rs.rs, r)
		eps = append(eps, r.ln.Addr().String())
	}
	return s.lockerOn(s.dialTo(eps, s.wire)), rs
}

// relays are one client's relays, one per member.
type relays struct{ rs []*relay }

func (rs *relays) hold(on bool) {
	for _, r := range rs.rs {
		r.hold(on)
	}
}

func (rs *relays) close() {
	for _, r := range rs.rs {
		r.close()
	}
}

// relay copies TCP connections to one member; hold stops the copying both
// ways (bytes wait in the sockets) until released.
type relay struct {
	ln net.Listener
	to string
	mu sync.Mutex
	// gate is closed while traffic flows; a new open one holds it.
	gate  chan struct{}
	conns []net.Conn
	wg    sync.WaitGroup
}

func startRelay(endpoint string) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	to := endpoint
	if _, rest, ok := strings.Cut(endpoint, "://"); ok {
		to = rest
	}
	r := &relay{ln: ln, to: to, gate: make(chan struct{})}
	close(r.gate)
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		m, err := net.Dial("tcp", r.to)
		if err != nil {
			c.Close()
			continue
		}
		r.mu.Lock()
		r.conns = append(r.conns, c, m)
		r.mu.Unlock()
		r.wg.Add(2)
		go r.pipe(m, c)
		go r.pipe(c, m)
	}
}

// pipe copies src to dst, waiting at the gate before each write.
func (r *relay) pipe(dst, src net.Conn) {
	defer r.wg.Done()
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			r.mu.Lock()
			gate := r.gate
			r.mu.Unlock()
			<-gate
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				src.Close()
			}
			return
		}
	}
}

func (r *relay) hold(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.gate: // flowing
		if on {
			r.gate = make(chan struct{})
		}
	default:
		if !on {
			close(r.gate)
		}
	}
}

// close stops the relay and its connections and waits for its goroutines.
func (r *relay) close() {
	r.hold(false)
	r.ln.Close()
	r.mu.Lock()
	for _, c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
