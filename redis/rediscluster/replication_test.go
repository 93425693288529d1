package rediscluster

import "testing"

// TestListeningPort: the relay finds a replica's listening port in its
// handshake however the bytes arrive, and nothing in a client's.
func TestListeningPort(t *testing.T) {
	hs := "*1\r\n$4\r\nPING\r\n*3\r\n$8\r\nREPLCONF\r\n$14\r\nlistening-port\r\n$5\r\n36745\r\n*5\r\n$8\r\nREPLCONF\r\n$4\r\ncapa\r\n"
	for _, tt := range []struct {
		in   string
		want int
	}{
		{hs, 36745},
		{hs[:len("*1\r\n$4\r\nPING\r\n*3\r\n$8\r\nREPLCONF\r\n$14\r\nlistening-port\r\n$5\r\n367")], 0}, // cut mid-number: not yet
		{"*2\r\n$3\r\nGET\r\n$4\r\nlock\r\n", 0},
		{"*3\r\n$3\r\nSET\r\n$14\r\nlistening-port\r\n$1\r\nx\r\n", 0}, // a value, not a port
		{"listening-port\r\n$", 0},
	} {
		if got := listeningPort([]byte(tt.in)); got != tt.want {
			t.Errorf("listeningPort(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
