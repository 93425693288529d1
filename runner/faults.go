package runner

import (
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/relay"
)

// startProxies puts one fault proxy in front of each member for this
// client alone, so that its network can be cut or slowed on its own.
func (c *client) startProxies() error {
	if err := c.makeLoser(); err != nil {
		return err
	}
	for _, ep := range c.r.cfg.Endpoints {
		p, _, err := StartProxy(ep)
		if err != nil {
			// The client is not the runner's yet (close would not reach
			// these): close the relays it has.
			for _, started := range c.conn.proxies {
				started.Close()
			}
			c.conn.proxies = nil
			return fmt.Errorf("client %d: %w", c.id, err)
		}
		switch {
		case c.conn.loser != nil:
			p.SetFilter(c.conn.loser.Filter)
		case c.conn.delayer != nil:
			p.SetFilter(c.conn.delayer.Filter)
		}
		c.conn.proxies = append(c.conn.proxies, p)
	}
	return nil
}

// StartProxy starts a fault relay (package relay) in front of endpoint, as
// the runner gives each client whose network a scenario cuts or slows,
// and returns it with the URL to dial through it, on 127.0.0.1 only. The
// bench's relay-cost figure uses it, so it measures this very path.
func StartProxy(endpoint string) (*relay.Relay, string, error) {
	to, err := url.Parse(endpoint)
	if err != nil {
		return nil, "", fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	p, err := relay.Start(to.Host)
	if err != nil {
		return nil, "", fmt.Errorf("proxy for %s: %w", endpoint, err)
	}
	return p, proxyURL(endpoint, p), nil
}

// proxyURL is the URL a client dials to reach endpoint through p. The
// relay forwards raw TCP, so a TLS client still talks TLS end to end
// through it: the endpoint's scheme is kept.
func proxyURL(endpoint string, p *relay.Relay) string {
	scheme := "http"
	if u, err := url.Parse(endpoint); err == nil && u.Scheme != "" {
		scheme = u.Scheme
	}
	return scheme + "://" + p.Addr()
}

// closeProxies closes proxies in the background, tracked by wg.
func closeProxies(wg *sync.WaitGroup, proxies []*relay.Relay) {
	for _, p := range proxies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Close()
		}()
	}
}

// needProxies refuses a network fault on a client without proxies: the
// scenario's NeedsProxies should have given it some.
func (c *client) needProxies(fault string) error {
	if len(c.conn.proxies) == 0 {
		return fmt.Errorf("client %d has no fault proxy (%s): invariant broken", c.id, fault)
	}
	return nil
}

// pause freezes the process: its worker stops at its next checkpoint and
// nothing it sends (keepalives included) gets through until it resumes.
func (c *client) pause() error {
	if err := c.needProxies("pause"); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.faults.paused != nil || c.faults.crashed {
		return fmt.Errorf("client %d is already paused or crashed", c.id)
	}
	c.faults.paused = make(chan struct{})
	c.faults.pauses++
	c.r.record(history.Event{Process: int32(c.id), Type: history.OK, F: history.FPause, Lock: c.lockName()})
	c.stall()
	// A Locker that is a process of its own (an adapter) freezes for real:
	// its own lease refresh stops too.
	if err := c.conn.lockers.processes(locks.Process.Stop); err != nil {
		return fmt.Errorf("client %d: stop its process: %w", c.id, err)
	}
	return nil
}

// pauseCount lets a holder tell whether it was frozen while it waited.
func (c *client) pauseCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.faults.pauses
}

// resume thaws a paused client: its traffic flows again (unless it is
// also isolated), then its worker carries on from its checkpoint.
func (c *client) resume() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.faults.paused == nil {
		c.stall() // crashed meanwhile: nothing to thaw
		return nil
	}
	close(c.faults.paused)
	c.faults.paused = nil
	var err error
	if cerr := c.conn.lockers.processes(locks.Process.Cont); cerr != nil {
		err = fmt.Errorf("client %d: continue its process: %w", c.id, cerr)
	}
	c.stall()
	c.r.record(history.Event{Process: int32(c.id), Type: history.OK, F: history.FResume, Lock: c.lockName()})
	return err
}

// isolate cuts (or restores) the client's network; its process runs on.
func (c *client) isolate(cut bool) error {
	if err := c.needProxies("isolate"); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults.isolated = cut
	c.stall()
	return nil
}

// stall makes the client's proxies hold its traffic while it is paused or
// isolated, and release it when it is neither. c.mu must be held.
//
// Why hold and not drop: a cut network or a frozen process delays bytes
// inside a TCP connection (the sender retransmits, the kernel buffers);
// it never loses some and delivers the rest. The proxy's Blackhole
// drops them, which desynchronises the two ends' HTTP/2 HPACK tables
// once a HEADERS frame is lost (any new gRPC call: the safe keepalive
// opens one per refresh): after the heal, the member closes the
// connection with COMPRESSION_ERROR (or refuses each stream with
// PROTOCOL_ERROR), and a request in flight ends with an unknown outcome —
// an artefact of the injection, not of the lock (docs/leases.md). Held
// bytes arrive when the fault ends, as after a real partition; a call
// whose deadline passed meanwhile arrives too, followed by its
// RST_STREAM.
//
// The proxy's Pause is not counted (a second Pause orphans the first's
// waiters), so the proxies are paused and unpaused only when the wanted
// state changes.
func (c *client) stall() {
	want := c.faults.paused != nil || c.faults.isolated
	if want == c.faults.stalled || c.faults.crashed {
		return
	}
	for _, p := range c.conn.proxies {
		if want {
			p.PauseTx()
			p.PauseRx()
		} else {
			p.UnpauseTx()
			p.UnpauseRx()
		}
	}
	c.faults.stalled = want
}

// delay adds d of latency to everything the client receives (the
// relay's Rx: the members' answers) and, when requests is set, to what it
// sends (Tx); 0 removes it. The relay delays each chunk it relays in turn,
// so what queues behind a delayed chunk waits for it too, as on a
// congested link.
func (c *client) delay(d time.Duration, requests bool) error {
	if err := c.needProxies("delay"); err != nil {
		return err
	}
	for _, p := range c.conn.proxies {
		p.DelayRx(d)
		if requests {
			p.DelayTx(d)
		}
	}
	return nil
}
