package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lockbench/lockbench/harness"
)

func init() { commands["clean"] = cmdClean }

// cmdClean lists (and with --yes deletes) the keys under a prefix of an
// external cluster: what a killed run may have left there. Self-contained
// so that it can move with the CLI package as it is.
func cmdClean(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("clean", "clean --endpoints URLS [--prefix /lockbench/] [--yes] [flags]\n\n"+
		"Lists the keys under --prefix on an external etcd cluster; with --yes deletes\n"+
		"them. A run's keys live under /lockbench/<run-id>/ and go at its end; a killed\n"+
		"run's lock keys and counter expire with their leases, but a run of an older\n"+
		"lockbench left its counter without one.", stdout)
	endpoints := fs.String("endpoints", "", "comma-separated client URLs of the etcd cluster (http:// or https://)")
	prefix := fs.String("prefix", harness.DefaultCleanPrefix, "key prefix to list or delete; must start with / and not be /")
	yes := fs.Bool("yes", false, "delete the keys (default: only list them)")
	cacert := fs.String("cacert", "", "CA certificate (PEM) that verifies the servers (https)")
	cert := fs.String("cert", "", "client certificate (PEM), with --key")
	key := fs.String("key", "", "client private key (PEM), with --cert")
	user := fs.String("user", "", "user name (etcd auth); the password from "+passwordEnv)
	dial := fs.Duration("dial-timeout", harness.DefaultDialTimeout, "how long to wait for the cluster to answer")
	if help, err := parse(fs, args); help || err != nil {
		return exitPass, err
	}
	if fs.NArg() > 0 {
		return 0, usageError{fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0))}
	}
	var eps []string
	for _, ep := range strings.Split(*endpoints, ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			eps = append(eps, ep)
		}
	}
	if len(eps) == 0 {
		return 0, usageError{errors.New("--endpoints: give the cluster's client URLs, e.g. http://127.0.0.1:2379")}
	}
	if p := *prefix; p == "" || p == "/" || !strings.HasPrefix(p, "/") {
		return 0, usageError{fmt.Errorf("--prefix %q: must start with / and not be / or empty (clean deletes everything under it)", p)}
	}
	ext := harness.External{Endpoints: eps, CACert: *cacert, Cert: *cert, Key: *key, User: *user,
		Password: os.Getenv(passwordEnv), DialTimeout: *dial}
	res, err := harness.Clean(ctx, ext, *prefix, *yes)
	if err != nil {
		var ie *harness.InputError
		switch {
		case ctx.Err() != nil:
			return exitInterrupted, err
		case errors.As(err, &ie):
			return 0, usageError{err}
		}
		return exitError, err
	}
	for _, k := range res.Keys {
		fmt.Fprintln(stdout, k)
	}
	if more := res.Count - int64(len(res.Keys)); more > 0 {
		fmt.Fprintf(stdout, "… and %d more\n", more)
	}
	switch {
	case res.Count == 0:
		fmt.Fprintf(stderr, "lockbench clean: no keys under %s\n", res.Prefix)
	case *yes:
		fmt.Fprintf(stderr, "lockbench clean: deleted %d keys under %s\n", res.Deleted, res.Prefix)
	default:
		fmt.Fprintf(stderr, "lockbench clean: %d keys under %s; run again with --yes to delete them\n", res.Count, res.Prefix)
	}
	return exitPass, nil
}
