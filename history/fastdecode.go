package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Why a hand-written decoder: encoding/json decodes a history line into
// wireEvent by reflection, which makes reading a big history cost seconds
// per million lines. Nearly every line is one that Write produced: one flat
// object, lower-case keys from Event's tags, integers, strings without
// escapes. fastDecode parses exactly that shape without reflection.
//
// Why it falls back: encoding/json defines what a line means, and its rules
// for the rare cases (escapes, invalid UTF-8, case-insensitive or duplicate
// keys, nulls, unknown keys, type errors and their messages) are not worth
// copying. So fastDecode accepts a line only when it is sure the result is
// what encoding/json would give; on anything else it says no and the line
// takes decodeEventSlow. FuzzDecodeEquivalence holds the two together.

// Which fields a line set; only the required ones are checked, the bits of
// the optional ones catch duplicate keys in fastDecode.
const (
	hasTime uint16 = 1 << iota
	hasProcess
	hasType
	hasF
	hasLock
	hasToken
	hasValue
	hasError
	hasKey
	hasLease
	hasRevision
)

// parsedEvent is one decoded line before validation: the event, plus which
// of the required fields were present (a zero time is not a missing one).
type parsedEvent struct {
	ev  Event
	has uint16
	// typeName and fName are the type and f a line gave when they name no
	// Type or Function (the slow path keeps them for finish's message).
	typeName, fName string
}

// finish validates p against the contract and stores it in e. Both decode
// paths end here so their error messages cannot drift apart. e is left
// untouched on error.
func (p *parsedEvent) finish(e *Event) error {
	switch {
	case p.has&hasTime == 0:
		return errors.New(`missing "time"`)
	case p.has&hasProcess == 0:
		return errors.New(`missing "process"`)
	case p.has&hasType == 0:
		return errors.New(`missing "type"`)
	case p.has&hasF == 0 || p.ev.F == 0 && p.fName == "":
		return errors.New(`missing "f"`)
	case p.ev.Type == 0:
		return fmt.Errorf("type %q is not one of %s", p.typeName, validTypes)
	case p.ev.F == 0:
		return fmt.Errorf("f %q is not one of %s", p.fName, validFs)
	}
	if p.ev.Time < 0 {
		return fmt.Errorf("negative time %d", p.ev.Time)
	}
	if p.ev.Process < NemesisProcess {
		return fmt.Errorf("process %d: must be ≥0, or -1 for the nemesis", p.ev.Process)
	}
	if bytes.Equal(p.ev.Value, []byte("null")) {
		p.ev.Value = nil
	}
	*e = p.ev
	return nil
}

// decodeEventSlow decodes one line with encoding/json: the reference
// behaviour, used for every line fastDecode declines.
func decodeEventSlow(b []byte, e *Event) error {
	var w wireEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return jsonError(err)
	}
	p := parsedEvent{ev: Event{Lock: w.Lock, Token: w.Token, Revision: w.Revision, Value: w.Value,
		Error: w.Error, Key: w.Key, Lease: w.Lease}}
	if w.Time != nil {
		p.has |= hasTime
		p.ev.Time = *w.Time
	}
	if w.Process != nil {
		p.has |= hasProcess
		p.ev.Process = *w.Process
	}
	if w.Type != nil {
		p.has |= hasType
		p.ev.Type, _ = typeNamed([]byte(*w.Type))
		p.typeName = *w.Type
	}
	if w.F != nil {
		p.has |= hasF
		p.ev.F, _ = functionNamed([]byte(*w.F))
		p.fName = *w.F
	}
	return p.finish(e)
}

// fieldWants says, per field of an event, what a valid value is: the
// message of a value of the wrong JSON kind, instead of encoding/json's,
// which names Go types (wireEvent.time of type int64).
var fieldWants = map[string]string{
	"time":     "an integer ≥ 0 (nanoseconds since the run's start)",
	"process":  "an integer from -1 to 2147483647 (the client id, -1 for the nemesis)",
	"type":     "a string, one of " + validTypes,
	"f":        "a string, one of " + validFs,
	"lock":     "a string (the lock's name)",
	"token":    "an integer (the fencing token)",
	"revision": "an integer (a store revision)",
	"error":    "a string",
	"key":      "a string",
	"lease":    "a string",
}

// jsonError turns encoding/json's error for a line into one that names
// the field and what is valid, without Go type names.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("not a JSON event: %v", err)
	}
	if want, ok := fieldWants[te.Field]; ok {
		return fmt.Errorf("%q must be %s, got %s", te.Field, want, te.Value)
	}
	return fmt.Errorf("not a JSON event: want an object with time, process, type and f, got %s", te.Value)
}

// span is b[start:end] of a string field whose Go string is not yet made.
type span struct{ start, end int }

// Indexes of the string fields that share one allocation in fastDecode.
const (
	strLock = iota
	strError
	strKey
	strLease
	nStr
)

// decoder is what one reader keeps from line to line so that decoding
// allocates less: the last lock name (a history names few, and each line
// would otherwise make its own copy) and an arena the values are cut
// from. A nil *decoder keeps nothing.
type decoder struct {
	lock  string
	arena []byte
}

// arenaBlock is the size of a decoder's value arena; a value longer than
// arenaMax gets its own allocation.
const (
	arenaBlock = 64 << 10
	arenaMax   = 1 << 10
)

// decode decodes and validates one line, as decodeEvent does.
func (d *decoder) decode(b []byte, e *Event) error {
	var p parsedEvent
	if d.fastDecode(b, &p) {
		return p.finish(e)
	}
	return decodeEventSlow(b, e)
}

// value is a copy of v that does not alias b, as json.RawMessage makes;
// a decoder cuts it from its arena (capped, so that an append to one
// value cannot write over the next).
func (d *decoder) value(v []byte) json.RawMessage {
	if d == nil || len(v) > arenaMax {
		return append(json.RawMessage(nil), v...)
	}
	if cap(d.arena)-len(d.arena) < len(v) {
		d.arena = make([]byte, 0, arenaBlock)
	}
	at := len(d.arena)
	d.arena = append(d.arena, v...)
	return d.arena[at:len(d.arena):len(d.arena)]
}

// fastDecode is a nil decoder's fastDecode: nothing kept between lines.
func fastDecode(b []byte, p *parsedEvent) bool {
	var d *decoder
	return d.fastDecode(b, p)
}

// fastDecode parses a line of the shape Write produces into p. It reports
// false, leaving p in an unspecified state, for any line it is not sure to
// decode exactly as encoding/json would: the caller must then decode the
// line with decodeEventSlow. It never panics and does not keep or modify b.
//
// It is one function of ~150 lines on purpose: it is the hot loop of
// reading a history (one call per line), and its key switch reads best as
// one piece beside the encoder it mirrors (Write).
func (d *decoder) fastDecode(b []byte, p *parsedEvent) bool {
	var spans [nStr]span
	var strs uint8 // bit i set: spans[i] holds a string to make
	var raw span   // the value's bytes, if any and not null
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		// The key: exactly one of Event's json names, no escapes.
		if i >= len(b) || b[i] != '"' {
			return false
		}
		j := i + 1
		for j < len(b) && b[j] != '"' && b[j] != '\\' {
			j++
		}
		if j >= len(b) || b[j] != '"' {
			return false
		}
		key := b[i+1 : j]
		i = skipSpace(b, j+1)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)

		var bit uint16
		var ok bool
		switch string(key) {
		case "time":
			bit = hasTime
			p.ev.Time, i, ok = parseInt(b, i)
		case "process":
			bit = hasProcess
			var n int64
			n, i, ok = parseInt(b, i)
			p.ev.Process = int32(n)
			ok = ok && int64(p.ev.Process) == n // fits int32: else encoding/json decides (and refuses it)
		case "token":
			bit = hasToken
			p.ev.Token, i, ok = parseInt(b, i)
		case "revision":
			bit = hasRevision
			p.ev.Revision, i, ok = parseInt(b, i)
		case "type":
			bit = hasType
			// An unknown type or f is not ok: the slow path names it in
			// its message.
			var sp span
			if i, ok = stringField(b, i, &sp); ok {
				p.ev.Type, ok = typeNamed(b[sp.start:sp.end])
			}
		case "f":
			bit = hasF
			var sp span
			if i, ok = stringField(b, i, &sp); ok {
				p.ev.F, ok = functionNamed(b[sp.start:sp.end])
			}
		case "lock":
			bit = hasLock
			i, ok = stringField(b, i, &spans[strLock])
			if sp := spans[strLock]; d != nil && string(b[sp.start:sp.end]) == d.lock {
				p.ev.Lock = d.lock
			} else {
				strs |= 1 << strLock
			}
		case "error":
			bit = hasError
			i, ok = stringField(b, i, &spans[strError])
			strs |= 1 << strError
		case "key":
			bit = hasKey
			i, ok = stringField(b, i, &spans[strKey])
			strs |= 1 << strKey
		case "lease":
			bit = hasLease
			i, ok = stringField(b, i, &spans[strLease])
			strs |= 1 << strLease
		case "value":
			bit = hasValue
			start := i
			i, ok = skipValue(b, i)
			if ok && string(b[start:i]) != "null" {
				raw = span{start, i}
			}
		default:
			return false // unknown, or a case-insensitive match: encoding/json decides
		}
		if !ok || p.has&bit != 0 {
			return false // bad value, or a duplicate key
		}
		p.has |= bit

		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		if b[i] == '}' {
			if skipSpace(b, i+1) != len(b) {
				return false
			}
			break
		}
		if b[i] != ',' {
			return false
		}
		i = skipSpace(b, i+1)
	}

	// The line is good: make its strings, all in one allocation.
	if strs != 0 {
		n := 0
		for k := range spans {
			if strs&(1<<k) != 0 {
				n += spans[k].end - spans[k].start
			}
		}
		var sb strings.Builder
		sb.Grow(n)
		for k := range spans {
			if strs&(1<<k) != 0 {
				sb.Write(b[spans[k].start:spans[k].end])
			}
		}
		all := sb.String()
		at := 0
		for k := range spans {
			if strs&(1<<k) == 0 {
				continue
			}
			s := all[at : at+spans[k].end-spans[k].start]
			at += len(s)
			switch k {
			case strLock:
				p.ev.Lock = s
				if d != nil {
					d.lock = s
				}
			case strError:
				p.ev.Error = s
			case strKey:
				p.ev.Key = s
			case strLease:
				p.ev.Lease = s
			}
		}
	}
	if raw.end > raw.start {
		// A copy, as json.RawMessage makes: b is the reader's buffer.
		p.ev.Value = d.value(b[raw.start:raw.end])
	}
	return true
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// parseInt parses the JSON number at b[i:] as encoding/json does into an
// int64, returning the index after it. ok is false for anything but a
// well-formed integer that fits (fractions, exponents, leading zeros,
// overflow, not a number at all).
func parseInt(b []byte, i int) (n int64, next int, ok bool) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	var u uint64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		u = u*10 + uint64(b[i]-'0')
		i++
	}
	digits := i - start
	switch {
	case digits == 0, digits > 19: // 19 digits cannot overflow uint64
		return 0, i, false
	case digits > 1 && b[start] == '0':
		return 0, i, false // leading zero: not JSON
	case i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E'):
		return 0, i, false // a float: encoding/json refuses it for an int
	}
	if neg {
		if u > 1<<63 {
			return 0, i, false
		}
		return int64(-u), i, true
	}
	if u > 1<<63-1 {
		return 0, i, false
	}
	return int64(u), i, true
}

// stringField scans the JSON string at b[i:] into sp (its contents, without
// quotes) and returns the index after it. ok is false for a string whose Go
// value is not its bytes as they stand: one with an escape, or with invalid
// UTF-8 (which encoding/json replaces by U+FFFD); and for a control
// character, which JSON forbids.
func stringField(b []byte, i int, sp *span) (next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i++
	start := i
	ascii := true
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			if !ascii && !utf8.Valid(b[start:i]) {
				return i, false
			}
			*sp = span{start, i}
			return i + 1, true
		case c == '\\' || c < 0x20:
			return i, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return i, false
}

// skipValue returns the index after the JSON value at b[i:], whatever its
// kind, for "value" (json.RawMessage keeps its bytes verbatim). ok is false
// unless the value is certainly well-formed JSON.
func skipValue(b []byte, i int) (next int, ok bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		start := i
		escaped := false
		for i++; i < len(b); i++ {
			switch c := b[i]; {
			case c == '"':
				if escaped && !json.Valid(b[start:i+1]) {
					return i, false
				}
				return i + 1, true
			case c == '\\':
				escaped = true
				i++ // skip the escaped byte; json.Valid checks the escape
			case c < 0x20:
				return i, false
			}
		}
		return i, false
	case c == '-' || c >= '0' && c <= '9':
		return skipNumber(b, i)
	case c == '{' || c == '[':
		start := i
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					if !json.Valid(b[start : i+1]) {
						return i, false
					}
					return i + 1, true
				}
			case '"':
				// Skip the string so that brackets in it do not count.
				for i++; i < len(b) && b[i] != '"'; i++ {
					if b[i] == '\\' {
						i++
					}
				}
			}
		}
		return i, false
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
				return i + len(lit), true
			}
		}
		return i, false
	}
}

// skipNumber returns the index after the JSON number at b[i:]; ok is false
// if it is not one by the JSON grammar.
func skipNumber(b []byte, i int) (next int, ok bool) {
	digits := func() int {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i - start
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return i, false
		}
	}
	return i, true
}

// validTypes and validFs list the names for messages.
var (
	validTypes = joinNames(typeNames[:])
	validFs    = joinNames(functionNames[:])
)

// typeNamed is the Type that b spells, if any (0 if none): a switch, which
// costs less than a map's hash on every line.
func typeNamed(b []byte) (Type, bool) {
	switch string(b) {
	case "invoke":
		return Invoke, true
	case "ok":
		return OK, true
	case "fail":
		return Fail, true
	case "info":
		return Info, true
	}
	return 0, false
}

// functionNamed is the Function that b spells, if any (0 if none).
func functionNamed(b []byte) (Function, bool) {
	switch string(b) {
	case "acquire":
		return FAcquire, true
	case "release":
		return FRelease, true
	case "read":
		return FRead, true
	case "write":
		return FWrite, true
	case "crash":
		return FCrash, true
	case "pause":
		return FPause, true
	case "resume":
		return FResume, true
	case "lease-lost":
		return FLeaseLost, true
	case "wakeup":
		return FWakeup, true
	case "fault":
		return FFault, true
	case "rpcs":
		return FRPCs, true
	case "key-deleted":
		return FKeyDeleted, true
	case "clock":
		return FClock, true
	case "lease-op":
		return FLeaseOp, true
	case "key-op":
		return FKeyOp, true
	}
	return 0, false
}
