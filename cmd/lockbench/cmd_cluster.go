package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/lockbench/lockbench/cluster"
)

func init() { commands["cluster"] = cmdCluster }

// cmdCluster keeps an embedded cluster up until ctx ends (Ctrl-C), for
// manual experiments and as an "external" cluster for lockbench run
// --endpoints. Ending it is its normal way out: exit 0, and the cluster's
// data folder (certificates included) is gone.
func cmdCluster(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("cluster", "cluster [--members N] [--tls] [--unsafe-no-fsync] [--verbose]", stdout)
	members := fs.Int("members", cluster.DefaultMembers, "etcd cluster members (1..9)")
	useTLS := fs.Bool("tls", false, "serve clients over https with a generated CA, server and client certificate (client certificates required)")
	noFsync := fs.Bool("unsafe-no-fsync", false, "disable fsync in etcd (faster; a crash may lose data)")
	verbose := fs.Bool("verbose", false, "show etcd's own logs")
	if help, err := parse(fs, args); help || err != nil {
		return exitPass, err
	}
	if fs.NArg() > 0 {
		return 0, usageError{fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0))}
	}
	if *members < 1 || *members > 9 {
		return 0, usageError{fmt.Errorf("--members %d: must be 1..9", *members)}
	}
	c, err := cluster.Start(ctx, cluster.Options{Members: *members, TLS: *useTLS, UnsafeNoFsync: *noFsync, Verbose: *verbose})
	if err != nil {
		if ctx.Err() != nil {
			return exitInterrupted, err
		}
		return exitError, fmt.Errorf("start etcd cluster: %w", err)
	}
	dir := c.DataDir()
	printCluster(stdout, c)
	<-ctx.Done()
	if err := c.Close(); err != nil {
		return exitError, fmt.Errorf("close etcd cluster: %w", err)
	}
	fmt.Fprintf(stderr, "lockbench cluster: stopped; %s removed\n", dir)
	return exitPass, nil
}

// printCluster tells the user how to reach the cluster, with commands
// ready to paste.
func printCluster(w io.Writer, c *cluster.Cluster) {
	eps := strings.Join(c.Endpoints(), ",")
	mode := "plain http"
	if c.TLS() {
		mode = "TLS, client certificates required"
	}
	fsync := ""
	if c.UnsafeNoFsync() {
		fsync = ", no fsync"
	}
	fmt.Fprintf(w, "etcd cluster up: %d members (%s%s), tick %s, election %s\n", len(c.Members()), mode, fsync, c.Tick(), c.Election())
	fmt.Fprintf(w, "endpoints: %s\n", eps)
	fmt.Fprintf(w, "data:      %s (removed on exit)\n", c.DataDir())
	creds := ""
	if c.TLS() {
		ca, cert, key := c.TLSFiles()
		fmt.Fprintf(w, "cacert:    %s\ncert:      %s\nkey:       %s\n", ca, cert, key)
		creds = fmt.Sprintf(" --cacert %s --cert %s --key %s", shellQuote(ca), shellQuote(cert), shellQuote(key))
	}
	fmt.Fprintf(w, "\nTry:\n  etcdctl --endpoints %s%s lock mylock\n", eps, creds)
	fmt.Fprintf(w, "  lockbench run --endpoints %s%s --lock mutex --scenario contention\n", eps, creds)
	fmt.Fprintf(w, "\nCtrl-C stops the cluster and removes its data folder.\n")
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
