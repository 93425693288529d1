// Package zkwire reads ZooKeeper's client protocol as a client's relays
// carry it (package relay's Filter), so that a fault can act on one
// request and its reply: lose-create-reply lets a create reach the
// ensemble and loses its reply with the connection (ZOOKEEPER-1262).
//
// The framing: every packet, each way, is a 4-byte big-endian length and
// that many bytes. A connection's first packet each way is the session's
// handshake (ConnectRequest, ConnectResponse), which has no header; every
// later request starts with its header (xid int32, type int32), every
// reply with its own (xid int32, zxid int64, err int32), and a reply
// carries its request's xid. Numbers are big-endian; a string or a
// buffer is an int32 length (-1: null) and its bytes; a vector an int32
// count and its elements (ZooKeeper's jute encoding).
package zkwire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MaxPacket is the longest packet this reader takes as ZooKeeper's: ten
// times the server's default jute.maxbuffer (0xfffff), so that nothing
// a ZooKeeper client sends is refused, while bytes of another protocol
// (whose first four read as a length in the gigabytes) are.
const MaxPacket = 10 << 20

// The request types this reader tells apart (ZooDefs.OpCode).
const (
	OpCreate          int32 = 1
	OpDelete          int32 = 2
	OpSetData         int32 = 5
	OpPing            int32 = 11
	OpCheck           int32 = 13
	OpMulti           int32 = 14
	OpCreate2         int32 = 15
	OpCreateContainer int32 = 19
	OpCreateTTL       int32 = 21
)

// Split is the length of the packet that starts buf, its length field
// included: 0 while buf holds only part of it; an error when its length
// is negative or over MaxPacket (not ZooKeeper's framing).
func Split(buf []byte) (int, error) {
	if len(buf) < 4 {
		return 0, nil
	}
	n := int32(binary.BigEndian.Uint32(buf))
	if n < 0 || n > MaxPacket {
		return 0, fmt.Errorf("zookeeper packet length %d: not within 0..%d", n, MaxPacket)
	}
	if len(buf) < 4+int(n) {
		return 0, nil
	}
	return 4 + int(n), nil
}

// Request is a request packet's header and the rest of it.
type Request struct {
	Xid, Op int32
	Body    []byte
}

// Reply is a reply packet's header.
type Reply struct {
	Xid  int32
	Zxid int64
	// Err is ZooKeeper's error code: 0 when the request succeeded.
	Err int32
}

// ErrShort is wrapped by every error of a packet that ends before what
// it declares.
var ErrShort = errors.New("zookeeper packet ends early")

// ParseRequest reads a request packet (not a connection's first), its
// length field included.
func ParseRequest(packet []byte) (Request, error) {
	p, err := payload(packet)
	if err != nil {
		return Request{}, err
	}
	if len(p) < 8 {
		return Request{}, fmt.Errorf("request header: %d bytes, want 8: %w", len(p), ErrShort)
	}
	return Request{Xid: int32(binary.BigEndian.Uint32(p)), Op: int32(binary.BigEndian.Uint32(p[4:])), Body: p[8:]}, nil
}

// ParseReply reads a reply packet's header (not a connection's first
// packet), its length field included.
func ParseReply(packet []byte) (Reply, error) {
	p, err := payload(packet)
	if err != nil {
		return Reply{}, err
	}
	if len(p) < 16 {
		return Reply{}, fmt.Errorf("reply header: %d bytes, want 16: %w", len(p), ErrShort)
	}
	return Reply{Xid: int32(binary.BigEndian.Uint32(p)), Zxid: int64(binary.BigEndian.Uint64(p[4:])),
		Err: int32(binary.BigEndian.Uint32(p[12:]))}, nil
}

// payload is a whole packet's bytes after its length field.
func payload(packet []byte) ([]byte, error) {
	n, err := Split(packet)
	switch {
	case err != nil:
		return nil, err
	case n == 0:
		return nil, fmt.Errorf("packet of %d bytes: %w", len(packet), ErrShort)
	case n != len(packet):
		return nil, fmt.Errorf("packet of %d bytes declares %d", len(packet), n)
	}
	return packet[4:], nil
}

// isCreate says whether op is one of the creates.
func isCreate(op int32) bool {
	return op == OpCreate || op == OpCreate2 || op == OpCreateContainer || op == OpCreateTTL
}

// Creates says whether r makes a node: a create of any kind, or a multi
// with a create among its operations. A multi is read operation by
// operation up to its first create; one with an operation this reader
// does not know before any create is an error.
func (r Request) Creates() (bool, error) {
	if isCreate(r.Op) {
		return true, nil
	}
	if r.Op != OpMulti {
		return false, nil
	}
	d := decoder{b: r.Body}
	for {
		// Each operation: a header (type, done, err), then its request.
		op, done := d.int32(), d.bool()
		d.int32()
		if d.err != nil {
			return false, fmt.Errorf("multi: %w", d.err)
		}
		switch {
		case done:
			return false, nil
		case isCreate(op):
			return true, nil
		case op == OpDelete || op == OpCheck:
			d.str()
			d.int32()
		case op == OpSetData:
			d.str()
			d.str()
			d.int32()
		default:
			return false, fmt.Errorf("multi: operation type %d: not one this reader skips (delete, setData, check)", op)
		}
	}
}

// decoder reads jute's encoding; its first error sticks and every later
// read returns zero.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = fmt.Errorf("field of %d bytes, %d left: %w", n, len(d.b), ErrShort)
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) int32() int32 {
	b := d.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (d *decoder) bool() bool {
	b := d.take(1)
	return b != nil && b[0] != 0
}

// str skips a string or a buffer: its length, then its bytes (-1: null).
func (d *decoder) str() {
	switch n := d.int32(); {
	case n > 0:
		d.take(int(n))
	case n < -1 && d.err == nil:
		d.err = fmt.Errorf("string or buffer of length %d", n)
	}
}
