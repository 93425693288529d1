package relay

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// echo is a line echo server; it returns its address.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends line through c and waits up to within for its echo;
// ok is false when none came in time.
func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, line string, within time.Duration) (time.Duration, bool) {
	t.Helper()
	start := time.Now()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(start.Add(within))
	got, err := r.ReadString('\n')
	if err != nil {
		return 0, false
	}
	if strings.TrimSpace(got) != line {
		t.Fatalf("echo %q, want %q", got, line)
	}
	return time.Since(start), true
}

// TestRelayFaults: bytes flow; paused they are held, not lost, and arrive
// on unpause; delayed they arrive late; blackholed they are lost; Close
// ends a paused connection and listens no more.
func TestRelayFaults(t *testing.T) {
	r, err := Start(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Addr(), "127.0.0.1:") || r.From() != "tcp://"+r.Addr() {
		t.Fatalf("listens on %s (%s), want loopback", r.Addr(), r.From())
	}
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	if _, ok := roundTrip(t, c, br, "plain", 5*time.Second); !ok {
		t.Fatal("no echo through the relay")
	}

	r.PauseRx()
	if _, ok := roundTrip(t, c, br, "held", 200*time.Millisecond); ok {
		t.Fatal("an answer came through a paused way")
	}
	r.UnpauseRx()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := br.ReadString('\n'); err != nil || got != "held\n" {
		t.Fatalf("after unpause: %q, %v; want the held answer", got, err)
	}

	r.DelayTx(150 * time.Millisecond)
	if d, ok := roundTrip(t, c, br, "late", 5*time.Second); !ok || d < 150*time.Millisecond {
		t.Errorf("delayed round trip %s (%v), want ≥150ms", d, ok)
	}
	r.DelayTx(0)
	if d, ok := roundTrip(t, c, br, "prompt", 5*time.Second); !ok || d >= 150*time.Millisecond {
		t.Errorf("undelayed round trip %s (%v)", d, ok)
	}

	r.BlackholeTx()
	if _, ok := roundTrip(t, c, br, "lost", 200*time.Millisecond); ok {
		t.Error("a blackholed request was answered")
	}

	r.PauseTx()
	closed := make(chan error, 1)
	go func() { closed <- r.Close() }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on a paused connection")
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadString('\n'); err == nil {
		t.Error("the connection lives on after Close")
	}
	if c2, err := net.Dial("tcp", r.Addr()); err == nil {
		c2.Close()
		t.Error("the relay still accepts after Close")
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestRelayTargetDown: a connection to a relay whose target refuses is
// closed, as the target's refusal would close it.
func TestRelayTargetDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r, err := Start(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Errorf("read through a relay to a dead target: %v, want the connection closed", err)
	}
}

// TestRelayOutlivesFailedDials: run after run, a member kill gives a
// client's relay dozens of failed dials (etcd's test proxy, which the
// runner used before, stopped accepting after 16 unread errors); the relay
// must still connect once the member is back.
func TestRelayOutlivesFailedDials(t *testing.T) {
	hold, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	member := hold.Addr().String()
	hold.Close() // the member is down: every dial through the proxy fails
	p, err := Start(member)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	front := p.Addr()
	for range 40 {
		c, err := net.Dial("tcp", front)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	// Give the relay time to fail those dials before the member is back
	// (a few microseconds each; this is no assertion on time).
	time.Sleep(time.Second)
	up, err := net.Listen("tcp", member) // the member is back
	if err != nil {
		t.Skipf("the member's port was taken meanwhile: %v", err)
	}
	defer up.Close()
	c, err := net.Dial("tcp", front)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	accepted := make(chan error, 1)
	go func() {
		m, err := up.Accept()
		if err == nil {
			m.Close()
		}
		accepted <- err
	}()
	select {
	case err := <-accepted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		up.Close()
		<-accepted
		t.Fatal("after 40 failed dials, a new connection through the relay never reached the member")
	}
}
