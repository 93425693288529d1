package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
)

// kv is everything etcd says about a key that a run must not change.
type kv struct {
	value                string
	create, mod, version int64
}

func keyspace(t *testing.T, cli *clientv3.Client) map[string]kv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "\x00", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]kv{}
	for _, k := range resp.Kvs {
		out[string(k.Key)] = kv{string(k.Value), k.CreateRevision, k.ModRevision, k.Version}
	}
	return out
}

func tlsClient(t *testing.T, endpoints []string, cfg *tls.Config, user, password string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, TLS: cfg, Username: user, Password: password,
		DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestExternalTLSCluster runs lockbench against a separate 3-member TLS
// cluster through the CLI (--endpoints/--cacert/--cert/--key), and checks
// that the whole keyspace outside the run's prefix is byte-for-byte what it
// was (value, create/mod revision, version), including keys that share a
// textual prefix with the run's, and that nothing of the run is left.
func TestExternalTLSCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	f := newExtFixture(t, ctx)
	for _, st := range []struct {
		name string
		fn   func(*testing.T, *extFixture)
	}{
		{"default prefix", extDefaultPrefix},
		{"given prefix", extGivenPrefix},
		{"prefix in use", extPrefixInUse},
		{"wrong CA", extWrongCa},
		{"no client certificate", extNoClientCertificate},
		{"client faults through TLS proxies", extClientFaultsThroughTlsProxies},
		{"clean", extClean},
		{"suite", extSuite},
		{"shard prefixes", extShardPrefixes},
		{"clean after SIGKILL", extCleanAfterKill},
		{"auth", extAuth},
		{"permissions", extPermissions},
	} {
		// In order: "auth" turns auth on for the rest of the cluster's life.
		t.Run(st.name, func(t *testing.T) { st.fn(t, f) })
	}
}

// extFixture is a separate TLS cluster holding keys that a run must not
// touch, and the checks the subtests of TestExternalTLSCluster share.
type extFixture struct {
	ctx                context.Context
	c                  *cluster.Cluster
	admin              *clientv3.Client
	eps, ca, cert, key string
	tlsCfg             *tls.Config
	tlsArgs            []string
	before             map[string]kv
	unchanged          func(t *testing.T, cli *clientv3.Client)
	runFolder          func(t *testing.T, out string) (rundir.Config, string)
	noneUnder          func(t *testing.T, cli *clientv3.Client, prefix string)
}

// newExtFixture starts the cluster and writes the keys.
func newExtFixture(t *testing.T, ctx context.Context) *extFixture {
	c, err := cluster.Start(ctx, cluster.Options{TLS: true, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ca, cert, key := c.TLSFiles()
	tlsCfg, err := c.ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	eps := strings.Join(c.Endpoints(), ",")
	admin := tlsClient(t, c.Endpoints(), tlsCfg, "", "")
	for _, k := range []string{"/", "/lockbench", "/lockbench/", "/lockbench/other-run/x", "/lockbench/other-run/counter",
		"/lockbenchX", "/lockbench/run1", "/lockbench/run10/x", "/lockbench/run1x", "lockbench", "/other/key"} {
		if _, err := admin.Put(ctx, k, "value of "+k); err != nil {
			t.Fatal(err)
		}
	}
	// A key with history: several versions, the last not at create time.
	for _, v := range []string{"a", "b", "c"} {
		if _, err := admin.Put(ctx, "/lockbench/other-run/versions", v); err != nil {
			t.Fatal(err)
		}
	}
	f := &extFixture{ctx: ctx, c: c, admin: admin, eps: eps, ca: ca, cert: cert, key: key, tlsCfg: tlsCfg}
	f.before = keyspace(t, admin)
	f.tlsArgs = []string{"--endpoints", eps, "--cacert", ca, "--cert", cert, "--key", key}
	f.unchanged = func(t *testing.T, cli *clientv3.Client) {
		t.Helper()
		after := keyspace(t, cli)
		for k, v := range f.before {
			if after[k] != v {
				t.Errorf("key %q changed: before %+v, after %+v", k, v, after[k])
			}
		}
		for k := range after {
			if _, ok := f.before[k]; !ok {
				t.Errorf("key %q left behind", k)
			}
		}
	}
	f.runFolder = func(t *testing.T, out string) (rundir.Config, string) {
		t.Helper()
		runs, _ := os.ReadDir(out)
		if len(runs) != 1 {
			t.Fatalf("want one run folder, got %v", runs)
		}
		dir := filepath.Join(out, runs[0].Name())
		var cfg rundir.Config
		readJSON(t, filepath.Join(dir, rundir.ConfigFile), &cfg)
		return cfg, dir
	}
	f.noneUnder = func(t *testing.T, cli *clientv3.Client, prefix string) {
		t.Helper()
		resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count != 0 {
			t.Errorf("%d keys left under %s", resp.Count, prefix)
		}
	}
	return f
}

// extDefaultPrefix is TestExternalTLSCluster's subtest "default prefix".
func extDefaultPrefix(t *testing.T, f *extFixture) {
	admin, eps, ca, tlsArgs := f.admin, f.eps, f.ca, f.tlsArgs
	unchanged, runFolder, noneUnder := f.unchanged, f.runFolder, f.noneUnder
	out := t.TempDir()
	// Credentials on a cluster without auth are accepted (and unused):
	// here they show that the password is never written.
	args := append([]string{"run", "--lock", "mutex", "--scenario", "contention", "--clients", "2",
		"--duration", "1s", "--out", out, "--user", "root", "--password", "s3cret-pw"}, tlsArgs...)
	code, stdout, stderr := runCLI(t, args...)
	if code != ExitPass {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	cfg, dir := runFolder(t, out)
	if !strings.HasPrefix(cfg.Prefix, "/lockbench/"+cfg.RunID) || !strings.HasSuffix(cfg.Prefix, "/") {
		t.Errorf("prefix %q, want /lockbench/<run-id>/", cfg.Prefix)
	}
	cc := cfg.Cluster
	if !cc.External || !cc.TLS || strings.Join(cc.Endpoints, ",") != eps || cc.Members != 3 || cc.User != "root" || cc.CACert != ca {
		t.Errorf("config.json cluster: %+v", cc)
	}
	var sum report.Summary
	readJSON(t, filepath.Join(dir, rundir.SummaryFile), &sum)
	if sum.Acquisitions < 2 || sum.Verdict != "pass" {
		t.Errorf("summary: %d acquisitions, verdict %s", sum.Acquisitions, sum.Verdict)
	}
	files, _ := os.ReadDir(dir)
	for _, f := range files {
		b, _ := os.ReadFile(filepath.Join(dir, f.Name()))
		if bytes.Contains(b, []byte("s3cret-pw")) {
			t.Errorf("%s contains the password", f.Name())
		}
	}
	noneUnder(t, admin, cfg.Prefix)
	unchanged(t, admin)
}

// extGivenPrefix is TestExternalTLSCluster's subtest "given prefix".
func extGivenPrefix(t *testing.T, f *extFixture) {
	admin, tlsArgs := f.admin, f.tlsArgs
	unchanged, runFolder, noneUnder := f.unchanged, f.runFolder, f.noneUnder
	out := t.TempDir()
	// "/lockbench/run1" becomes "/lockbench/run1/": the keys
	// /lockbench/run1, /lockbench/run1x and /lockbench/run10/x are
	// outside it.
	args := append([]string{"run", "--lock", "queue", "--scenario", "contention", "--clients", "2",
		"--duration", "1s", "--out", out, "--prefix", "/lockbench/run1"}, tlsArgs...)
	code, stdout, stderr := runCLI(t, args...)
	if code != ExitPass {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	cfg, _ := runFolder(t, out)
	if cfg.Prefix != "/lockbench/run1/" {
		t.Errorf("prefix %q, want /lockbench/run1/", cfg.Prefix)
	}
	noneUnder(t, admin, cfg.Prefix)
	unchanged(t, admin)
}

// extPrefixInUse is TestExternalTLSCluster's subtest "prefix in use".
func extPrefixInUse(t *testing.T, f *extFixture) {
	admin, tlsArgs := f.admin, f.tlsArgs
	unchanged := f.unchanged
	out := t.TempDir()
	args := append([]string{"run", "--duration", "1s", "--out", out, "--prefix", "/lockbench/other-run/"}, tlsArgs...)
	code, _, stderr := runCLI(t, args...)
	if code != ExitUsage || !strings.Contains(stderr, "/lockbench/other-run/ already holds 3 keys") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		if ents, _ := os.ReadDir(out); len(ents) > 0 {
			t.Errorf("wrote %v", ents)
		}
	}
	unchanged(t, admin)
}

// extWrongCa is TestExternalTLSCluster's subtest "wrong CA".
func extWrongCa(t *testing.T, f *extFixture) {
	eps, cert, key := f.eps, f.cert, f.key
	// The client certificate is no CA: the servers' certificates do
	// not verify against it.
	out := filepath.Join(t.TempDir(), "runs")
	t0 := time.Now()
	code, _, stderr := runCLI(t, "run", "--duration", "1s", "--out", out, "--dial-timeout", "1s",
		"--endpoints", eps, "--cacert", cert, "--cert", cert, "--key", key)
	if el := time.Since(t0); el > 4*time.Second {
		t.Errorf("took %s with a 1s dial timeout", el)
	}
	if code != ExitUsage || !strings.Contains(stderr, "endpoint https://127.0.0.1:") || !strings.Contains(stderr, "unknown authority") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("wrote %s", out)
	}
}

// extNoClientCertificate is TestExternalTLSCluster's subtest "no client certificate".
func extNoClientCertificate(t *testing.T, f *extFixture) {
	eps, ca := f.eps, f.ca
	out := filepath.Join(t.TempDir(), "runs")
	code, _, stderr := runCLI(t, "run", "--duration", "1s", "--out", out, "--dial-timeout", "1s",
		"--endpoints", eps, "--cacert", ca)
	if code != ExitUsage || !strings.Contains(stderr, "endpoint https://127.0.0.1:") || !strings.Contains(stderr, "client certificate") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("wrote %s", out)
	}
}

// extClientFaultsThroughTlsProxies is TestExternalTLSCluster's subtest "client faults through TLS proxies".
func extClientFaultsThroughTlsProxies(t *testing.T, f *extFixture) {
	admin, tlsArgs := f.admin, f.tlsArgs
	unchanged, runFolder, noneUnder := f.unchanged, f.runFolder, f.noneUnder
	// Per-client proxies forward raw TCP: the clients must keep https
	// (an http endpoint would make the etcd client drop TLS silently).
	out := t.TempDir()
	args := append([]string{"run", "--lock", "mutex", "--scenario", "lease-expiry-fenced", "--duration", "4s", "--out", out}, tlsArgs...)
	code, stdout, stderr := runCLI(t, args...)
	if !ranToTheEnd(code, stderr) {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	cfg, dir := runFolder(t, out)
	var sum report.Summary
	readJSON(t, filepath.Join(dir, rundir.SummaryFile), &sum)
	if sum.Acquisitions < 3 {
		t.Errorf("%d acquisitions through the proxies\n%s", sum.Acquisitions, stdout)
	}
	hist, _ := os.ReadFile(filepath.Join(dir, rundir.HistoryFile))
	if !bytes.Contains(hist, []byte(`"pause-client"`)) {
		t.Error("history records no pause-client fault")
	}
	noneUnder(t, admin, cfg.Prefix)
	unchanged(t, admin)
}

// extAuth is TestExternalTLSCluster's subtest "auth".
func extAuth(t *testing.T, f *extFixture) {
	ctx, c, admin, tlsCfg, tlsArgs := f.ctx, f.c, f.admin, f.tlsCfg, f.tlsArgs
	unchanged, runFolder, noneUnder := f.unchanged, f.runFolder, f.noneUnder
	// Last: it turns auth on for the rest of the cluster's life.
	if _, err := admin.UserAdd(ctx, "root", "s3cret-pw"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
	root := tlsClient(t, c.Endpoints(), tlsCfg, "root", "s3cret-pw")
	f.before = keyspace(t, root)

	out := filepath.Join(t.TempDir(), "runs")
	code, _, stderr := runCLI(t, append([]string{"run", "--duration", "1s", "--out", out, "--dial-timeout", "10s",
		"--user", "root", "--password", "wrong"}, tlsArgs...)...)
	if code != ExitUsage || !strings.Contains(stderr, "authentication failed") || strings.Contains(stderr, "wrong") {
		t.Errorf("wrong password: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("wrote %s", out)
	}
	// The password from the environment, where ps does not show it.
	t.Setenv(passwordEnv, "s3cret-pw")
	code, stdout, stderr := runCLI(t, append([]string{"run", "--clients", "2", "--duration", "1s", "--out", out,
		"--user", "root"}, tlsArgs...)...)
	if code != ExitPass {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	cfg, _ := runFolder(t, out)
	noneUnder(t, root, cfg.Prefix)
	unchanged(t, root)
}

// TestExternalBadInput: bad external-cluster input exits 2 with one
// message naming what was wrong, and writes nothing. No cluster needed.
func TestExternalBadInput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	pem := filepath.Join(dir, "exists.pem")
	os.WriteFile(pem, []byte("not used"), 0o600)
	missing := filepath.Join(dir, "no-such-ca.crt")

	// A port nobody listens on, and one that accepts but never answers.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String()
	l.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	silentURL := "http://" + silent.Addr().String()

	tests := []struct {
		name    string
		args    []string
		want    []string
		maxTime time.Duration // 0: no network, must be instant
		suite   bool          // also bad input to suite (it is with maxTime)
	}{
		{"refused endpoint", []string{"--endpoints", refused, "--dial-timeout", "1s"}, []string{refused, "connection refused"}, time.Second, false},
		{"silent endpoint", []string{"--endpoints", silentURL, "--dial-timeout", "1s"}, []string{silentURL, "no answer within 1s"}, 3 * time.Second, false},
		{"second endpoint unreachable", []string{"--endpoints", silentURL + "," + refused, "--dial-timeout", "1s"}, []string{"endpoint http://127.0.0.1:"}, 3 * time.Second, false},
		{"missing CA file", []string{"--endpoints", "https://127.0.0.1:1", "--cacert", missing}, []string{missing, "no such file"}, 0, true},
		{"missing key file", []string{"--endpoints", "https://127.0.0.1:1", "--cert", pem, "--key", missing}, []string{missing, "no such file"}, 0, false},
		{"cert without key", []string{"--endpoints", "https://127.0.0.1:1", "--cert", pem}, []string{"cert", "key"}, 0, true},
		{"TLS files on http", []string{"--endpoints", "http://127.0.0.1:1", "--cacert", pem}, []string{"https://"}, 0, false},
		{"mixed schemes", []string{"--endpoints", "http://127.0.0.1:1,https://127.0.0.1:2"}, []string{"mix http and https"}, 0, true},
		{"no scheme", []string{"--endpoints", "127.0.0.1:2379"}, []string{`"127.0.0.1:2379"`, "https://HOST:PORT"}, 0, false},
		{"empty endpoints", []string{"--endpoints", ","}, []string{"--endpoints"}, 0, false},
		{"member faults", []string{"--endpoints", refused, "--scenario", "leader-kill"}, []string{"leader-kill", "member faults", "embedded cluster", "client faults"}, 0, false},
		{"member faults in a suite", []string{"suite", "--endpoints", refused, "--scenarios", "contention,leader-kill"}, []string{"leader-kill", "member faults", "embedded cluster", "leave it out"}, 0, false},
		{"the default scenarios: those with member faults left out, said", []string{"suite", "--endpoints", refused, "--dial-timeout", "1s"}, []string{"left out the scenarios with member faults: ", "leader-kill", refused, "connection refused"}, 0, false},
		{"a version matrix on an external cluster", []string{"suite", "--endpoints", refused, "--etcd-bin", "self"}, []string{"--etcd-bin", "does not apply with --endpoints"}, 0, false},
		{"partition refused", []string{"--endpoints", refused, "--scenario", "partition-leader"}, []string{"partition-leader", "member faults"}, 0, false},
		{"prefix /", []string{"--endpoints", refused, "--prefix", "/"}, []string{`--prefix "/"`, "must start with /"}, 0, true},
		{"relative prefix", []string{"--endpoints", refused, "--prefix", "lockbench/"}, []string{`--prefix "lockbench/"`}, 0, true},
		{"cacert without endpoints", []string{"--cacert", pem}, []string{"--cacert", "--endpoints"}, 0, true},
		{"prefix without endpoints", []string{"--prefix", "/x/"}, []string{"--prefix", "--endpoints"}, 0, true},
		{"members with endpoints", []string{"--endpoints", refused, "--members", "5"}, []string{"--members", "embedded"}, 0, true},
		{"user without password", []string{"--endpoints", refused, "--user", "root"}, []string{"user", "password"}, 0, true},
		{"zero dial timeout", []string{"--endpoints", refused, "--dial-timeout", "0s"}, []string{"--dial-timeout 0s"}, 0, true},
	}
	for _, tc := range tests {
		cmds := [][]string{{"run", "--out", out}}
		if tc.args[0] == "suite" {
			cmds, tc.args = [][]string{{"suite", "--out", out}}, tc.args[1:]
		}
		if tc.maxTime > 0 {
			// An endpoint that does not answer is the same bad input to
			// clean and suite as to run.
			cmds = append(cmds, []string{"clean"}, []string{"suite", "--out", out, "--locks", "mutex", "--scenarios", "contention"})
		}
		if tc.suite {
			cmds = append(cmds, []string{"suite", "--out", out, "--locks", "mutex", "--scenarios", "contention"})
		}
		for _, cmd := range cmds {
			t.Run(tc.name+"/"+cmd[0], func(t *testing.T) {
				t0 := time.Now()
				code, _, stderr := runCLI(t, append(cmd, tc.args...)...)
				el := time.Since(t0)
				if code != ExitUsage {
					t.Errorf("exit %d, want %d; stderr: %s", code, ExitUsage, stderr)
				}
				for _, w := range tc.want {
					if !strings.Contains(stderr, w) {
						t.Errorf("stderr %q does not mention %q", stderr, w)
					}
				}
				limit := tc.maxTime
				if limit == 0 {
					limit = 500 * time.Millisecond
				}
				if el > limit {
					t.Errorf("took %s, want < %s", el, limit)
				}
			})
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("bad input wrote %s", out)
	}
}

// syncBuffer is a bytes.Buffer safe to read while a command writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestClusterCommand: `lockbench cluster --tls` prints endpoints and
// certificate paths that work, and on cancel (Ctrl-C) exits 130 leaving no
// listener and no data folder.
func TestClusterCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		e := &env{stdout: &stdout, stderr: &stderr, scratch: &scratch{}}
		defer e.scratch.removeAll()
		err := clusterCommand(ctx, e, []string{"--members", "1", "--tls", "--unsafe-no-fsync"})
		done <- result{exitCode(err), err}
	}()
	deadline := time.After(time.Minute)
	for !strings.Contains(stdout.String(), "Ctrl-C") {
		select {
		case r := <-done:
			t.Fatalf("exited early: %d %v\n%s", r.code, r.err, stderr.String())
		case <-deadline:
			t.Fatalf("never ready:\n%s", stdout.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	field := func(name string) string {
		for _, line := range strings.Split(stdout.String(), "\n") {
			if v, ok := strings.CutPrefix(line, name+":"); ok {
				return strings.Fields(v)[0]
			}
		}
		t.Fatalf("no %q line in\n%s", name, stdout.String())
		return ""
	}
	eps, data := strings.Split(field("endpoints"), ","), field("data")
	ca, cert, key := field("cacert"), field("cert"), field("key")
	for _, want := range []string{"etcdctl --endpoints " + eps[0], "--cacert " + ca, "lock mylock", "lockbench run --endpoints " + eps[0]} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	// The printed endpoints and files serve a Put.
	tlsCfg, err := transport.TLSInfo{TrustedCAFile: ca, CertFile: cert, KeyFile: key}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cli := tlsClient(t, eps, tlsCfg, "", "")
	pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
	if _, err := cli.Put(pctx, "/manual", "x"); err != nil {
		t.Fatalf("put: %v", err)
	}
	pcancel()
	cli.Close()

	cancel()
	select {
	case r := <-done:
		// Ctrl-C ends it as it ends every command: 130.
		if r.code != ExitInterrupted || r.err != errInterrupted {
			t.Errorf("exit %d, %v; want %d", r.code, r.err, ExitInterrupted)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("did not stop after cancel")
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("data folder %s left: %v", data, err)
	}
	for _, ep := range eps {
		u, _ := url.Parse(ep)
		if c, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
			c.Close()
			t.Errorf("something still listens on %s", u.Host)
		}
	}
}

// extClean is TestExternalTLSCluster's subtest "clean": without --yes it
// only lists (the default prefix shows other runs' keys, untouched); with
// --yes it deletes exactly the keys under --prefix.
func extClean(t *testing.T, f *extFixture) {
	code, stdout, stderr := runCLI(t, append([]string{"clean"}, f.tlsArgs...)...)
	if code != ExitPass || !strings.Contains(stdout, "/lockbench/other-run/x\n") || !strings.Contains(stderr, "run again with --yes") {
		t.Errorf("dry run: exit %d\n%s%s", code, stdout, stderr)
	}
	if strings.Contains(stdout, "/lockbenchX") || strings.Contains(stdout, "/other/key") {
		t.Errorf("dry run lists keys outside /lockbench/:\n%s", stdout)
	}
	f.unchanged(t, f.admin)
	for _, k := range []string{"/lockbench/killed-run/counter", "/lockbench/killed-run/lock/1"} {
		if _, err := f.admin.Put(f.ctx, k, "left"); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr = runCLI(t, append([]string{"clean", "--prefix", "/lockbench/killed-run/", "--yes"}, f.tlsArgs...)...)
	if code != ExitPass || stdout != "/lockbench/killed-run/counter\n/lockbench/killed-run/lock/1\n" || !strings.Contains(stderr, "deleted 2 keys under /lockbench/killed-run/") {
		t.Errorf("--yes: exit %d\n%s%s", code, stdout, stderr)
	}
	f.noneUnder(t, f.admin, "/lockbench/killed-run/")
	f.unchanged(t, f.admin)
	code, _, stderr = runCLI(t, append([]string{"clean", "--prefix", "/lockbench/killed-run/"}, f.tlsArgs...)...)
	if code != ExitPass || !strings.Contains(stderr, "no keys under /lockbench/killed-run/") {
		t.Errorf("after --yes: exit %d\n%s", code, stderr)
	}
	extCleanLeases(t, f)
}

// extCleanLeases: clean --yes after a killed run revokes the leases of the
// keys it deletes (a SIGKILLed run's leases stay listed until their TTL
// runs out), but not a lease a key outside the prefix still uses: that
// key stays, and the lease is named.
func extCleanLeases(t *testing.T, f *extFixture) {
	ctx, admin := f.ctx, f.admin
	grant := func() clientv3.LeaseID {
		l, err := admin.Grant(ctx, 30)
		if err != nil {
			t.Fatal(err)
		}
		return l.ID
	}
	own, shared := grant(), grant()
	for k, id := range map[string]clientv3.LeaseID{"/lockbench/killed-run/lock/2": own, "/lockbench/killed-run/lock/3": own,
		"/lockbench/killed-run/lock/4": shared, "/outside/uses-the-lease": shared} {
		if _, err := admin.Put(ctx, k, "left", clientv3.WithLease(id)); err != nil {
			t.Fatal(err)
		}
	}
	code, _, stderr := runCLI(t, append([]string{"clean", "--prefix", "/lockbench/killed-run/", "--yes"}, f.tlsArgs...)...)
	want := []string{"deleted 3 keys under /lockbench/killed-run/; revoked 1 of their 2 leases",
		fmt.Sprintf("1 leases remain (%x)", int64(shared))}
	for _, w := range want {
		if code != ExitPass || !strings.Contains(stderr, w) {
			t.Errorf("exit %d, stderr lacks %q:\n%s", code, w, stderr)
		}
	}
	if ttl, err := admin.TimeToLive(ctx, own); err != nil || ttl.TTL != -1 {
		t.Errorf("the run's own lease: TTL %v, %v; want revoked (-1)", ttl, err)
	}
	if ttl, err := admin.TimeToLive(ctx, shared); err != nil || ttl.TTL <= 0 {
		t.Errorf("the shared lease: TTL %v, %v; want it kept", ttl, err)
	}
	if resp, err := admin.Get(ctx, "/outside/uses-the-lease"); err != nil || resp.Count != 1 {
		t.Errorf("the key outside the prefix: %v, %v; want it kept", resp, err)
	}
	if _, err := admin.Revoke(ctx, shared); err != nil {
		t.Fatal(err)
	}
	f.noneUnder(t, admin, "/lockbench/killed-run/")
	f.unchanged(t, admin)
}

// extPermissions is TestExternalTLSCluster's subtest "permissions" (auth
// on, after "auth"): a user with no permission on the run's prefix, and
// one who may only read it, are refused by the pre-flight with exit 2, a
// message naming the prefix and what to grant, no run folder and no key
// written; clean as them is refused the same way.
func extPermissions(t *testing.T, f *extFixture) {
	ctx, c, tlsCfg, tlsArgs := f.ctx, f.c, f.tlsCfg, f.tlsArgs
	root := tlsClient(t, c.Endpoints(), tlsCfg, "root", "s3cret-pw")
	f.before = keyspace(t, root)
	for _, u := range []string{"nobody", "reader"} {
		if _, err := root.UserAdd(ctx, u, u+"-pw"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := root.RoleAdd(ctx, "lockbench-ro"); err != nil {
		t.Fatal(err)
	}
	if _, err := root.RoleGrantPermission(ctx, "lockbench-ro", "/lockbench/", clientv3.GetPrefixRangeEnd("/lockbench/"), clientv3.PermissionType(clientv3.PermRead)); err != nil {
		t.Fatal(err)
	}
	if _, err := root.UserGrantRole(ctx, "reader", "lockbench-ro"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		user string
		args []string
		want []string
	}{
		{"nobody", []string{"run", "--clients", "2", "--duration", "1s"}, []string{`user "nobody" may not use prefix /lockbench/`, "put of /lockbench/", "grant-permission ROLE --prefix=true readwrite /lockbench/\n"}},
		{"reader", []string{"run", "--clients", "2", "--duration", "1s"}, []string{`user "reader" may not use prefix /lockbench/`, "put of /lockbench/", "permission denied"}},
		{"reader", []string{"run", "--clients", "2", "--duration", "1s", "--prefix", "/lockbench/mine"}, []string{`user "reader" may not use prefix /lockbench/mine/`, "put of"}},
		{"nobody", []string{"run", "--prefix", "/lockbench/mine"}, []string{`user "nobody" may not use prefix /lockbench/mine/`, "read"}},
		{"nobody", []string{"clean"}, []string{`user "nobody" may not use prefix /lockbench/`, "list"}},
		{"reader", []string{"suite", "--locks", "mutex", "--scenarios", "contention"}, []string{`user "reader" may not use prefix /lockbench/`, "put of /lockbench/.lockbench-preflight"}},
		{"reader", []string{"clean", "--prefix", "/lockbench/other-run/", "--yes"}, []string{`user "reader" may not use prefix /lockbench/other-run/`, "delete"}},
	} {
		t.Run(tc.user+"/"+strings.Join(tc.args, " "), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "runs")
			args := append(tc.args, "--user", tc.user, "--password", tc.user+"-pw")
			if tc.args[0] != "clean" {
				args = append(args, "--out", out)
			}
			code, stdout, stderr := runCLI(t, append(args, tlsArgs...)...)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d\n%s%s", code, ExitUsage, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("wrote %s", out)
			}
			f.unchanged(t, root)
		})
	}
}

// ranToTheEnd reports whether a command that ran its cells ended as one
// may on a loaded machine: every verdict as expected, one not, or a
// saturated harness (exit 3 saying so).
func ranToTheEnd(code int, stderr string) bool {
	return code == ExitPass || code == ExitViolation || code == ExitHarness && strings.Contains(stderr, "the harness was saturated")
}

// extSuite is TestExternalTLSCluster's subtest "suite": suite --endpoints
// runs every cell on the external cluster, each under its own prefix
// PREFIX<run-id>/, deleted at its end, touching nothing else.
func extSuite(t *testing.T, f *extFixture) {
	out := t.TempDir()
	args := append([]string{"suite", "--locks", "mutex,queue", "--scenarios", "contention,lease-expiry-fenced",
		"--out", out, "--prefix", "/lockbench/ci"}, f.tlsArgs...)
	code, stdout, stderr := runCLI(t, args...)
	if !ranToTheEnd(code, stderr) {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	suites, _ := os.ReadDir(out)
	if len(suites) != 1 {
		t.Fatalf("suite folders %v", suites)
	}
	dir := filepath.Join(out, suites[0].Name())
	s, err := report.ReadSuiteFile(filepath.Join(dir, rundir.SuiteFile))
	if err != nil || len(s.Cells) != 4 {
		t.Fatalf("suite.json: %v, %d cells\n%s", err, len(s.Cells), stdout)
	}
	acquired := 0
	for _, c := range s.Cells {
		var cfg rundir.Config
		readJSON(t, filepath.Join(dir, c.RunID, rundir.ConfigFile), &cfg)
		if !cfg.Cluster.External || cfg.Prefix != "/lockbench/ci/"+c.RunID+"/" {
			t.Errorf("cell %s: external %v, prefix %q", c.RunID, cfg.Cluster.External, cfg.Prefix)
		}
		acquired += c.Acquisitions
	}
	if acquired < 4 {
		t.Errorf("%d acquisitions in 4 cells on the external cluster\n%s", acquired, stdout)
	}
	f.noneUnder(t, f.admin, "/lockbench/ci/")
	f.unchanged(t, f.admin)
}

// extCleanAfterKill is TestExternalTLSCluster's subtest "clean after
// SIGKILL": a real lockbench run on the external cluster, killed with
// SIGKILL while its clients hold keys, leaves its keys and their leases;
// clean --yes deletes the keys and revokes every one of those leases.
func extCleanAfterKill(t *testing.T, f *extFixture) {
	bin := buildLockbench(t)
	prefix := "/lockbench/killed-by-test/"
	ctx, cancel := context.WithTimeout(f.ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"run", "--lock", "queue", "--clients", "3", "--duration", "60s", "--hold", "50ms",
		"--prefix", prefix, "--out", t.TempDir()}, f.tlsArgs...)...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var leases map[int64]bool
	for deadline := time.Now().Add(30 * time.Second); len(leases) < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the run never held leased keys:\n%s", stderr.String())
		}
		resp, err := f.admin.Get(ctx, prefix, clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		leases = map[int64]bool{}
		for _, kv := range resp.Kvs {
			if kv.Lease != 0 {
				leases[kv.Lease] = true
			}
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// What the killed run left, read after it died.
	resp, err := f.admin.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil || resp.Count == 0 {
		t.Fatalf("the killed run left no keys (%v)", err)
	}
	left := map[int64]bool{}
	for _, kv := range resp.Kvs {
		if kv.Lease != 0 {
			left[kv.Lease] = true
		}
	}
	code, _, cerr := runCLI(t, append([]string{"clean", "--prefix", prefix, "--yes"}, f.tlsArgs...)...)
	want := fmt.Sprintf("deleted %d keys under %s; revoked %d of their %d leases", resp.Count, prefix, len(left), len(left))
	if code != ExitPass || !strings.Contains(cerr, want) {
		t.Errorf("clean: exit %d, stderr %q; want %q", code, cerr, want)
	}
	for id := range left {
		if ttl, err := f.admin.TimeToLive(ctx, clientv3.LeaseID(id)); err != nil || ttl.TTL != -1 {
			t.Errorf("lease %x of the killed run: TTL %v, %v; want revoked", id, ttl, err)
		}
	}
	f.noneUnder(t, f.admin, prefix)
	f.unchanged(t, f.admin)
}

// extShardPrefixes is TestExternalTLSCluster's subtest "shard prefixes":
// suite --endpoints --shard I/N without --prefix runs its cells under
// /lockbench/shardIofN/, and clean --shard I/N deletes that shard's keys
// (and revokes their leases) while another shard's keys and lease stay.
func extShardPrefixes(t *testing.T, f *extFixture) {
	out := t.TempDir()
	args := append([]string{"suite", "--locks", "mutex,queue", "--scenarios", "contention", "--quick-duration", "1s",
		"--shard", "1/2", "--out", out}, f.tlsArgs...)
	code, stdout, stderr := runCLI(t, args...)
	if !ranToTheEnd(code, stderr) || !strings.Contains(stderr, "keys live under /lockbench/shard1of2/") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	suites, _ := os.ReadDir(out)
	if len(suites) != 1 {
		t.Fatalf("suite folders %v", suites)
	}
	dir := filepath.Join(out, suites[0].Name())
	s, err := report.ReadSuiteFile(filepath.Join(dir, rundir.SuiteFile))
	if err != nil || len(s.Cells) != 1 {
		t.Fatalf("suite.json: %v, %d cells (want 1 of the 2)\n%s", err, len(s.Cells), stdout)
	}
	var cfg rundir.Config
	readJSON(t, filepath.Join(dir, s.Cells[0].RunID, rundir.ConfigFile), &cfg)
	if want := "/lockbench/shard1of2/" + s.Cells[0].RunID + "/"; cfg.Prefix != want {
		t.Errorf("cell prefix %q, want %q", cfg.Prefix, want)
	}
	f.noneUnder(t, f.admin, "/lockbench/shard1of2/")

	// What two killed shards left: a lock key each, on a lease, and a counter.
	ctx, admin := f.ctx, f.admin
	leases := map[string]clientv3.LeaseID{}
	for _, shard := range []string{"shard1of2", "shard2of2"} {
		g, err := admin.Grant(ctx, 60)
		if err != nil {
			t.Fatal(err)
		}
		leases[shard] = g.ID
		pfx := "/lockbench/" + shard + "/killed-run/"
		if _, err := admin.Put(ctx, pfx+"lock/1", "held", clientv3.WithLease(g.ID)); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Put(ctx, pfx+"counter", "7"); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr = runCLI(t, append([]string{"clean", "--shard", "1/2", "--yes"}, f.tlsArgs...)...)
	if code != ExitPass || stdout != "/lockbench/shard1of2/killed-run/counter\n/lockbench/shard1of2/killed-run/lock/1\n" ||
		!strings.Contains(stderr, "deleted 2 keys under /lockbench/shard1of2/; revoked 1 of their 1 leases") {
		t.Errorf("clean --shard 1/2: exit %d\n%s%s", code, stdout, stderr)
	}
	f.noneUnder(t, admin, "/lockbench/shard1of2/")
	resp, err := admin.Get(ctx, "/lockbench/shard2of2/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 2 {
		t.Errorf("shard 2's keys after shard 1's clean: %d (%v), want 2", resp.Count, err)
	}
	if ttl, err := admin.TimeToLive(ctx, leases["shard2of2"]); err != nil || ttl.TTL <= 0 {
		t.Errorf("shard 2's lease after shard 1's clean: %v, %v; want alive", ttl, err)
	}
	code, _, stderr = runCLI(t, append([]string{"clean", "--shard", "1/2", "--prefix", "/lockbench/", "--yes"}, f.tlsArgs...)...)
	wantUsage(t, code, stderr, []string{"--shard 1/2 and --prefix /lockbench/", "give one"})
	code, _, stderr = runCLI(t, append([]string{"clean", "--shard", "3/2"}, f.tlsArgs...)...)
	wantUsage(t, code, stderr, []string{"--shard", "the index I must be 1..2"})
	code, _, stderr = runCLI(t, append([]string{"clean", "--shard", "2/2", "--yes"}, f.tlsArgs...)...)
	if code != ExitPass || !strings.Contains(stderr, "deleted 2 keys under /lockbench/shard2of2/") {
		t.Errorf("clean --shard 2/2: exit %d\n%s", code, stderr)
	}
	f.unchanged(t, admin)
}

// A lock client that runs as a process gets only the endpoints: on a
// cluster that needs a user or TLS it is refused before anything starts,
// not run into a lock violation.
func TestProcessLockRefusedWithCredentials(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--endpoints", "http://127.0.0.1:1", "--user", "u", "--password", "p", "--lock", "python-etcd3", "--scenario", "contention"},
		{"run", "--endpoints", "https://127.0.0.1:1", "--lock", "etcdctl", "--scenario", "contention"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "runs as a process of its own given only the endpoints") {
			t.Errorf("%v: exit %d, stderr %q: want 2 and the refusal", args, code, stderr)
		}
	}
}

// TestClusterCommandJSON: cluster --json prints how to reach the cluster
// as one JSON line a script can read, and --quiet leaves stderr empty
// when Ctrl-C stops it.
func TestClusterCommandJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		e := &env{stdout: &stdout, stderr: &stderr, scratch: &scratch{}}
		defer e.scratch.removeAll()
		done <- clusterCommand(ctx, e, []string{"--members", "1", "--unsafe-no-fsync", "--json", "--quiet"})
	}()
	deadline := time.After(time.Minute)
	for !strings.HasSuffix(stdout.String(), "\n") {
		select {
		case err := <-done:
			t.Fatalf("exited early: %v\n%s", err, stderr.String())
		case <-deadline:
			t.Fatalf("never ready:\n%s", stdout.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	var info clusterInfo
	if err := json.Unmarshal([]byte(stdout.String()), &info); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout.String())
	}
	if info.Members != 1 || len(info.Endpoints) != 1 || info.TLS || info.Fsync || info.ElectionMS <= 0 || info.Data == "" {
		t.Errorf("cluster --json: %+v", info)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: info.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = cli.Put(pctx, "/manual", "x")
	pcancel()
	cli.Close()
	if err != nil {
		t.Fatalf("put through the printed endpoints: %v", err)
	}
	cancel()
	if err := <-done; err != errInterrupted {
		t.Errorf("after Ctrl-C: %v, want errInterrupted", err)
	}
	if stderr.String() != "" {
		t.Errorf("--quiet printed on stderr: %q", stderr.String())
	}
	if _, err := os.Stat(info.Data); !os.IsNotExist(err) {
		t.Errorf("data folder %s left: %v", info.Data, err)
	}
}
