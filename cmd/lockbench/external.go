package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lockbench/lockbench/harness"
)

// extFlags are run's flags for an external cluster.
type extFlags struct {
	endpoints, cacert, cert, key, user, password, prefix *string
	dial                                                 *time.Duration
}

func externalFlags(fs *flag.FlagSet) *extFlags {
	e := &extFlags{
		endpoints: fs.String("endpoints", "", "comma-separated client URLs of an external etcd cluster (http:// or https://); no embedded cluster is started, member faults are refused"),
		cacert:    fs.String("cacert", "", "external cluster: CA certificate (PEM) that verifies the servers (https; default: the system roots)"),
		cert:      fs.String("cert", "", "external cluster: client certificate (PEM), with --key"),
		key:       fs.String("key", "", "external cluster: client private key (PEM), with --cert"),
		user:      fs.String("user", "", "external cluster: user name (etcd auth), with --password"),
		password:  fs.String("password", "", "external cluster: password for --user (never written to the run folder); better in the environment as "+passwordEnv+", which ps does not show"),
		prefix:    fs.String("prefix", "", "external cluster: key namespace of the run, deleted at the end; must start with / and be empty (default /lockbench/<run-id>/)"),
		dial:      fs.Duration("dial-timeout", harness.DefaultDialTimeout, "external cluster: how long to wait for each endpoint to answer"),
	}
	return e
}

// passwordEnv holds the password when --password is not given.
const passwordEnv = "LOCKBENCH_PASSWORD"

// embeddedOnly are run's flags that configure the embedded cluster.
var embeddedOnly = []string{"members", "unsafe-no-fsync", "verbose"}

// parse returns the external cluster, or nil when --endpoints is not set.
// set holds the names of the flags given.
func (e *extFlags) parse(set map[string]bool) (*harness.External, error) {
	if !set["endpoints"] {
		for _, name := range []string{"cacert", "cert", "key", "user", "password", "prefix", "dial-timeout"} {
			if set[name] {
				return nil, fmt.Errorf("--%s is for an external cluster: give --endpoints too", name)
			}
		}
		return nil, nil
	}
	for _, name := range embeddedOnly {
		if set[name] {
			return nil, fmt.Errorf("--%s configures the embedded cluster; it does not apply with --endpoints", name)
		}
	}
	var eps []string
	for _, ep := range strings.Split(*e.endpoints, ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			eps = append(eps, ep)
		}
	}
	if len(eps) == 0 {
		return nil, fmt.Errorf("--endpoints %q: give at least one client URL, e.g. https://127.0.0.1:2379", *e.endpoints)
	}
	if set["prefix"] && (!strings.HasPrefix(*e.prefix, "/") || *e.prefix == "/") {
		return nil, fmt.Errorf("--prefix %q: must start with / and not be / (the run deletes its whole prefix at the end)", *e.prefix)
	}
	if d := *e.dial; d <= 0 {
		return nil, fmt.Errorf("--dial-timeout %s: must be > 0", d)
	}
	password := *e.password
	if !set["password"] {
		password = os.Getenv(passwordEnv)
	}
	return &harness.External{
		Endpoints: eps, CACert: *e.cacert, Cert: *e.cert, Key: *e.key,
		User: *e.user, Password: password, Prefix: *e.prefix, DialTimeout: *e.dial,
	}, nil
}
