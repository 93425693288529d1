package runner

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/etcd"
	"github.com/lockbench/lockbench/scenarios"
)

// listening is the process's own TCP sockets in LISTEN state, by their
// local address ("127.0.0.1:2379", "[::]:40000"), read from
// /proc/net/tcp{,6} and kept when their inode is one of /proc/self/fd's.
func listening(t *testing.T) map[string]bool {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	out := map[string]bool{}
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			t.Skipf("no %s: %v", file, err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 || fs[3] != "0A" || !inodes[fs[9]] { // 0A: TCP_LISTEN
				continue
			}
			addr, err := procAddr(fs[1])
			if err != nil {
				f.Close()
				t.Fatalf("%s: %v", file, err)
			}
			out[addr] = true
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	return out
}

// procAddr decodes /proc/net/tcp's "0100007F:0CEA": the address in the
// host's byte order, 32-bit word by word, and the port in hex.
func procAddr(s string) (string, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return "", fmt.Errorf("address %q", s)
	}
	b, err := hex.DecodeString(h)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return "", fmt.Errorf("address %q", s)
	}
	for i := 0; i < len(b); i += 4 { // little-endian words (amd64, arm64)
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return "", fmt.Errorf("port in %q: %w", s, err)
	}
	return net.JoinHostPort(net.IP(b).String(), strconv.Itoa(int(port))), nil
}

// wildcard lists the addresses of ls bound to every interface.
func wildcard(ls map[string]bool) []string {
	var out []string
	for a := range ls {
		h, _, _ := net.SplitHostPort(a)
		if ip := net.ParseIP(h); ip == nil || ip.IsUnspecified() || !ip.IsLoopback() {
			out = append(out, a)
		}
	}
	return out
}

func TestProcAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:0CEA":                         "127.0.0.1:3306",
		"00000000:1F90":                         "0.0.0.0:8080",
		"00000000000000000000000000000000:9C40": "[::]:40000",
		"00000000000000000000000001000000:0050": "[::1]:80",
	} {
		if got, err := procAddr(in); err != nil || got != want {
			t.Errorf("procAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestStartProxyListensOnLoopbackOnly: a fault relay listens on
// 127.0.0.1 and nowhere else, relays bytes both ways, and leaves no
// listener after Close.
func TestStartProxyListensOnLoopbackOnly(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	before := listening(t)
	p, u, err := StartProxy("http://" + echo.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	during := listening(t)
	if w := wildcard(during); len(w) > 0 {
		p.Close()
		t.Fatalf("listening on every interface: %v", w)
	}
	host := strings.TrimPrefix(u, "http://")
	if !during[host] || before[host] {
		t.Errorf("the proxy's URL %s is not a new listener of this process: %v", u, during)
	}
	c, err := net.DialTimeout("tcp", host, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	p.DelayTx(time.Millisecond)
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "ping" {
		t.Fatalf("through the proxy: %q, %v", got, err)
	}
	// Close ends the open connection too (it does not wait for the client).
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for the client's open connection")
	}
	if _, err := c.Read(got); err == nil {
		t.Error("the relayed connection is still open after Close")
	}
	c.Close()
	if after := listening(t); after[host] {
		t.Errorf("%s still listening after Close", host)
	}
}

// TestRunListensOnLoopbackOnly runs a scenario with a client fault, so
// that every client has a fault proxy per member, on the embedded
// cluster, and reads the process's listening sockets while it runs: the
// proxies, the members' listeners and their front doors are all on
// loopback.
func TestRunListensOnLoopbackOnly(t *testing.T) {
	c := startCluster(t)
	sc, err := scenarios.Parse("loopback.yaml", strings.NewReader(`name: loopback
clients: 2
duration: 1500ms
workload: {kind: hold, hold: 5ms}
steps:
  - {at: 300ms, fault: delay-client, target: holder, for: 500ms, delay: 5ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	before := listening(t)
	if w := wildcard(before); len(w) > 0 {
		t.Errorf("the cluster listens on every interface: %v", w)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Config{Backend: etcd.Backend{}, Scenario: sc, Lock: "queue", Seed: 1,
			Prefix: "/lockbench/test-loopback/", Endpoints: c.Endpoints(), Cluster: etcd.Members{Members: c}})
		done <- err
	}()
	seen := map[string]bool{}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		case <-tick.C:
			for a := range listening(t) {
				seen[a] = true
			}
		}
	}
	if w := wildcard(seen); len(w) > 0 {
		t.Errorf("listening on every interface during the run: %v", w)
	}
	added := 0
	for a := range seen {
		if !before[a] {
			added++
		}
	}
	if want := sc.Clients * len(c.Endpoints()); added < want {
		t.Errorf("%d new listeners during the run, want ≥ %d (a proxy per client per member): the test saw no proxies", added, want)
	}
}
