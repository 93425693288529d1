package zkcluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// The peer relays without ZooKeeper: what the partition and the
// election call-back rest on.

// listen is a loopback listener whose accepted connections arrive on the
// returned channel.
func listen(t *testing.T) (net.Listener, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 8)
	done := make(chan struct{})
	var all []net.Conn
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			all = append(all, c)
			conns <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range all {
			c.Close()
		}
	})
	return ln, conns
}

// relayTo starts a peer relay to target under g.
func relayTo(t *testing.T, target string, g *gate, head func(io.Reader) ([]byte, error)) *peerRelay {
	t.Helper()
	r, err := newPeerRelay(g)
	if err != nil {
		t.Fatal(err)
	}
	r.target, r.head = target, head
	r.start()
	t.Cleanup(r.close)
	return r
}

func dialRelay(t *testing.T, r *peerRelay) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr(r.port()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readWithin reads exactly n bytes from c within d, or returns what came.
func readWithin(c net.Conn, n int, d time.Duration) []byte {
	c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	b := make([]byte, n)
	got, _ := io.ReadFull(c, b)
	return b[:got]
}

// accepted is the next connection the target accepted within d, or nil.
func accepted(conns <-chan net.Conn, d time.Duration) net.Conn {
	select {
	case c := <-conns:
		return c
	case <-time.After(d):
		return nil
	}
}

// electionHead is QuorumCnxManager's first message: version, id,
// address.
func electionHead(version, sid int64, address string) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(version))
	b = binary.BigEndian.AppendUint64(b, uint64(sid))
	b = binary.BigEndian.AppendUint32(b, uint32(len(address)))
	return append(b, address...)
}

// TestElectionAddressRewritten: the election relay sends the dialler's
// first message on with the address of the link back in place of the
// dialler's real election port (both protocol versions), and what
// follows unchanged; an id-only first message passes as it is.
func TestElectionAddressRewritten(t *testing.T) {
	ln, conns := listen(t)
	const back = "127.0.0.1:7777"
	r := relayTo(t, ln.Addr().String(), newGate(), rewriteElectionAddr(back))
	for _, version := range []int64{electionProtoV1, electionProtoV2} {
		c := dialRelay(t, r)
		c.Write(append(electionHead(version, 3, "127.0.0.1:5555"), "notification"...))
		in := accepted(conns, 5*time.Second)
		if in == nil {
			t.Fatal("the relay did not connect to its target")
		}
		want := append(electionHead(version, 3, back), "notification"...)
		if got := readWithin(in, len(want), 5*time.Second); !bytes.Equal(got, want) {
			t.Errorf("version %d: target got %q, want %q", version, got, want)
		}
	}
	c := dialRelay(t, r)
	old := binary.BigEndian.AppendUint64(nil, 2) // the id alone
	c.Write(append(old, "rest"...))
	in := accepted(conns, 5*time.Second)
	if in == nil {
		t.Fatal("the relay did not connect to its target")
	}
	if got := readWithin(in, len(old)+4, 5*time.Second); !bytes.Equal(got, append(old, "rest"...)) {
		t.Errorf("id-only first message: target got %q", got)
	}
	// A version QuorumCnxManager would refuse is not forwarded.
	c = dialRelay(t, r)
	c.Write(electionHead(-7, 3, "127.0.0.1:5555"))
	if in := accepted(conns, 300*time.Millisecond); in != nil {
		t.Error("a first message of an unknown version was forwarded")
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the relay kept a connection whose first message it could not read")
	}
}

// TestCutHoldsAndHealReleases: while a link is cut nothing passes either
// way and a new connection is not forwarded; healed, what waited goes
// through, in order, and the new connection reaches the target.
func TestCutHoldsAndHealReleases(t *testing.T) {
	ln, conns := listen(t)
	g := newGate()
	r := relayTo(t, ln.Addr().String(), g, nil)
	a := dialRelay(t, r)
	a.Write([]byte("1"))
	ta := accepted(conns, 5*time.Second)
	if ta == nil || string(readWithin(ta, 1, 5*time.Second)) != "1" {
		t.Fatal("an open link did not pass the first byte")
	}
	g.set(false)
	a.Write([]byte("2"))
	ta.Write([]byte("x"))
	b := dialRelay(t, r)
	b.Write([]byte("3"))
	const quiet = 300 * time.Millisecond
	if got := readWithin(ta, 1, quiet); len(got) != 0 {
		t.Errorf("the target got %q through a cut link", got)
	}
	if got := readWithin(a, 1, quiet); len(got) != 0 {
		t.Errorf("the dialler got %q through a cut link", got)
	}
	if c := accepted(conns, quiet); c != nil {
		t.Error("a connection opened while the link was cut reached the target")
	}
	g.set(true)
	if got := readWithin(ta, 1, 5*time.Second); string(got) != "2" {
		t.Errorf("after heal the target got %q, want what waited (2)", got)
	}
	if got := readWithin(a, 1, 5*time.Second); string(got) != "x" {
		t.Errorf("after heal the dialler got %q, want what waited (x)", got)
	}
	tb := accepted(conns, 5*time.Second)
	if tb == nil || string(readWithin(tb, 1, 5*time.Second)) != "3" {
		t.Error("the connection opened while cut did not reach the target after heal")
	}
	// A side's end does not cross a cut either: the target learns of it
	// once the link is open again.
	g.set(false)
	a.Close()
	ta.SetReadDeadline(time.Now().Add(quiet))
	if _, err := ta.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the dialler's close crossed a cut link: %v", err)
	}
	g.set(true)
	ta.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := ta.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("after heal the target's read: %v, want EOF", err)
	}
}

// TestRelayWaitsForItsTarget: a connection to a target that does not
// listen yet (a leader binds its quorum port only once elected) is
// forwarded once it does, within dialPatience, instead of being hung up
// on.
func TestRelayWaitsForItsTarget(t *testing.T) {
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	r := relayTo(t, addr(ports[0]), newGate(), nil)
	c := dialRelay(t, r)
	c.Write([]byte("hello"))
	time.Sleep(dialPatience / 4)
	ln, err := net.Listen("tcp", addr(ports[0]))
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	defer ln.Close()
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(dialPatience))
	in, err := ln.Accept()
	if err != nil {
		t.Fatalf("the relay gave up on a target that listened %s late: %v", dialPatience/4, err)
	}
	defer in.Close()
	if got := readWithin(in, 5, 5*time.Second); string(got) != "hello" {
		t.Errorf("target got %q", got)
	}
}
