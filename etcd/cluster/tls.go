package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// TLSValidity is how long the certificates of a TLS cluster are valid: the
// cluster is for a test or a session of manual experiments, not for keeps.
const TLSValidity = 24 * time.Hour

// TLS file names inside <data folder>/tls/.
const (
	tlsDir         = "tls"
	caFile         = "ca.crt"
	serverCertFile = "server.crt"
	serverKeyFile  = "server.key"
	clientCertFile = "client.crt"
	clientKeyFile  = "client.key"
)

// ClientCN is the common name of the generated client certificate (etcd
// takes it as the user name when auth is enabled and no token is sent).
const ClientCN = "lockbench-client"

// tlsFiles are the PEM files of a TLS cluster, absolute paths.
type tlsFiles struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

// generateTLS writes a fresh CA, a server certificate (IP SAN 127.0.0.1 and
// ::1, DNS localhost; usable as a client certificate too, since etcd's own
// gateway dials the server with it) and a client certificate, all ECDSA
// P-256, into dir. The CA's private key is never written: nothing else can
// be signed with it once the function returns.
func generateTLS(dir string) (tlsFiles, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tlsFiles{}, err
	}
	f := tlsFiles{
		ca:         filepath.Join(dir, caFile),
		serverCert: filepath.Join(dir, serverCertFile),
		serverKey:  filepath.Join(dir, serverKeyFile),
		clientCert: filepath.Join(dir, clientCertFile),
		clientKey:  filepath.Join(dir, clientKeyFile),
	}
	now := time.Now()
	notBefore, notAfter := now.Add(-5*time.Minute), now.Add(TLSValidity) // a little slack for clock skew

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tlsFiles{}, err
	}
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "lockbench test CA", Organization: []string{"lockbench"}},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	caDER, caCert, err := sign(caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return tlsFiles{}, fmt.Errorf("CA certificate: %w", err)
	}
	if err := writePEM(f.ca, "CERTIFICATE", caDER, 0o644); err != nil {
		return tlsFiles{}, err
	}

	leaf := func(cn string, usage []x509.ExtKeyUsage, ips []net.IP, dns []string, certPath, keyPath string) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			Subject:     pkix.Name{CommonName: cn, Organization: []string{"lockbench"}},
			NotBefore:   notBefore,
			NotAfter:    notAfter,
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: usage,
			IPAddresses: ips,
			DNSNames:    dns,
		}
		der, _, err := sign(tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return fmt.Errorf("%s certificate: %w", cn, err)
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return err
		}
		if err := writePEM(certPath, "CERTIFICATE", der, 0o644); err != nil {
			return err
		}
		return writePEM(keyPath, "PRIVATE KEY", keyDER, 0o600)
	}
	if err := leaf("lockbench-etcd-server",
		[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, []string{"localhost"},
		f.serverCert, f.serverKey); err != nil {
		return tlsFiles{}, err
	}
	if err := leaf(ClientCN, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil, nil,
		f.clientCert, f.clientKey); err != nil {
		return tlsFiles{}, err
	}
	return f, nil
}

// sign creates a certificate from tmpl signed by parent's key, with a
// random serial number.
func sign(tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, signer *ecdsa.PrivateKey) ([]byte, *x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return der, cert, err
}

func writePEM(path, typ string, der []byte, perm os.FileMode) error {
	b := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	if err := os.WriteFile(path, b, perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// serverTLSInfo is what each member serves clients with: the server
// certificate, and client certificates signed by the CA required.
func (f tlsFiles) serverTLSInfo() transport.TLSInfo {
	return transport.TLSInfo{
		CertFile:       f.serverCert,
		KeyFile:        f.serverKey,
		TrustedCAFile:  f.ca,
		ClientCertAuth: true,
	}
}

// TLS reports whether clients talk to the cluster over https.
func (c *Cluster) TLS() bool { return c.opts.TLS }

// TLSFiles returns the PEM files a client needs: the CA certificate that
// signed the servers' certificates, and a client certificate and key the
// servers accept. They live in the data folder and go away with Close.
// All three are empty when the cluster is not TLS.
func (c *Cluster) TLSFiles() (ca, cert, key string) {
	return c.tls.ca, c.tls.clientCert, c.tls.clientKey
}

// ClientTLSConfig is the tls.Config for a client of the cluster (CA and
// client certificate), or nil when the cluster is not TLS.
func (c *Cluster) ClientTLSConfig() (*tls.Config, error) {
	if !c.opts.TLS {
		return nil, nil
	}
	ca, cert, key := c.TLSFiles()
	return transport.TLSInfo{CertFile: cert, KeyFile: key, TrustedCAFile: ca}.ClientConfig()
}
