// Package respwire reads Redis's wire protocol (RESP2 and RESP3) frame
// by frame, as lockbench's client relays need it to act on one request
// and its reply (delay-acquire-replies): where one value ends (Split),
// what a request asks (Command), and whether it takes a lock's key
// (Acquires). It knows no client library and keeps no connection.
package respwire

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// MaxDepth bounds how deeply aggregates may nest in one value, so that a
// hostile or broken stream cannot make Split recurse without end.
const MaxDepth = 32

// maxLen bounds a bulk string's or an aggregate's declared length; Redis's
// own proto-max-bulk-len is 512 MB.
const maxLen = 512 << 20

// maxHeader bounds a length header (type byte, digits, CRLF).
const maxHeader = 24

// ErrNotRESP is wrapped by Split's error for bytes that are not a RESP
// value.
var ErrNotRESP = errors.New("not RESP")

// Split is the length of the RESP value that starts buf, 0 when buf
// holds only part of it; an error (wrapping ErrNotRESP) when buf does
// not start with one. Every RESP2 and RESP3 type is read; an inline
// command (a bare line, as redis-cli's telnet mode sends) is not.
func Split(buf []byte) (int, error) {
	return split(buf, 0)
}

func split(buf []byte, depth int) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	if depth > MaxDepth {
		return 0, fmt.Errorf("%w: aggregates nested deeper than %d", ErrNotRESP, MaxDepth)
	}
	end := bytes.Index(buf, []byte("\r\n"))
	if end < 0 {
		if len(buf) > maxHeader && strings.IndexByte("$!=*~>%|", buf[0]) >= 0 {
			return 0, fmt.Errorf("%w: a length header longer than %d bytes", ErrNotRESP, maxHeader)
		}
		return 0, nil
	}
	head := end + 2
	switch buf[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		// A line: simple string, error, integer, null, double, boolean,
		// big number.
		return head, nil
	case '$', '!', '=':
		// Bulk string, bulk error, verbatim string: a length, then that
		// many bytes and CRLF; -1 is RESP2's null.
		n, err := length(buf[1:end])
		if err != nil {
			return 0, err
		}
		if n < 0 {
			return head, nil
		}
		if len(buf) < head+n+2 {
			return 0, nil
		}
		if buf[head+n] != '\r' || buf[head+n+1] != '\n' {
			return 0, fmt.Errorf("%w: a bulk string of %d bytes not ended by CRLF", ErrNotRESP, n)
		}
		return head + n + 2, nil
	case '*', '~', '>', '%', '|':
		// Array, set, push: N values; map, attribute: N pairs.
		n, err := length(buf[1:end])
		if err != nil {
			return 0, err
		}
		if n < 0 {
			return head, nil
		}
		if buf[0] == '%' || buf[0] == '|' {
			n *= 2
		}
		at := head
		for range n {
			m, err := split(buf[at:], depth+1)
			if err != nil || m == 0 {
				return 0, err
			}
			at += m
		}
		if buf[0] == '|' {
			// An attribute precedes the value it describes.
			m, err := split(buf[at:], depth+1)
			if err != nil || m == 0 {
				return 0, err
			}
			at += m
		}
		return at, nil
	}
	return 0, fmt.Errorf("%w: type byte %q", ErrNotRESP, buf[0])
}

// length reads a header's length: -1 (null) or 0..maxLen.
func length(b []byte) (int, error) {
	n, err := strconv.Atoi(string(b))
	if err != nil || n < -1 || n > maxLen {
		return 0, fmt.Errorf("%w: length %q", ErrNotRESP, b)
	}
	return n, nil
}

// Command reads a request (an array of bulk strings, as every client
// library sends one) into its arguments, which alias frame.
func Command(frame []byte) ([][]byte, error) {
	if len(frame) == 0 || frame[0] != '*' {
		return nil, fmt.Errorf("%w: a request must be an array of bulk strings", ErrNotRESP)
	}
	end := bytes.Index(frame, []byte("\r\n"))
	if end < 0 {
		return nil, fmt.Errorf("%w: a request without its header's end", ErrNotRESP)
	}
	n, err := length(frame[1:end])
	if err != nil || n < 1 {
		return nil, fmt.Errorf("%w: a request of %d arguments", ErrNotRESP, n)
	}
	args := make([][]byte, 0, n)
	at := end + 2
	for range n {
		if at >= len(frame) || frame[at] != '$' {
			return nil, fmt.Errorf("%w: argument %d is not a bulk string", ErrNotRESP, len(args)+1)
		}
		m, err := Split(frame[at:])
		if err != nil || m == 0 {
			return nil, fmt.Errorf("%w: argument %d is cut short", ErrNotRESP, len(args)+1)
		}
		h := bytes.Index(frame[at:], []byte("\r\n")) + 2
		args = append(args, frame[at+h:at+m-2])
		at += m
	}
	if at != len(frame) {
		return nil, fmt.Errorf("%w: %d bytes after the request", ErrNotRESP, len(frame)-at)
	}
	return args, nil
}

// setNX finds a SET ... NX call in a Lua script: Redlock's and
// redis-setnx's acquire scripts take the key with one.
var setNX = regexp.MustCompile(`(?i)\bSET\b[^\n]*['"]NX['"]`)

// acquireScripts are the SHA-1s (hex) of the scripts seen in an EVAL
// that take a key with SET NX: an EVALSHA names a script only by its
// SHA-1, a function of its text, so what one relay learned holds for
// every relay.
var acquireScripts sync.Map

// Acquires says whether a request takes a lock's key: a SET with the NX
// option, an EVAL of a script that makes one (whose SHA-1 it then
// remembers), or an EVALSHA of such a script seen in an EVAL before.
func Acquires(args [][]byte) bool {
	if len(args) == 0 {
		return false
	}
	switch strings.ToUpper(string(args[0])) {
	case "SET":
		for _, a := range args[min(3, len(args)):] {
			if strings.EqualFold(string(a), "NX") {
				return true
			}
		}
	case "EVAL":
		if len(args) < 2 || !setNX.Match(args[1]) {
			return false
		}
		sum := sha1.Sum(args[1])
		acquireScripts.Store(hex.EncodeToString(sum[:]), true)
		return true
	case "EVALSHA":
		if len(args) < 2 {
			return false
		}
		_, ok := acquireScripts.Load(strings.ToLower(string(args[1])))
		return ok
	}
	return false
}
