package zkwire

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// hexBytes reads a literal packet written as hex with spaces and
// comments (from "#" to the line's end) between its fields.
func hexBytes(t testing.TB, s string) []byte {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		line, _, _ = strings.Cut(line, "#")
		b.WriteString(strings.Join(strings.Fields(line), ""))
	}
	out, err := hex.DecodeString(b.String())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Literal packets, as go-zookeeper v1.0.4 encodes them.
const (
	// create("/a", no data, world:anyone all, ephemeral|sequential), xid 7
	createA = `00000031 # length 49
		00000007 00000001 # xid 7, create
		00000002 2f61 # path "/a"
		00000000 # data: empty
		00000001 0000001f 00000005 776f726c64 00000006 616e796f6e65 # one ACL: all, world, anyone
		00000003 # flags: ephemeral|sequential`
	// getChildren("/a", no watch), xid 8
	childrenA = `0000000f 00000008 00000008 00000002 2f61 00`
	// multi(check "/a" version 0, create2 "/a/b" no data no ACL flags 0), xid 9
	multiCreate = `00000041
		00000009 0000000e # xid 9, multi
		0000000d 00 ffffffff 00000002 2f61 00000000 # check /a 0
		0000000f 00 ffffffff 00000004 2f612f62 ffffffff 00000000 00000000 # create2 /a/b
		ffffffff 01 ffffffff # end`
	// multi(check "/c" 3, setData "/c" "x" -1, delete "/d" -1), xid 10
	multiNoCreate = `0000004f
		0000000a 0000000e
		0000000d 00 ffffffff 00000002 2f63 00000003
		00000005 00 ffffffff 00000002 2f63 00000001 78 ffffffff
		00000002 00 ffffffff 00000002 2f64 ffffffff
		ffffffff 01 ffffffff`
	// multi(getData "/a"): not an operation a multi carries, xid 11
	multiUnknown = `00000018 0000000b 0000000e
		00000004 00 ffffffff 00000002 2f61 00`
	// reply to xid 7: zxid 0x100000005, no error, then the created path
	replyOK = `00000016 00000007 0000000100000005 00000000 00000002 2f61`
	// reply to xid 7: error -110 (node exists)
	replyExists = `00000010 00000007 0000000100000006 ffffff92`
	// a watch event (xid -1)
	watchEvent = `00000010 ffffffff 0000000100000007 00000000`
)

// TestSplit: a packet's length is its length field plus 4; part of one
// is 0, more waits for nothing; a negative or oversized length is not
// ZooKeeper's framing.
func TestSplit(t *testing.T) {
	create := hexBytes(t, createA)
	for _, c := range []struct {
		name string
		buf  []byte
		want int
		err  bool
	}{
		{"empty", nil, 0, false},
		{"three bytes of a length", create[:3], 0, false},
		{"a length alone", create[:4], 0, false},
		{"all but one byte", create[:len(create)-1], 0, false},
		{"whole", create, 53, false},
		{"whole and the next's start", append(append([]byte{}, create...), 0, 0), 53, false},
		{"empty packet", []byte{0, 0, 0, 0}, 4, false},
		{"negative length", []byte{0xff, 0xff, 0xff, 0xfe}, 0, true},
		{"over MaxPacket", []byte{0x01, 0, 0, 0}, 0, true},
		{"a four-letter word", []byte("srvr"), 0, true},
	} {
		n, err := Split(c.buf)
		if n != c.want || (err != nil) != c.err {
			t.Errorf("%s: %d, %v; want %d, error %v", c.name, n, err, c.want, c.err)
		}
	}
}

// TestRequests: each literal request's header, and whether it creates.
func TestRequests(t *testing.T) {
	for _, c := range []struct {
		name    string
		packet  string
		xid, op int32
		creates bool
		err     string
	}{
		{"create", createA, 7, OpCreate, true, ""},
		{"getChildren", childrenA, 8, 8, false, ""},
		{"multi with a create2", multiCreate, 9, OpMulti, true, ""},
		{"multi of check, setData, delete", multiNoCreate, 10, OpMulti, false, ""},
		{"multi with an operation it cannot skip", multiUnknown, 11, OpMulti, false, "operation type 4"},
	} {
		r, err := ParseRequest(hexBytes(t, c.packet))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if r.Xid != c.xid || r.Op != c.op {
			t.Errorf("%s: xid %d op %d, want %d %d", c.name, r.Xid, r.Op, c.xid, c.op)
		}
		creates, err := r.Creates()
		if creates != c.creates || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: creates %v, %v; want %v, error %q", c.name, creates, err, c.creates, c.err)
		}
	}
	for _, op := range []int32{OpCreate2, OpCreateContainer, OpCreateTTL} {
		if ok, err := (Request{Op: op}).Creates(); !ok || err != nil {
			t.Errorf("op %d: creates %v, %v", op, ok, err)
		}
	}
}

// TestReplies: each literal reply's header.
func TestReplies(t *testing.T) {
	for _, c := range []struct {
		name   string
		packet string
		want   Reply
	}{
		{"created", replyOK, Reply{Xid: 7, Zxid: 0x100000005}},
		{"node exists", replyExists, Reply{Xid: 7, Zxid: 0x100000006, Err: -110}},
		{"watch event", watchEvent, Reply{Xid: -1, Zxid: 0x100000007}},
	} {
		r, err := ParseReply(hexBytes(t, c.packet))
		if err != nil || r != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, r, err, c.want)
		}
	}
}

// TestMalformed: a packet shorter than its header, or than a field it
// declares, or whose length field disagrees with its size, is an error,
// never a guess.
func TestMalformed(t *testing.T) {
	multi := hexBytes(t, multiCreate)
	cut := append([]byte{}, multi[:20]...)
	cut[3] = 16 // a whole packet, ending inside the check's path
	for _, c := range []struct {
		name  string
		parse func() error
		short bool
	}{
		{"request of 4 bytes", func() error { _, err := ParseRequest([]byte{0, 0, 0, 4, 0, 0, 0, 1}); return err }, true},
		{"reply of 8 bytes", func() error { _, err := ParseReply(hexBytes(t, childrenA)[:12]); return err }, true},
		{"packet longer than declared", func() error { _, err := ParseReply(append(hexBytes(t, replyExists), 0)); return err }, false},
		{"packet shorter than declared", func() error { _, err := ParseRequest(hexBytes(t, createA)[:20]); return err }, true},
		{"multi cut in a path", func() error {
			r, err := ParseRequest(cut)
			if err != nil {
				return err
			}
			_, err = r.Creates()
			return err
		}, true},
		{"string of length -2", func() error {
			_, err := (Request{Op: OpMulti, Body: hexBytes(t, "0000000d 00 ffffffff fffffffe")}).Creates()
			return err
		}, false},
	} {
		err := c.parse()
		if err == nil || errors.Is(err, ErrShort) != c.short {
			t.Errorf("%s: %v (want an error; short: %v)", c.name, err, c.short)
		}
	}
}

// FuzzPacket: no input makes the reader panic or read past what it was
// given; Split's length is within the buffer, and a whole packet parses
// to a header whose fields are the packet's first bytes.
func FuzzPacket(f *testing.F) {
	for _, p := range []string{createA, childrenA, multiCreate, multiNoCreate, multiUnknown, replyOK, replyExists, watchEvent} {
		f.Add(hexBytes(f, p))
	}
	f.Add([]byte("srvr"))
	f.Fuzz(func(t *testing.T, buf []byte) {
		n, err := Split(buf)
		if err != nil || n == 0 {
			return
		}
		if n < 4 || n > len(buf) {
			t.Fatalf("Split: %d of %d bytes", n, len(buf))
		}
		packet := buf[:n]
		if r, err := ParseRequest(packet); err == nil {
			if len(r.Body) != n-12 {
				t.Fatalf("request body %d bytes of a %d-byte packet", len(r.Body), n)
			}
			r.Creates()
		} else if n >= 12 {
			t.Fatalf("a whole packet of %d bytes: %v", n, err)
		}
		if _, err := ParseReply(packet); err != nil && n >= 20 {
			t.Fatalf("a whole packet of %d bytes: %v", n, err)
		}
	})
}
