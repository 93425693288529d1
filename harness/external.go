package harness

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/runner"
)

// Defaults for an external cluster.
const (
	// DefaultDialTimeout bounds connecting to each endpoint, the health
	// check before a run included.
	DefaultDialTimeout = 5 * time.Second
	// DefaultExternalElection is the election timeout assumed for an
	// external cluster's liveness bound: etcd's own default, since it
	// cannot be read over the client API.
	DefaultExternalElection = time.Second
)

// External is an etcd cluster that lockbench did not start and does not
// own: a run touches nothing outside its prefix, deletes that prefix at the
// end, and refuses faults that need a member under its control.
type External struct {
	// Endpoints are client URLs, all http:// or all https://.
	Endpoints []string
	// CACert verifies the servers (https; empty: the system roots). Cert
	// and Key, both or neither, are the client certificate.
	CACert, Cert, Key string
	// User and Password authenticate when the cluster has auth enabled.
	// The password is never written anywhere.
	User, Password string
	// Prefix is the run's key namespace (default /lockbench/<run-id>/). It
	// must start with "/", must not be "/", and gets a trailing "/" so
	// that /a/run1 never covers /a/run10. It must hold no keys when the
	// run starts: the run deletes it at the end.
	Prefix string
	// Parent, when Prefix is empty, is the folder of the run's prefix:
	// PARENT<run-id>/ (default /lockbench/). A suite on an external cluster
	// sets it, so that each cell has its own prefix under the one the user
	// gave. It must start with "/" and not be "/"; a trailing "/" is added.
	Parent string
	// DialTimeout bounds the health check and each client's connect
	// (default DefaultDialTimeout).
	DialTimeout time.Duration
	// Election is the cluster's election timeout, for the liveness bound
	// (default DefaultExternalElection).
	Election time.Duration
}

// InputError is an error in what the caller gave (an unreachable endpoint,
// a missing certificate file, a prefix in use, a fault the cluster cannot
// take): it is found before anything starts, and nothing is written.
type InputError struct{ Err error }

// Error is the wrapped error's message: the input is the whole story.
func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap returns the error, so errors.Is and errors.As see through.
func (e *InputError) Unwrap() error { return e.Err }

func inputErr(format string, args ...any) error {
	return &InputError{fmt.Errorf(format, args...)}
}

// Validate checks x without touching the network: what it finds is an
// *InputError. RunExternal calls it too.
func (x External) Validate() error {
	_, err := x.normalized()
	return err
}

// normalized checks x without touching the network and fills in defaults.
func (x External) normalized() (External, error) {
	if len(x.Endpoints) == 0 {
		return x, inputErr("no endpoints given")
	}
	scheme := ""
	for _, ep := range x.Endpoints {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return x, inputErr("endpoint %q: want http://HOST:PORT or https://HOST:PORT", ep)
		}
		if scheme != "" && u.Scheme != scheme {
			return x, inputErr("endpoints mix http and https (%s): use one scheme for all", strings.Join(x.Endpoints, ","))
		}
		scheme = u.Scheme
	}
	if scheme == "http" && (x.CACert != "" || x.Cert != "") {
		// The etcd client drops TLS for http:// endpoints without a word.
		return x, inputErr("TLS files given but the endpoints are http://: use https:// endpoints")
	}
	if (x.Cert == "") != (x.Key == "") {
		return x, inputErr("a client certificate needs both cert and key (got cert %q, key %q)", x.Cert, x.Key)
	}
	for _, f := range []struct{ what, path string }{{"CA certificate", x.CACert}, {"client certificate", x.Cert}, {"client key", x.Key}} {
		if f.path == "" {
			continue
		}
		if st, err := os.Stat(f.path); err != nil {
			return x, inputErr("%s %s: %v", f.what, f.path, errors.Unwrap(err))
		} else if st.IsDir() {
			return x, inputErr("%s %s: is a folder, want a PEM file", f.what, f.path)
		}
	}
	if (x.User == "") != (x.Password == "") {
		return x, inputErr("user and password go together (got user %q and %s password)", x.User, map[bool]string{true: "no", false: "a"}[x.Password == ""])
	}
	if x.Prefix != "" {
		if !strings.HasPrefix(x.Prefix, "/") || x.Prefix == "/" {
			return x, inputErr("prefix %q: must start with / and not be / (the run deletes its whole prefix at the end)", x.Prefix)
		}
		if !strings.HasSuffix(x.Prefix, "/") {
			x.Prefix += "/"
		}
	}
	if x.Parent != "" {
		if x.Prefix != "" {
			return x, inputErr("prefix %q and parent %q: give one (the run's prefix, or the folder of its run-id prefix)", x.Prefix, x.Parent)
		}
		if !strings.HasPrefix(x.Parent, "/") || x.Parent == "/" {
			return x, inputErr("prefix %q: must start with / and not be / (each run deletes its whole prefix under it at the end)", x.Parent)
		}
		if !strings.HasSuffix(x.Parent, "/") {
			x.Parent += "/"
		}
	}
	if x.DialTimeout < 0 || x.Election < 0 {
		return x, inputErr("dial timeout %s, election timeout %s: must be > 0", x.DialTimeout, x.Election)
	}
	if x.DialTimeout == 0 {
		x.DialTimeout = DefaultDialTimeout
	}
	if x.Election == 0 {
		x.Election = DefaultExternalElection
	}
	return x, nil
}

// prepared is x normalized, with its base client configuration: what
// every use of an external cluster starts from, before any dial.
func (x External) prepared() (External, clientv3.Config, error) {
	x, err := x.normalized()
	if err != nil {
		return x, clientv3.Config{}, err
	}
	cc, err := x.clientConfig()
	return x, cc, err
}

// clientConfig is the base etcd client configuration: TLS and credentials.
func (x External) clientConfig() (clientv3.Config, error) {
	cc := clientv3.Config{Username: x.User, Password: x.Password}
	if strings.HasPrefix(x.Endpoints[0], "https://") {
		var tlsCfg *tls.Config
		var err error
		info := transport.TLSInfo{CertFile: x.Cert, KeyFile: x.Key, TrustedCAFile: x.CACert}
		if tlsCfg, err = info.ClientConfig(); err != nil {
			return cc, inputErr("TLS files (CA %q, cert %q, key %q): %v", x.CACert, x.Cert, x.Key, err)
		}
		cc.TLS = tlsCfg
	}
	return cc, nil
}

// clusterInfo is what the health check learns about the cluster.
type clusterInfo struct {
	members int
	version string
}

// healthCheck asks every endpoint for its status, in parallel, within the
// dial timeout, then checks through all of them that a quorum answers and
// that the prefix (when given) holds no keys (for a worker, none but the
// run's other workers' ready and pre-flight keys). Any failure is an InputError
// that names the endpoint, unless ctx ended.
func healthCheck(ctx context.Context, x External, cc clientv3.Config, worker bool) (clusterInfo, error) {
	var info clusterInfo
	errs := make([]error, len(x.Endpoints))
	versions := make([]string, len(x.Endpoints))
	var wg sync.WaitGroup
	for i, ep := range x.Endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			versions[i], errs[i] = probe(ctx, x, cc, ep)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return info, ctx.Err()
	}
	var msgs []string
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) > 0 {
		return info, inputErr("%s", strings.Join(msgs, "; "))
	}
	info.version = versions[0]

	qctx, cancel := context.WithTimeout(ctx, x.DialTimeout)
	defer cancel()
	cli, err := newClient(qctx, x, cc, x.Endpoints)
	if err != nil {
		return info, connectErr(ctx, strings.Join(x.Endpoints, ","), x.DialTimeout, err)
	}
	defer cli.Close()
	ml, err := cli.MemberList(qctx)
	if err != nil {
		return info, connectErr(ctx, strings.Join(x.Endpoints, ","), x.DialTimeout, fmt.Errorf("member list: %w", err))
	}
	info.members = len(ml.Members)
	if x.Prefix != "" {
		// A linearizable read: it also proves that a quorum answers.
		resp, err := cli.Get(qctx, x.Prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		// The other workers of the run check and say ready there before
		// it starts (a start or done is another run's); counted at the
		// same revision, as the pre-flights come and go.
		for i := 0; worker && err == nil && i < len(runner.WorkerPrepKeys); i++ {
			var own *clientv3.GetResponse
			if own, err = cli.Get(qctx, x.Prefix+runner.WorkerPrepKeys[i], clientv3.WithPrefix(), clientv3.WithCountOnly(), clientv3.WithRev(resp.Header.Revision)); err == nil {
				resp.Count -= own.Count
			}
		}
		if errors.Is(err, rpctypes.ErrPermissionDenied) {
			return info, permissionErr(x.User, x.Prefix, x.Prefix, "read", err)
		}
		if err != nil {
			return info, connectErr(ctx, strings.Join(x.Endpoints, ","), x.DialTimeout, fmt.Errorf("read prefix %s: %w", x.Prefix, err))
		}
		if resp.Count > 0 {
			return info, inputErr("prefix %s already holds %d keys; a run deletes its whole prefix at the end, so it must start empty: choose another prefix, or delete them (etcdctl del --prefix %s)", x.Prefix, resp.Count, x.Prefix)
		}
	}
	return info, nil
}

// probe connects to one endpoint alone and asks for its status.
func probe(ctx context.Context, x External, cc clientv3.Config, ep string) (string, error) {
	pctx, cancel := context.WithTimeout(ctx, x.DialTimeout)
	defer cancel()
	// A plain TCP connect first: a refused or unroutable endpoint fails
	// at once with the system's reason, which gRPC would only report as a
	// deadline.
	u, _ := url.Parse(ep) // checked by normalized
	conn, err := (&net.Dialer{}).DialContext(pctx, "tcp", u.Host)
	if err != nil {
		return "", connectErr(ctx, ep, x.DialTimeout, err)
	}
	if cc.TLS != nil {
		// The TLS handshake too: a certificate that does not verify shows
		// up here by name, where gRPC would only time out.
		tcfg := cc.TLS.Clone()
		if tcfg.ServerName == "" {
			tcfg.ServerName = u.Hostname()
		}
		tconn := tls.Client(conn, tcfg)
		err = tconn.HandshakeContext(pctx)
		tconn.Close()
		if err != nil {
			return "", connectErr(ctx, ep, x.DialTimeout, fmt.Errorf("TLS handshake: %w", err))
		}
	} else {
		conn.Close()
	}
	// Status needs no credentials; authentication (a bcrypt on the server
	// each time) is checked once, through all endpoints, afterwards.
	cc.Username, cc.Password = "", ""
	cli, err := newClient(pctx, x, cc, []string{ep})
	if err != nil {
		return "", connectErr(ctx, ep, x.DialTimeout, err)
	}
	defer cli.Close()
	st, err := cli.Status(pctx, ep)
	if err != nil {
		return "", connectErr(ctx, ep, x.DialTimeout, err)
	}
	return st.Version, nil
}

// newClient connects with the whole connect (authentication included)
// bounded by ctx.
func newClient(ctx context.Context, x External, cc clientv3.Config, endpoints []string) (*clientv3.Client, error) {
	cc.Endpoints = endpoints
	cc.DialTimeout = x.DialTimeout
	cc.Context = ctx
	cc.Logger = zap.NewNop()
	return clientv3.New(cc)
}

func connectErr(ctx context.Context, ep string, d time.Duration, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "DeadlineExceeded") {
		hint := ""
		switch {
		case strings.HasPrefix(ep, "http://"):
			hint = "; if it serves TLS, use https:// and give the CA"
		case strings.HasPrefix(ep, "https://"):
			hint = "; the TLS handshake passed: does the server require a client certificate it accepts?"
		}
		return inputErr("endpoint %s: no answer within %s (%v)%s", ep, d, err, hint)
	}
	return inputErr("endpoint %s: %v", ep, err)
}

// grantOn is the prefix a permission error tells to grant: the run's own
// when the user chose it, else the folder of its run-id prefixes, which
// are new on every run.
func (x External) grantOn() string { return cmp.Or(x.Prefix, x.Parent, DefaultCleanPrefix) }

// ready checks, before a suite makes its folder, what RunExternal checks
// before each of its runs: the input, every endpoint, and the user's
// permissions under the folder of the runs' prefixes.
// RefusesProcess says why lock, a strategy whose Lockers are processes
// given only the members' addresses (locks.Strategy.Process), cannot run
// on x, a cluster that needs credentials or TLS, or nil: its every
// acquire would fail, and the run read as the lock's violation.
func (x External) RefusesProcess(lock string) error {
	st, err := locks.Lookup(lock)
	if err != nil || !st.Process {
		return nil
	}
	tls := x.CACert != "" || x.Cert != "" || slices.ContainsFunc(x.Endpoints, func(ep string) bool { return strings.HasPrefix(ep, "https://") })
	if x.User == "" && !tls {
		return nil
	}
	return inputErr("lock %s runs as a process of its own given only the endpoints (docs/adapters.md), not the user, password or TLS files this cluster needs: run it on a cluster without them", lock)
}

// Ready checks, before a suite's first cell, that the cluster answers
// and takes the suite's writes (the health check and preflight a run
// makes), so that a suite on a cluster it cannot use stops at once.
func (x External) Ready(ctx context.Context) error {
	x, cc, err := x.prepared()
	if err != nil {
		return err
	}
	if _, err := healthCheck(ctx, x, cc, false); err != nil {
		return err
	}
	return preflight(ctx, x, cc, x.grantOn(), x.grantOn(), runner.Worker{})
}

// RunExternal runs spec on an external cluster: it checks the input, then
// that every endpoint answers within the dial timeout and that the user
// may use the run's prefix (preflight), before anything starts; errors of that kind are *InputError and leave nothing behind.
// Then it runs as RunOn does, with spec.Cluster ignored. The run's prefix
// is deleted at the end, on every path out.
func RunExternal(ctx context.Context, ext External, spec RunSpec) (*Result, error) {
	if err := spec.Validate(); err != nil {
		return nil, &InputError{err}
	}
	if err := ext.RefusesProcess(spec.Lock); err != nil {
		return nil, err
	}
	if spec.Scenario.Needs().Members {
		return nil, inputErr("scenario %s injects member faults (crash, partition), which need a cluster lockbench runs itself; an external cluster takes client faults only (pause, isolate, delay, crash a client)", spec.Scenario.Name)
	}
	x, cc, err := ext.prepared()
	if err != nil {
		return nil, err
	}
	if err := spec.fitFDs(len(x.Endpoints), false); err != nil {
		return nil, &InputError{err}
	}
	worker := spec.Worker.Count > 1
	if worker && x.Prefix == "" {
		return nil, inputErr("worker %s: every worker of a run must use the same key prefix: give it (--prefix)", spec.Worker)
	}
	info, err := healthCheck(ctx, x, cc, worker)
	if err != nil {
		return nil, err
	}
	// The run's prefix is fixed here, so that the pre-flight probes it.
	runID, prefix := target{prefix: x.Prefix, parent: x.Parent}.identify(spec)
	if err := preflight(ctx, x, cc, prefix, x.grantOn(), spec.Worker); err != nil {
		return nil, err
	}
	return runTarget(ctx, spec, target{
		endpoints: x.Endpoints,
		client:    cc,
		runID:     runID,
		prefix:    prefix,
		dial:      x.DialTimeout,
		config: rundir.ClusterConfig{
			Members: info.members, ElectionMS: x.Election.Milliseconds(), Endpoints: x.Endpoints,
			External: true, TLS: cc.TLS != nil, CACert: x.CACert, Cert: x.Cert, Key: x.Key,
			User: x.User, Version: info.version,
		},
	})
}
