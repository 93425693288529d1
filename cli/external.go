package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/lockbench/lockbench/harness"
)

// extFlags are the flags of an external cluster (run --endpoints ...).
type extFlags struct {
	endpoints, cacert, cert, key, user, password, prefix string
	dial                                                 time.Duration
}

// passwordEnv holds the password when --password is not given.
const passwordEnv = "LOCKBENCH_PASSWORD"

// extOnly are extFlags' names that need --endpoints.
var extOnly = []string{"cacert", "cert", "key", "user", "password", "prefix", "dial-timeout"}

// register adds the external-cluster flags of a run to fs.
func (e *extFlags) register(fs *flagSet) {
	fs.StringVar(&e.endpoints, "endpoints", "", "comma-separated client URLs of an external etcd cluster (http:// or https://); no embedded cluster is started, member faults are refused")
	fs.StringVar(&e.prefix, "prefix", "", "external cluster: key namespace of the run, deleted at the end; must start with / and be empty (default /lockbench/<run-id>/)")
	e.registerAccess(fs)
}

// registerAccess adds the flags that reach and authenticate to an
// external cluster (all but --endpoints and --prefix, whose meaning is
// the command's) to fs.
func (e *extFlags) registerAccess(fs *flagSet) {
	fs.StringVar(&e.cacert, "cacert", "", "external cluster: CA certificate (PEM) that verifies the servers (https; default: the system roots)")
	fs.StringVar(&e.cert, "cert", "", "external cluster: client certificate (PEM), with --key")
	fs.StringVar(&e.key, "key", "", "external cluster: client private key (PEM), with --cert")
	fs.StringVar(&e.user, "user", "", "external cluster: user name (etcd auth), with --password")
	fs.StringVar(&e.password, "password", "", "external cluster: password for --user (never written to the run folder); better in the environment as "+passwordEnv+", which ps does not show")
	fs.DurationVar(&e.dial, "dial-timeout", harness.DefaultDialTimeout, "external cluster: how long to wait for each endpoint to answer")
}

// parse returns the external cluster, or nil when --endpoints is not set.
// set holds the names of the flags given.
func (e *extFlags) parse(set map[string]bool) (*harness.External, error) {
	if !set["endpoints"] {
		for _, name := range extOnly {
			if set[name] {
				return nil, badInputf("--%s is for an external cluster: give --endpoints too", name)
			}
		}
		return nil, nil
	}
	for _, name := range embeddedOnly {
		if set[name] {
			return nil, badInputf("--%s configures the embedded cluster; it does not apply with --endpoints", name)
		}
	}
	x, err := e.access(set)
	if err != nil {
		return nil, err
	}
	if set["prefix"] && (!strings.HasPrefix(e.prefix, "/") || e.prefix == "/") {
		return nil, badInputf("--prefix %q: must start with / and not be / (the run deletes its whole prefix at the end)", e.prefix)
	}
	x.Prefix = e.prefix
	return x, nil
}

// access checks --endpoints (given) and the registerAccess flags, and
// returns the external cluster without a prefix.
func (e *extFlags) access(set map[string]bool) (*harness.External, error) {
	eps := splitList(e.endpoints)
	if len(eps) == 0 {
		return nil, badInputf("--endpoints %q: give at least one client URL, e.g. https://127.0.0.1:2379", e.endpoints)
	}
	if e.dial <= 0 {
		return nil, badInputf("--dial-timeout %s: must be > 0", e.dial)
	}
	password := e.password
	if !set["password"] {
		password = os.Getenv(passwordEnv)
	}
	return &harness.External{
		Endpoints: eps, CACert: e.cacert, Cert: e.cert, Key: e.key,
		User: e.user, Password: password, DialTimeout: e.dial,
	}, nil
}

// maxProbe bounds the HTTP/1 probe of each endpoint: a silent endpoint
// costs this much before the harness's own checks name what is wrong.
const maxProbe = time.Second

// probeEtcd asks every endpoint, in parallel, for GET /version over
// HTTP/1, which etcd answers on its client port with its version. An
// endpoint that answers HTTP with anything else is some other server:
// bad input, said at once, where gRPC would only wait out the dial
// timeout. An endpoint that does not answer HTTP at all is left to the
// harness, which says why (refused, silent, TLS).
func probeEtcd(ctx context.Context, x *harness.External) error {
	errs := make([]error, len(x.Endpoints))
	var wg sync.WaitGroup
	for i, ep := range x.Endpoints {
		wg.Go(func() { errs[i] = probeOne(ctx, ep, min(x.DialTimeout, maxProbe)) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// probeOne is probeEtcd for one endpoint.
func probeOne(ctx context.Context, ep string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(ep, "/")+"/version", nil)
	if err != nil {
		return nil // the harness names a malformed URL
	}
	// Only to tell etcd from another server: the harness verifies the
	// certificates when it connects.
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // identification only
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode == http.StatusOK && bytes.Contains(body, []byte(`"etcdserver"`)) {
		return nil
	}
	return badInputf("endpoint %s answers HTTP but is not an etcd server (GET /version: %s, %q): give etcd's client URLs (its --advertise-client-urls)",
		ep, resp.Status, clip(string(bytes.TrimSpace(body)), 60))
}

// clip shortens s to n bytes for a message.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// describe names the external cluster in the run's banner.
func (e *extFlags) describe(x *harness.External) string {
	return fmt.Sprintf("external etcd %s", strings.Join(x.Endpoints, ","))
}
