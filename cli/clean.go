package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/suite"
)

const cleanSynopsis = "clean --endpoints URLS [--prefix /lockbench/ | --shard I/N] [--yes] [flags]\n\n" +
	"Lists the keys under --prefix on an external etcd cluster; with --yes deletes\n" +
	"them and revokes the leases they were attached to (not a lease that a key\n" +
	"outside --prefix still uses: it is named and left to expire). A run's keys\n" +
	"live under /lockbench/<run-id>/ and go at its end; a killed run's lock keys\n" +
	"and counter expire with their leases, but a run of an older lockbench left\n" +
	"its counter without one. A shard of suite --endpoints (--shard I/N, no\n" +
	"--prefix) keeps its keys under /lockbench/shardIofN/: --shard I/N cleans\n" +
	"that shard's alone."

// cleanOptions are clean's flags.
type cleanOptions struct {
	ext      extFlags // --endpoints, --prefix and the access flags
	yes      bool
	shard    string
	output   outputFlags
	set      map[string]bool
	external *harness.External // built by check
}

// cleanCommand is `lockbench clean`: the keys a killed run may have left
// under a prefix of an external cluster, listed, and deleted with --yes.
func cleanCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "clean", cleanSynopsis)
	var o cleanOptions
	fs.StringVar(&o.ext.endpoints, "endpoints", "", "comma-separated client URLs of the etcd cluster (http:// or https://)")
	fs.StringVar(&o.ext.prefix, "prefix", harness.DefaultCleanPrefix, "key prefix to list or delete, as a folder (a trailing / is added: /lockbench/c1 never covers /lockbench/c10/); must start with / and not be /")
	o.ext.registerAccess(fs)
	fs.StringVar(&o.shard, "shard", "", "the prefix of shard I of N of suite --endpoints --shard I/N (I/N, e.g. 2/4): /lockbench/shardIofN/; not with --prefix")
	fs.BoolVar(&o.yes, "yes", false, "delete the keys (default: only list them)")
	o.output.register(fs, "what it found and did ({prefix, count, keys, deleted, leases, revoked, expired, kept})", true)
	if err := fs.parseFlagsOnly(args); err != nil {
		return err
	}
	o.set = fs.given()
	if err := o.check(); err != nil {
		return err
	}
	return runClean(ctx, e, &o)
}

// check validates the flags and builds the cluster to clean.
func (o *cleanOptions) check() error {
	if !o.set["endpoints"] {
		return badInputf("--endpoints is required: give the cluster's client URLs, e.g. http://127.0.0.1:2379")
	}
	x, err := o.ext.access(o.set)
	if err != nil {
		return err
	}
	if o.set["shard"] {
		if o.set["prefix"] {
			return badInputf("--shard %s and --prefix %s: give one (--shard I/N means --prefix %sshardIofN/)", o.shard, o.ext.prefix, harness.DefaultCleanPrefix)
		}
		sh, err := suite.ParseShard(o.shard)
		if err != nil {
			return badInputf("--shard %w", err)
		}
		o.ext.prefix = sh.Prefix()
	}
	if p := o.ext.prefix; p == "/" || !strings.HasPrefix(p, "/") {
		return badInputf("--prefix %q: must start with / and not be / or empty (clean deletes everything under it)", p)
	}
	if err := x.Validate(); err != nil {
		return badInput(err)
	}
	o.external = x
	return nil
}

// runClean lists (and with --yes deletes) the keys and says what it did.
func runClean(ctx context.Context, e *env, o *cleanOptions) error {
	if err := probeEtcd(ctx, o.external); err != nil {
		return err
	}
	res, err := harness.Clean(ctx, *o.external, o.ext.prefix, o.yes)
	if res == nil {
		return harnessErr(ctx, err, nil)
	}
	if o.output.json {
		if jerr := writeJSON(e.stdout, res); jerr != nil && err == nil {
			err = jerr
		}
	} else {
		for _, k := range res.Keys {
			fmt.Fprintln(e.stdout, k)
		}
		if more := res.Count - int64(len(res.Keys)); more > 0 {
			fmt.Fprintf(e.stdout, "… and %d more\n", more)
		}
	}
	info := o.output.info(e)
	switch {
	case err != nil:
		return harnessErr(ctx, err, nil)
	case res.Count == 0:
		fmt.Fprintf(info, "lockbench clean: no keys under %s\n", res.Prefix)
	case o.yes:
		fmt.Fprintf(info, "lockbench clean: deleted %d keys under %s%s\n", res.Deleted, res.Prefix, leasesDone(res))
		if len(res.Kept) > 0 {
			// Not informational: something is left behind.
			fmt.Fprintf(e.stderr, "lockbench clean: %d leases remain (%s): still attached to keys outside %s, or this user may not revoke them; they expire with their TTL\n",
				len(res.Kept), strings.Join(res.Kept, ", "), res.Prefix)
		}
	default:
		fmt.Fprintf(info, "lockbench clean: %d keys under %s; run again with --yes to delete them and revoke their leases\n", res.Count, res.Prefix)
	}
	return nil
}

// leasesDone is what a clean did with the deleted keys' leases.
func leasesDone(res *harness.CleanResult) string {
	if res.Leases == 0 {
		return " (no leases attached)"
	}
	s := fmt.Sprintf("; revoked %d of their %d leases", res.Revoked, res.Leases)
	if res.Expired > 0 {
		s += fmt.Sprintf(" (%d had expired)", res.Expired)
	}
	return s
}
