package cluster

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

func TestServerFrom(t *testing.T) {
	for head, want := range map[string]string{
		"GET /raft/stream/message/8e9e05c52164694d HTTP/1.1\r\nHost: x\r\nX-Server-From: 91bc3c398fb3c146\r\nX-Raft-To: 8e9e\r\n\r\n": "91bc3c398fb3c146",
		"POST /raft HTTP/1.1\r\nx-server-from: ab\r\n\r\nbody":                                                                        "ab",
		"GET /version HTTP/1.1\r\nHost: x\r\n\r\n":                                                                                    "",
		"GET /raft HTTP/1.1\r\nX-Server-From: ab\r\n":                                                                                 "", // head not complete
		"": "",
	} {
		if got := serverFrom([]byte(head)); got != want {
			t.Errorf("serverFrom(%q) = %q, want %q", head, got, want)
		}
	}
}

// echoServer echoes every connection until closed.
func echoServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return l.Addr().String()
}

// dialAs opens a connection to the relay as member id and reports
// whether its request head comes back through (the relay let it pass).
func dialAs(t *testing.T, r *peerRelay, id string) (net.Conn, bool) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(r.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	head := "GET /raft/stream/msgapp/x HTTP/1.1\r\nX-Server-From: " + id + "\r\n\r\n"
	if id == "" {
		head = "GET /version HTTP/1.1\r\n\r\n"
	}
	c.Write([]byte(head))
	return c, echoed(c, len(head))
}

func echoed(c net.Conn, n int) bool {
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err := io.ReadFull(c, make([]byte, n))
	return err == nil
}

// A relay in front of member 2 tells its diallers apart by X-Server-From:
// cutting member 0 closes and refuses member 0's connections only; cutting
// member 2 refuses everyone; healing lets them through again.
func TestPeerRelayCuts(t *testing.T) {
	cuts := &peerCuts{ids: map[string]int{"a0": 0, "a1": 1, "a2": 2}}
	r, err := startPeerRelay(cuts, 2, echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	c0, ok0 := dialAs(t, r, "a0")
	_, ok1 := dialAs(t, r, "a1")
	if !ok0 || !ok1 {
		t.Fatalf("uncut connections refused: a0 %v, a1 %v", ok0, ok1)
	}
	cuts.setCut(0, true)
	c0.Write([]byte("x")) // echoed back if the connection were still relayed
	if echoed(c0, 1) {
		t.Error("member 0's open connection survived its cut")
	}
	if _, ok := dialAs(t, r, "a0"); ok {
		t.Error("member 0 let through while cut")
	}
	if _, ok := dialAs(t, r, "a1"); !ok {
		t.Error("member 1 refused by member 0's cut")
	}
	if _, ok := dialAs(t, r, ""); !ok {
		t.Error("an unidentified dialler refused although the relay's member is not cut")
	}
	cuts.setCut(0, false)
	cuts.setCut(2, true)
	for _, id := range []string{"a0", "a1", ""} {
		if _, ok := dialAs(t, r, id); ok {
			t.Errorf("dialler %q let into cut member 2", id)
		}
	}
	cuts.setCut(2, false)
	if _, ok := dialAs(t, r, "a0"); !ok {
		t.Error("member 0 refused after heal")
	}
}
