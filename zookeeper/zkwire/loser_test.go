package zkwire

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/relay"
)

// handshake stands for a connection's first packet each way (a
// ConnectRequest, a ConnectResponse): any bytes, no header.
const handshake = `00000008 0000000100000007`

// TestLoserVerdicts: packet by packet on one connection, the filter
// passes the handshakes, every request and every reply but the reply to
// an armed create that succeeded, which cuts the connection; a failed
// create's reply passes and spends nothing; armed for one, the second
// create's reply passes; armed for every one, each is lost; disarmed,
// none, and Disarm counts the losses.
func TestLoserVerdicts(t *testing.T) {
	type step struct {
		w      relay.Way
		packet string
		want   relay.Verdict
	}
	sent := []step{{relay.Tx, handshake, relay.Pass}, {relay.Rx, handshake, relay.Pass}}
	for _, c := range []struct {
		name  string
		arm   int
		steps []step
		lost  int
	}{
		{"not armed", 0, []step{{relay.Tx, createA, relay.Pass}, {relay.Rx, replyOK, relay.Pass}}, 0},
		{"armed: the create's reply cuts", 1, []step{
			{relay.Tx, childrenA, relay.Pass}, {relay.Tx, createA, relay.Pass},
			{relay.Rx, watchEvent, relay.Pass}, {relay.Rx, replyOK, relay.Cut}}, 1},
		{"a failed create spends nothing", 1, []step{
			{relay.Tx, createA, relay.Pass}, {relay.Rx, replyExists, relay.Pass}}, 0},
		{"a reply to no create sent passes", 1, []step{{relay.Rx, replyOK, relay.Pass}}, 0},
		{"a multi's create", 1, []step{
			{relay.Tx, multiCreate, relay.Pass},
			{relay.Rx, "00000010 00000009 0000000100000008 00000000", relay.Cut}}, 1},
		{"a multi without one", 1, []step{
			{relay.Tx, multiNoCreate, relay.Pass},
			{relay.Rx, "00000010 0000000a 0000000100000008 00000000", relay.Pass}}, 0},
	} {
		l := NewCreateReplyLoser()
		l.Arm(c.arm)
		f := l.Filter()
		for i, st := range append(append([]step{}, sent...), c.steps...) {
			if got := f.Frame(st.w, hexBytes(t, st.packet)); got != st.want {
				t.Errorf("%s: step %d (%s): %v, want %v", c.name, i, st.w, got, st.want)
			}
		}
		if got := l.Disarm(); got != c.lost {
			t.Errorf("%s: lost %d, want %d", c.name, got, c.lost)
		}
	}

	// Armed for one, across connections: the first connection's create
	// spends it, the second's passes; armed for every one, both cut.
	for _, c := range []struct {
		arm    int
		second relay.Verdict
		lost   int
	}{{1, relay.Pass, 1}, {-1, relay.Cut, 2}} {
		l := NewCreateReplyLoser()
		l.Arm(c.arm)
		want := []relay.Verdict{relay.Cut, c.second}
		for i := range 2 {
			f := l.Filter()
			f.Frame(relay.Tx, hexBytes(t, handshake))
			f.Frame(relay.Rx, hexBytes(t, handshake))
			f.Frame(relay.Tx, hexBytes(t, createA))
			if got := f.Frame(relay.Rx, hexBytes(t, replyOK)); got != want[i] {
				t.Errorf("arm %d, connection %d: %v, want %v", c.arm, i, got, want[i])
			}
		}
		if got := l.Disarm(); got != c.lost {
			t.Errorf("arm %d: lost %d, want %d", c.arm, got, c.lost)
		}
		f := l.Filter()
		f.Frame(relay.Tx, hexBytes(t, handshake))
		f.Frame(relay.Rx, hexBytes(t, handshake))
		f.Frame(relay.Tx, hexBytes(t, createA))
		if got := f.Frame(relay.Rx, hexBytes(t, replyOK)); got != relay.Pass {
			t.Errorf("arm %d, disarmed: %v, want pass", c.arm, got)
		}
	}
}

// zkLike is a server that speaks ZooKeeper's framing: it answers the
// handshake with a handshake and every request with a reply header
// carrying its xid (no error), and counts the creates it applied.
type zkLike struct {
	addr    string
	mu      sync.Mutex
	creates int
}

func startZKLike(t *testing.T) *zkLike {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &zkLike{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for zxid := int64(1); ; zxid++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				s.serve(c, zxid<<32)
			}()
		}
	}()
	return s
}

func (s *zkLike) serve(c net.Conn, zxid int64) {
	if _, err := readPacket(c); err != nil {
		return
	}
	if _, err := c.Write([]byte{0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 7}); err != nil { // handshake
		return
	}
	for {
		p, err := readPacket(c)
		if err != nil {
			return
		}
		r, err := ParseRequest(p)
		if err != nil {
			return
		}
		if ok, _ := r.Creates(); ok {
			s.mu.Lock()
			s.creates++
			s.mu.Unlock()
		}
		zxid++
		reply := binary.BigEndian.AppendUint32(nil, 16)
		reply = binary.BigEndian.AppendUint32(reply, uint32(r.Xid))
		reply = binary.BigEndian.AppendUint64(reply, uint64(zxid))
		reply = binary.BigEndian.AppendUint32(reply, 0)
		if _, err := c.Write(reply); err != nil {
			return
		}
	}
}

func (s *zkLike) applied() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.creates
}

func readPacket(r io.Reader) ([]byte, error) {
	p := make([]byte, 4)
	if _, err := io.ReadFull(r, p); err != nil {
		return nil, err
	}
	n, _ := Split(append(p, make([]byte, binary.BigEndian.Uint32(p))...))
	if n == 0 {
		return nil, io.ErrUnexpectedEOF
	}
	p = append(p, make([]byte, n-4)...)
	_, err := io.ReadFull(r, p[4:])
	return p, err
}

// TestLoserThroughARelay: through a relay reading with an armed loser, a
// read is answered, the create reaches the server (applied), and instead
// of its reply the client's connection ends; a second connection's
// create is answered (armed for one).
func TestLoserThroughARelay(t *testing.T) {
	s := startZKLike(t)
	r, err := relay.Start(s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l := NewCreateReplyLoser()
	r.SetFilter(l.Filter)
	l.Arm(1)
	dial := func() net.Conn {
		c, err := net.Dial("tcp", r.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(hexBytes(t, handshake)); err != nil {
			t.Fatal(err)
		}
		if _, err := readPacket(c); err != nil {
			t.Fatalf("handshake: %v", err)
		}
		return c
	}
	c := dial()
	defer c.Close()
	if _, err := c.Write(hexBytes(t, childrenA)); err != nil {
		t.Fatal(err)
	}
	if p, err := readPacket(c); err != nil {
		t.Fatalf("getChildren's reply: %v", err)
	} else if rep, _ := ParseReply(p); rep.Xid != 8 {
		t.Fatalf("reply to xid %d, want 8", rep.Xid)
	}
	if _, err := c.Write(hexBytes(t, createA)); err != nil {
		t.Fatal(err)
	}
	if p, err := readPacket(c); err == nil {
		t.Fatalf("the create's reply arrived: %x", p)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the connection was not cut: the read timed out")
	}
	if got := s.applied(); got != 1 {
		t.Fatalf("the server applied %d creates, want 1", got)
	}
	c2 := dial()
	defer c2.Close()
	if _, err := c2.Write(hexBytes(t, createA)); err != nil {
		t.Fatal(err)
	}
	if _, err := readPacket(c2); err != nil {
		t.Fatalf("the second create's reply: %v", err)
	}
	if lost := l.Disarm(); lost != 1 {
		t.Fatalf("lost %d, want 1", lost)
	}
}
