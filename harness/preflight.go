package harness

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/runner"
)

// preflightKey is the key, under a run's prefix, that the permission
// pre-flight writes and deletes.
const preflightKey = ".lockbench-preflight"

// preflightTTL is the TTL of the pre-flight's lease, in seconds: it is
// revoked at once, and expires by itself if lockbench dies in between.
const preflightTTL = 5

// preflight checks, before a run on an external cluster starts, that its
// user may do under prefix what the run will do: grant and revoke a
// lease, put a key with that lease, read and delete it. Without it a user
// without permission on the prefix got a run whose every acquire failed,
// read as a violation, and a read-only user a harness failure; now either
// is an *InputError naming the prefix, the step and what to grant. The
// probe key is deleted and its lease revoked on every path, so a run that
// is refused leaves nothing on the cluster.
// grantOn is the prefix the message tells to grant: the run's own, or
// /lockbench/ for a run-id prefix, which is new on every run.
func preflight(ctx context.Context, x External, cc clientv3.Config, prefix, grantOn string, worker runner.Worker) (err error) {
	pctx, cancel := context.WithTimeout(ctx, x.DialTimeout)
	defer cancel()
	cli, err := newClient(pctx, x, cc, x.Endpoints)
	if err != nil {
		return connectErr(ctx, strings.Join(x.Endpoints, ","), x.DialTimeout, err)
	}
	defer cli.Close()
	key := prefix + preflightKey
	if worker.Count > 1 {
		// Beside the other workers', where their health checks expect it.
		key = prefix + runner.WorkerPrepKeys[1] + strconv.Itoa(worker.Index)
	}
	denied := func(step string, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, rpctypes.ErrPermissionDenied) {
			return permissionErr(x.User, prefix, grantOn, step, err)
		}
		return connectErr(ctx, strings.Join(x.Endpoints, ","), x.DialTimeout, fmt.Errorf("pre-flight %s under %s: %w", step, prefix, err))
	}
	lease, err := cli.Grant(pctx, preflightTTL)
	if err != nil {
		return denied("lease grant", err)
	}
	defer func() {
		if _, rerr := cli.Revoke(pctx, lease.ID); rerr != nil && err == nil {
			err = denied("lease revoke", rerr)
		}
	}()
	if _, err := cli.Put(pctx, key, "", clientv3.WithLease(lease.ID)); err != nil {
		return denied("put of "+key, err)
	}
	if _, err := cli.Get(pctx, key); err != nil {
		// The put went through: the lease's revoke (deferred) deletes it.
		return denied("read of "+key, err)
	}
	if _, err := cli.Delete(pctx, key); err != nil {
		return denied("delete of "+key, err)
	}
	return nil
}

// permissionErr says that user may not do step under prefix, and how to
// grant it on grantOn.
func permissionErr(user, prefix, grantOn, step string, err error) error {
	who := "the client (no --user)"
	if user != "" {
		who = fmt.Sprintf("user %q", user)
	}
	return inputErr("%s may not use prefix %s (%s: %v): a run reads, writes and deletes keys under its prefix, with leases; grant one of the user's roles readwrite on it, e.g. etcdctl role grant-permission ROLE --prefix=true readwrite %s",
		who, prefix, step, err, grantOn)
}
