package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/lockbench/lockbench/internal/wholefile"
)

// Write encodes events as JSON Lines.
func Write(w io.Writer, events []Event) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	for i := range events {
		if err := enc.Encode(&events[i]); err != nil {
			return fmt.Errorf("encode event %d: %w", i, err)
		}
	}
	return bw.Flush()
}

// LineError names the line of a history that could not be read.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// ErrEmpty is returned for a history with no events.
var ErrEmpty = errors.New("history is empty")

// maxLine bounds one event's line; anything longer is not an event.
const maxLine = 1 << 20

// Read decodes a JSON Lines history, validating each event against the
// contract. Blank lines are skipped. Unknown fields are kept out of the
// result but allowed, so histories from other tools can carry extras.
func Read(r io.Reader) ([]Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	// Events are gathered in chunks and joined once at the end: growing one
	// slice by appends copies it over and over (most of the time of a
	// million-line read went there).
	var chunks [][]Event
	cur := make([]Event, 0, 1024)
	n, line := 0, 0
	var d decoder
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if len(cur) == cap(cur) {
			chunks = append(chunks, cur)
			cur = make([]Event, 0, min(2*cap(cur), 1<<16))
		}
		cur = cur[:len(cur)+1]
		if err := d.decode(b, &cur[len(cur)-1]); err != nil {
			return nil, &LineError{Line: line, Err: err}
		}
		n++
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &LineError{Line: line + 1, Err: fmt.Errorf("line longer than %d bytes", maxLine)}
		}
		return nil, err
	}
	if n == 0 {
		return nil, ErrEmpty
	}
	events := make([]Event, 0, n)
	for _, c := range append(chunks, cur) {
		events = append(events, c...)
	}
	return events, nil
}

// ReadFile reads a history from path, as Read would, on every core
// (readAt); a path that is not a regular file or is over
// wholefile.HistoryLimit is refused before it is read.
func ReadFile(path string) ([]Event, error) {
	f, err := wholefile.Open(path, "history", wholefile.HistoryLimit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	ev, err := readAt(f, st.Size(), blockSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ev, nil
}

// wireEvent mirrors Event with pointers so that missing required fields
// can be told apart from zero values.
type wireEvent struct {
	Time     *int64          `json:"time"`
	Process  *int32          `json:"process"`
	Type     *string         `json:"type"`
	F        *string         `json:"f"`
	Lock     string          `json:"lock"`
	Token    int64           `json:"token"`
	Revision int64           `json:"revision"`
	Value    json.RawMessage `json:"value"`
	Error    string          `json:"error"`
	Key      string          `json:"key"`
	Lease    string          `json:"lease"`
}

// decodeEvent decodes and validates one line of a history. Lines as Write
// makes them take fastDecode; any other line takes decodeEventSlow
// (encoding/json), which defines the result either way.
func decodeEvent(b []byte, e *Event) error {
	var p parsedEvent
	if fastDecode(b, &p) {
		return p.finish(e)
	}
	return decodeEventSlow(b, e)
}
