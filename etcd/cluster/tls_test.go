package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestGeneratedCertificates: the server certificate verifies against the
// CA for 127.0.0.1 and localhost (a client dialing through a raw TCP proxy
// still checks 127.0.0.1), and is short-lived; the keys are private.
func TestGeneratedCertificates(t *testing.T) {
	f, err := generateTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	ca, _ := os.ReadFile(f.ca)
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("CA file holds no certificate")
	}
	load := func(path string) *x509.Certificate {
		b, _ := os.ReadFile(path)
		blk, _ := pem.Decode(b)
		if blk == nil {
			t.Fatalf("%s: no PEM", path)
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	srv := load(f.serverCert)
	for _, host := range []string{"127.0.0.1", "localhost", "::1"} {
		if _, err := srv.Verify(x509.VerifyOptions{DNSName: host, Roots: pool}); err != nil {
			t.Errorf("server certificate for %s: %v", host, err)
		}
	}
	if _, err := srv.Verify(x509.VerifyOptions{DNSName: "10.0.0.1", Roots: pool}); err == nil {
		t.Error("server certificate verifies for 10.0.0.1")
	}
	if d := time.Until(srv.NotAfter); d > TLSValidity || d < TLSValidity-time.Minute {
		t.Errorf("server certificate valid for another %s, want ~%s", d, TLSValidity)
	}
	cli := load(f.clientCert)
	if _, err := cli.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	for _, k := range []string{f.serverKey, f.clientKey} {
		if st, err := os.Stat(k); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v", k, st.Mode(), err)
		}
	}
	if _, err := tls.LoadX509KeyPair(f.clientCert, f.clientKey); err != nil {
		t.Error(err)
	}
}

// TestTLSCluster: clients need the CA and a client certificate; a crashed
// member restarts on the same certificates; Close removes them.
func TestTLSCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Members: 1, UnsafeNoFsync: true, TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ep := c.Endpoints()[0]
	if !strings.HasPrefix(ep, "https://127.0.0.1:") {
		t.Fatalf("endpoint %s, want https://127.0.0.1:…", ep)
	}
	tlsCfg, err := c.ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	connect := func(cfg *tls.Config) *clientv3.Client {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, TLS: cfg, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.Close() })
		return cli
	}
	put := func(cli *clientv3.Client) error {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := cli.Put(pctx, "k", "v")
		return err
	}
	good := connect(tlsCfg)
	if err := put(good); err != nil {
		t.Fatalf("put with client certificate: %v", err)
	}
	if err := c.CheckLockService(ctx); err != nil {
		t.Errorf("lock service probe over TLS: %v", err)
	}
	// Without a client certificate the server refuses the handshake.
	noCert := tlsCfg.Clone()
	noCert.GetClientCertificate = nil
	noCert.Certificates = nil
	if err := put(connect(noCert)); err == nil {
		t.Error("put without a client certificate succeeded")
	}

	if err := c.Crash(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	if err := put(connect(tlsCfg)); err != nil {
		t.Fatalf("put after restart: %v", err)
	}
	dir := c.DataDir()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("data folder %s left behind", dir)
	}
	if conn, err := net.DialTimeout("tcp", strings.TrimPrefix(ep, "https://"), time.Second); err == nil {
		conn.Close()
		t.Errorf("%s still listens", ep)
	}
}
