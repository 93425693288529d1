package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/lockbench/lockbench/etcd/cluster"
)

// clusterOptions are the cluster command's flags.
type clusterOptions struct {
	cluster clusterFlags
	tls     bool
	output  outputFlags
}

// clusterCommand is `lockbench cluster`: an embedded cluster kept up
// until Ctrl-C, for manual experiments and as an "external" cluster for
// lockbench run --endpoints. Ctrl-C ends it as it ends every command:
// exit 130, with the cluster's data folder (certificates included) gone.
func clusterCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "cluster", "cluster [--members N] [--tls] [--unsafe-no-fsync] [--json] [--verbose]")
	var o clusterOptions
	o.cluster.register(fs)
	fs.BoolVar(&o.tls, "tls", false, "serve clients over https with a generated CA, server and client certificate (client certificates required)")
	o.output.register(fs, "how to reach the cluster (one line, once it is up)", true)
	if err := fs.parseFlagsOnly(args); err != nil {
		return err
	}
	return runCluster(ctx, e, o)
}

// runCluster starts the cluster, prints how to reach it and keeps it up
// until ctx ends.
func runCluster(ctx context.Context, e *env, o clusterOptions) error {
	opts, err := o.cluster.options()
	if err != nil {
		return err
	}
	if opts.EtcdBin != "" {
		return badInputf("--etcd-bin: lockbench cluster keeps only the embedded cluster up (member processes: run, suite, bench)")
	}
	if opts, err = o.cluster.withData(e, opts); err != nil {
		return err
	}
	opts.TLS = o.tls
	c, err := cluster.Start(ctx, opts)
	if err != nil {
		if ctx.Err() != nil {
			return interrupted(err)
		}
		return fmt.Errorf("start etcd cluster: %w", err)
	}
	dir := c.DataDir()
	if o.output.json {
		err = json.NewEncoder(e.stdout).Encode(clusterInfoOf(c))
	} else {
		printCluster(e.stdout, c)
	}
	if err == nil {
		<-ctx.Done()
	}
	if cerr := c.Close(); cerr != nil {
		return interrupted(fmt.Errorf("close etcd cluster: %w", cerr))
	}
	if err != nil {
		return fmt.Errorf("print the cluster: %w", err)
	}
	fmt.Fprintf(o.output.info(e), "lockbench cluster: stopped; %s removed\n", dir)
	return errInterrupted
}

// clusterInfo is cluster --json: what printCluster says, for a script.
type clusterInfo struct {
	Members    int      `json:"members"`
	Endpoints  []string `json:"endpoints"`
	TLS        bool     `json:"tls"`
	Fsync      bool     `json:"fsync"`
	TickMS     int64    `json:"tick_ms"`
	ElectionMS int64    `json:"election_ms"`
	// Data is the data folder, removed when the cluster stops.
	Data string `json:"data"`
	// CACert, Cert and Key are the client's TLS files (--tls).
	CACert string `json:"cacert,omitempty"`
	Cert   string `json:"cert,omitempty"`
	Key    string `json:"key,omitempty"`
}

func clusterInfoOf(c *cluster.Cluster) clusterInfo {
	info := clusterInfo{Members: len(c.Members()), Endpoints: c.Endpoints(), TLS: c.TLS(), Fsync: !c.UnsafeNoFsync(),
		TickMS: c.Tick().Milliseconds(), ElectionMS: c.Election().Milliseconds(), Data: c.DataDir()}
	if c.TLS() {
		info.CACert, info.Cert, info.Key = c.TLSFiles()
	}
	return info
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
