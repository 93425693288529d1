package respwire

import (
	"crypto/sha1"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestSplit: the length of the first value of literal RESP2 and RESP3
// bytes, 0 while it is incomplete, an error for bytes that are not RESP.
func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int
		bad      bool
	}{
		{"empty", "", 0, false},
		{"simple string", "+OK\r\n", 5, false},
		{"simple string and more", "+OK\r\n:1\r\n", 5, false},
		{"half a line", "+OK\r", 0, false},
		{"error", "-ERR wrong number of arguments\r\n", 32, false},
		{"long error without its end yet", "-" + strings.Repeat("x", 200), 0, false},
		{"integer", ":1\r\n", 4, false},
		{"bulk", "$5\r\nhello\r\n", 11, false},
		{"bulk with CRLF inside", "$4\r\na\r\nb\r\n", 10, false},
		{"bulk cut short", "$5\r\nhel", 0, false},
		{"null bulk", "$-1\r\n", 5, false},
		{"bulk not ended by CRLF", "$2\r\nabcd", 0, true},
		{"request", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", 27, false},
		{"request cut short", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n", 0, false},
		{"null array", "*-1\r\n", 5, false},
		{"RESP3 null", "_\r\n", 3, false},
		{"RESP3 map", "%1\r\n+server\r\n+redis\r\n", 21, false},
		{"RESP3 set", "~2\r\n:1\r\n:2\r\n", 12, false},
		{"RESP3 push", ">2\r\n+message\r\n+x\r\n", 18, false},
		{"RESP3 double", ",1.5\r\n", 6, false},
		{"RESP3 verbatim", "=9\r\ntxt:hello\r\n", 15, false},
		{"RESP3 attribute before its value", "|1\r\n+ttl\r\n:3\r\n:1\r\n", 18, false},
		{"nested", "*2\r\n*1\r\n:1\r\n$1\r\na\r\n", 19, false},
		{"inline command", "PING\r\n", 0, true},
		{"bad length", "$x\r\n", 0, true},
		{"negative length", "*-2\r\n", 0, true},
		{"length header that never ends", "$" + strings.Repeat("1", 40), 0, true},
		{"too deep", strings.Repeat("*1\r\n", MaxDepth+2) + ":1\r\n", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Split([]byte(tc.in))
			if (err != nil) != tc.bad || (err != nil && !errors.Is(err, ErrNotRESP)) {
				t.Fatalf("Split(%q) error %v, want bad=%v", tc.in, err, tc.bad)
			}
			if n != tc.want {
				t.Errorf("Split(%q) = %d, want %d", tc.in, n, tc.want)
			}
		})
	}
}

// TestCommandAndAcquires: a request's arguments, and whether it takes a
// lock's key — a SET with NX in any case, an EVAL of a script with a SET
// NX, then an EVALSHA of that script's SHA-1 (and not of another).
func TestCommandAndAcquires(t *testing.T) {
	script := "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end return 0"
	other := "return redis.call('GET', KEYS[1])"
	sha := func(s string) string { return fmt.Sprintf("%x", sha1.Sum([]byte(s))) }
	for _, tc := range []struct {
		name string
		args []string
		want bool
	}{
		{"SET NX", []string{"SET", "k", "v", "NX", "PX", "1000"}, true},
		{"set px nx", []string{"set", "k", "v", "px", "1000", "nx"}, true},
		{"SET without NX", []string{"SET", "k", "v", "PX", "1000"}, false},
		{"SET whose value is NX", []string{"SET", "k", "NX"}, false},
		{"GET", []string{"GET", "NX"}, false},
		{"EVALSHA before its EVAL", []string{"EVALSHA", sha(script), "1", "k"}, false},
		{"EVAL of an acquire", []string{"EVAL", script, "1", "k", "v", "1000"}, true},
		{"EVALSHA of it, in capitals", []string{"EVALSHA", strings.ToUpper(sha(script)), "1", "k", "v", "1000"}, true},
		{"EVAL of another script", []string{"EVAL", other, "1", "k"}, false},
		{"EVALSHA of another script", []string{"evalsha", sha(other), "1", "k"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, err := Command([]byte(request(tc.args...)))
			if err != nil {
				t.Fatal(err)
			}
			if len(args) != len(tc.args) || string(args[len(args)-1]) != tc.args[len(tc.args)-1] {
				t.Fatalf("Command: %q, want %q", args, tc.args)
			}
			if got := Acquires(args); got != tc.want {
				t.Errorf("Acquires(%q) = %v, want %v", tc.args, got, tc.want)
			}
		})
	}
	for _, bad := range []string{"+OK\r\n", "*0\r\n", "*1\r\n:1\r\n", "*2\r\n$3\r\nGET\r\n", "*1\r\n$3\r\nGET\r\n:1\r\n"} {
		if args, err := Command([]byte(bad)); err == nil {
			t.Errorf("Command(%q) = %q, want an error", bad, args)
		}
	}
}

// request is args as a client sends them: an array of bulk strings.
func request(args ...string) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String()
}

// FuzzSplit: whatever the bytes, Split neither panics nor claims more
// than it was given, a value it splits off splits the same on its own,
// and Command reads only what Split would.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "$5\r\nhello\r\n", "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "%1\r\n+a\r\n:1\r\n", "|1\r\n+a\r\n:1\r\n:2\r\n", "*-1\r\n", "$-1\r\n", ">1\r\n+x\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := Split(b)
		if err != nil || n == 0 {
			return
		}
		if n > len(b) {
			t.Fatalf("Split claimed %d of %d bytes", n, len(b))
		}
		if m, err := Split(b[:n]); m != n || err != nil {
			t.Fatalf("the value alone splits to %d (%v), with more bytes to %d", m, err, n)
		}
		if m, _ := Split(b[:n-1]); m != 0 {
			t.Fatalf("the value less its last byte splits to %d, want 0", m)
		}
		if args, err := Command(b[:n]); err == nil {
			Acquires(args)
		}
	})
}
