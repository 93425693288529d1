package history

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Intended is the Value of an open-loop acquire's invoke (docs/design.md
// §3): when the acquisition was meant to start, in the history's clock
// (nanoseconds since the run's start). The invoke's own time is when a
// free client called Lock; the gap between them is the wait for a free
// client, which an open-loop latency counts (coordinated omission: a
// latency measured from the call alone hides the queue in front of it).
type Intended struct {
	IntendedNS int64 `json:"intended"`
}

// intendedPrefix is how IntendedValue starts, for ParseIntended's fast path.
var intendedPrefix = []byte(`{"intended":`)

// IntendedValue encodes an intended start for an acquire invoke's Value.
func IntendedValue(ns int64) json.RawMessage {
	b := append([]byte(nil), intendedPrefix...)
	b = strconv.AppendInt(b, ns, 10)
	return append(b, '}')
}

// ParseIntended decodes an acquire invoke's intended start; ok is false
// when v is absent, is not an Intended, or is negative. Values that
// IntendedValue wrote take a fast path (a summary reads one per grant).
func ParseIntended(v json.RawMessage) (ns int64, ok bool) {
	if len(v) == 0 {
		return 0, false
	}
	if rest, found := bytes.CutPrefix(v, intendedPrefix); found && len(rest) > 1 && rest[len(rest)-1] == '}' {
		if digits := rest[:len(rest)-1]; plainDigits(digits) {
			if n, err := strconv.ParseInt(string(digits), 10, 64); err == nil {
				return n, true
			}
		}
	}
	var w struct {
		IntendedNS *int64 `json:"intended"`
	}
	if json.Unmarshal(v, &w) != nil || w.IntendedNS == nil || *w.IntendedNS < 0 {
		return 0, false
	}
	return *w.IntendedNS, true
}

// plainDigits reports whether b is a JSON integer ≥ 0 as IntendedValue
// writes it: digits, no sign, no leading zero.
func plainDigits(b []byte) bool {
	if len(b) == 0 || len(b) > 1 && b[0] == '0' {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
