package relay

// A Filter reads a relayed connection as frames of the protocol it
// carries, so that a fault can act on one request or one answer rather
// than on chunks of bytes: drop a frame, or cut the connection at the
// moment a given frame arrives. The relay knows no protocol; the package
// of the backend whose clients it relays writes the Filter.

// Way is one direction of a relayed connection.
type Way int

// The two ways.
const (
	// Tx is what the client sends the target.
	Tx Way = iota
	// Rx is what the target sends the client.
	Rx
)

func (w Way) String() string {
	if w == Tx {
		return "tx"
	}
	return "rx"
}

// Verdict is what becomes of one frame.
type Verdict int

// Verdicts.
const (
	// Pass relays the frame.
	Pass Verdict = iota
	// Drop loses the frame; the connection carries on.
	Drop
	// Cut loses the frame and closes the connection, both sides, at once:
	// nothing queued behind the frame reaches either end.
	Cut
)

// Filter reads one relayed connection, both ways. Frame is called from
// the two ways' goroutines at once, so a Filter that keeps state across
// the ways guards it.
type Filter interface {
	// Split is the length of the frame that starts buf (its header
	// included): 0 when buf holds only part of it. An error says the
	// bytes are not the protocol's; that way is then relayed as it comes,
	// unread.
	Split(w Way, buf []byte) (int, error)
	// Frame says what becomes of one whole frame (buf of Split's length).
	// It must not keep frame: the relay reuses its memory.
	Frame(w Way, frame []byte) Verdict
}

// MaxFrame is the longest frame a filtered way holds while it waits for
// the rest of it; a longer one turns the way to unread bytes.
const MaxFrame = 64 << 20

// SetFilter reads every connection accepted from now on through a Filter
// of its own, made by newFilter (nil: none). A connection accepted before
// is not read: its frames' boundaries are not known.
func (r *Relay) SetFilter(newFilter func() Filter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.newFilter = newFilter
}

// framer is one way of one connection read through a Filter.
type framer struct {
	f       Filter
	w       Way
	pending []byte // a frame's start, waiting for its rest
	raw     bool   // no longer read: relayed as it comes
}

// newFramer is the reader of way w through f, nil when f is nil.
func newFramer(f Filter, w Way) *framer {
	if f == nil {
		return nil
	}
	return &framer{f: f, w: w}
}

// feed takes the next chunk of the way and returns what to relay of it
// (whole frames that pass; a frame's start is held until its rest comes)
// and whether to cut the connection after writing that.
func (fr *framer) feed(chunk []byte) (out []byte, cut bool) {
	if fr == nil || fr.raw {
		return chunk, false
	}
	fr.pending = append(fr.pending, chunk...)
	start := 0
	defer func() { fr.pending = fr.pending[:copy(fr.pending, fr.pending[start:])] }()
	for start < len(fr.pending) {
		rest := fr.pending[start:]
		n, err := fr.f.Split(fr.w, rest)
		if err != nil || n < 0 || n > MaxFrame || n == 0 && len(rest) > MaxFrame {
			fr.raw = true
			out = append(out, rest...)
			start = len(fr.pending)
			return out, false
		}
		if n == 0 || n > len(rest) {
			return out, false
		}
		frame := rest[:n]
		switch fr.f.Frame(fr.w, frame) {
		case Pass:
			out = append(out, frame...)
		case Cut:
			start = len(fr.pending)
			return out, true
		}
		start += n
	}
	return out, false
}

// lost tells the framer that a chunk of its way was lost (a blackhole):
// the frames' boundaries are gone, so it reads no more.
func (fr *framer) lost() {
	if fr != nil {
		fr.raw, fr.pending = true, nil
	}
}
