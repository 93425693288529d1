package relay

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

// frameServer answers each length-prefixed frame it reads (4-byte
// big-endian length, then the payload) with the same frame, and records
// every payload it got, so that a test can tell a request that reached
// it from one that did not.
type frameServer struct {
	addr string
	mu   sync.Mutex
	got  []string
}

func startFrameServer(t *testing.T) *frameServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &frameServer{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				for {
					p, err := readFrame(c)
					if err != nil {
						return
					}
					s.mu.Lock()
					s.got = append(s.got, string(p))
					s.mu.Unlock()
					if _, err := c.Write(frame(string(p))); err != nil {
						return
					}
				}
			}()
		}
	}()
	return s
}

func (s *frameServer) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

func frame(p string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(p)))
	return append(b, p...)
}

func readFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	p := make([]byte, binary.BigEndian.Uint32(n[:]))
	_, err := io.ReadFull(r, p)
	return p, err
}

// lengthFilter reads the framing above; on the answer way it drops a
// frame whose payload is "drop" and cuts at one that is "cut"; a length
// over 1000 is not its protocol.
type lengthFilter struct {
	mu   sync.Mutex
	seen map[Way][]string
}

func (f *lengthFilter) Split(_ Way, buf []byte) (int, error) {
	if len(buf) < 4 {
		return 0, nil
	}
	n := int(binary.BigEndian.Uint32(buf))
	if n > 1000 {
		return 0, errors.New("not a frame")
	}
	if len(buf) < 4+n {
		return 0, nil
	}
	return 4 + n, nil
}

func (f *lengthFilter) Frame(w Way, fr []byte) Verdict {
	p := string(fr[4:])
	f.mu.Lock()
	f.seen[w] = append(f.seen[w], p)
	f.mu.Unlock()
	switch {
	case w == Rx && p == "drop":
		return Drop
	case w == Rx && p == "cut":
		return Cut
	}
	return Pass
}

func (f *lengthFilter) frames(w Way) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen[w]...)
}

// filtered starts a relay to s whose connections are read through one
// lengthFilter, and dials it.
func filtered(t *testing.T, s *frameServer) (*Relay, *lengthFilter, net.Conn) {
	t.Helper()
	r, err := Start(s.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	f := &lengthFilter{seen: map[Way][]string{}}
	r.SetFilter(func() Filter { return f })
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return r, f, c
}

// expectFrame reads one frame from c and fails unless its payload is want.
func expectFrame(t *testing.T, c net.Conn, want string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	p, err := readFrame(c)
	if err != nil || string(p) != want {
		t.Fatalf("read %q, %v; want %q", p, err, want)
	}
}

// TestFilterFrames: a filtered connection is relayed frame by frame: a
// frame written a byte at a time arrives whole, two frames in one write
// are seen apart; the answer the filter drops never arrives while the
// connection carries on; at the answer it cuts, the request has reached
// the server, and the client's connection ends with nothing more.
func TestFilterFrames(t *testing.T) {
	s := startFrameServer(t)
	_, f, c := filtered(t, s)

	for _, b := range frame("slow") {
		if _, err := c.Write([]byte{b}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	expectFrame(t, c, "slow")
	if _, err := c.Write(append(frame("one"), frame("two")...)); err != nil {
		t.Fatal(err)
	}
	expectFrame(t, c, "one")
	expectFrame(t, c, "two")

	if _, err := c.Write(append(frame("drop"), frame("after")...)); err != nil {
		t.Fatal(err)
	}
	expectFrame(t, c, "after") // "drop"'s answer was lost, not the next
	if _, err := c.Write(frame("cut")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var ne net.Error
	if p, err := readFrame(c); err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("after the cut: read %q, %v; want the connection closed", p, err)
	}
	if got, want := s.received(), []string{"slow", "one", "two", "drop", "after", "cut"}; !slices.Equal(got, want) {
		t.Errorf("the server got %q, want %q (the cut request reached it)", got, want)
	}
	if got := f.frames(Tx); !slices.Equal(got, []string{"slow", "one", "two", "drop", "after", "cut"}) {
		t.Errorf("the filter saw requests %q", got)
	}
	if got := f.frames(Rx); !slices.Equal(got, []string{"slow", "one", "two", "drop", "after", "cut"}) {
		t.Errorf("the filter saw answers %q", got)
	}
}

// TestFilterNotItsProtocol: bytes the filter's Split refuses are relayed
// as they come, that way unread from then on (a "cut" answer then cuts
// nothing); a connection accepted before SetFilter is not read at all.
func TestFilterNotItsProtocol(t *testing.T) {
	s := startFrameServer(t)
	r, f, c := filtered(t, s)
	// A length over the filter's 1000: the answer way turns unread, and
	// the server, which reads any length, answers a frame with that
	// header once its payload is all there.
	big := string(bytes.Repeat([]byte{'x'}, 1500))
	if _, err := c.Write(frame(big)); err != nil {
		t.Fatal(err)
	}
	expectFrame(t, c, big)
	if _, err := c.Write(frame("cut")); err != nil {
		t.Fatal(err)
	}
	expectFrame(t, c, "cut")
	if got := f.frames(Rx); len(got) != 0 {
		t.Errorf("the filter read answers %q after refusing the way", got)
	}

	r.SetFilter(nil)
	c2, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Write(frame("cut")); err != nil {
		t.Fatal(err)
	}
	expectFrame(t, c2, "cut")
}

// TestFramerFeed: the framer holds a frame's start until its rest
// comes, relays what passes, and once a chunk of its way is lost (a
// blackhole) relays the rest unread.
func TestFramerFeed(t *testing.T) {
	f := &lengthFilter{seen: map[Way][]string{}}
	fr := newFramer(f, Rx)
	whole := append(frame("a"), frame("drop")...)
	steps := []struct {
		in, out []byte
		cut     bool
	}{
		{whole[:3], nil, false},         // part of a length
		{whole[3:7], frame("a"), false}, // "a" whole, "drop" begun
		{whole[7:], nil, false},         // "drop" dropped
		{append(frame("b"), frame("cut")...), frame("b"), true},
	}
	for i, st := range steps {
		out, cut := fr.feed(st.in)
		if !bytes.Equal(out, st.out) || cut != st.cut {
			t.Fatalf("step %d: %q, cut %v; want %q, cut %v", i, out, cut, st.out, st.cut)
		}
	}
	fr = newFramer(f, Rx)
	if out, _ := fr.feed(frame("cu")[:4]); len(out) != 0 {
		t.Fatalf("a length alone relayed %q", out)
	}
	fr.lost()
	if out, cut := fr.feed(frame("cut")); !bytes.Equal(out, frame("cut")) || cut {
		t.Fatalf("after a loss: %q, cut %v; want it relayed unread", out, cut)
	}
	if out, _ := newFramer(nil, Tx).feed([]byte("x")); string(out) != "x" {
		t.Fatalf("no filter: %q", out)
	}
}
