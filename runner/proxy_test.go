package runner

import (
	"net"
	"strings"
	"testing"
	"time"
)

// TestProxyOutlivesItsErrors: etcd's fault proxy sends every error it
// meets (a failed dial of a member that is down, a broken copy) on a
// channel of 16 and stops accepting until someone reads it. Run after run,
// a member kill gives a client's proxy more failed dials than that; the
// proxy must still connect once the member is back.
func TestProxyOutlivesItsErrors(t *testing.T) {
	hold, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	member := hold.Addr().String()
	hold.Close() // the member is down: every dial through the proxy fails
	p, err := startLoopbackProxy(member)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	front := strings.TrimPrefix(p.From(), "tcp://")
	for range 40 {
		c, err := net.Dial("tcp", front)
		if err != nil {
			t.Fatal(err)
		}
		// pkg/proxy leaves a connection whose dial failed open; ours goes.
		c.Close()
	}
	// Give the proxy time to fail those dials before the member is back
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
		t.Fatal("after 40 failed dials, a new connection through the proxy never reached the member: its accept loop is stuck on an unread error")
	}
}
