package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultCleanPrefix is where every run's keys live unless the user chose
// another prefix: /lockbench/<run-id>/.
const DefaultCleanPrefix = "/lockbench/"

// cleanListMax bounds the keys a Clean result lists; the count is exact.
const cleanListMax = 1000

// CleanResult is what Clean found under the prefix and, unless it was a
// dry run, deleted.
type CleanResult struct {
	Prefix string `json:"prefix"`
	// Count is the number of keys found; Keys the first of them (at most
	// 1,000), in key order.
	Count int64    `json:"count"`
	Keys  []string `json:"keys"`
	// Deleted is the number of keys deleted (0 on a dry run).
	Deleted int64 `json:"deleted"`
	// Leases is the number of distinct leases the deleted keys were
	// attached to; Revoked of them were revoked, Expired had already
	// expired, and Kept (their IDs, hex) were left because a key outside
	// the prefix still uses them, or the user may not revoke them.
	Leases  int      `json:"leases"`
	Revoked int      `json:"revoked"`
	Expired int      `json:"expired"`
	Kept    []string `json:"kept,omitempty"`
}

// Clean lists the keys under prefix on an external cluster and, when
// delete is set, deletes them and revokes the leases they were attached
// to: what a killed run left behind (its lock keys expire with their
// leases, but a run of an older lockbench left its counter without one,
// and a lease stays listed until its TTL runs out). A lease still
// attached to a key outside the prefix is left: revoking it would delete
// that key. The prefix must start with "/" and not be "/": a clean never
// touches the whole keyspace. Input errors, an endpoint that does not
// answer and a user without permission on the prefix included (as for
// RunExternal), are *InputError.
func Clean(ctx context.Context, ext External, prefix string, delete bool) (*CleanResult, error) {
	prefix, err := cleanPrefix(prefix)
	if err != nil {
		return nil, err
	}
	ext.Prefix = ""
	x, cc, err := ext.prepared()
	if err != nil {
		return nil, err
	}
	// The checks run makes first (every endpoint answers, the credentials
	// work): an endpoint that does not answer is the same *InputError,
	// naming it, and not a bare deadline on the listing.
	if _, err := healthCheck(ctx, x, cc, false); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, x.DialTimeout)
	defer cancel()
	cli, err := newClient(cctx, x, cc, x.Endpoints)
	if err != nil {
		return nil, connectErr(ctx, strings.Join(x.Endpoints, ","), x.DialTimeout, err)
	}
	defer cli.Close()
	fail := func(step string, err error) error {
		switch {
		case errors.Is(err, rpctypes.ErrPermissionDenied):
			return permissionErr(x.User, prefix, prefix, step, err)
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			// No answer to a linearizable request: no quorum, which run's
			// health check calls bad input too.
			err = connectErr(ctx, strings.Join(x.Endpoints, ","), x.DialTimeout, err)
		}
		return fmt.Errorf("%s of the keys under %s: %w", step, prefix, err)
	}
	resp, err := cli.Get(cctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(cleanListMax),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, fail("list", err)
	}
	res := &CleanResult{Prefix: prefix, Count: resp.Count, Keys: []string{}}
	for _, kv := range resp.Kvs {
		res.Keys = append(res.Keys, string(kv.Key))
	}
	if !delete || res.Count == 0 {
		return res, nil
	}
	// Bounded by the caller's ctx, not the dial timeout: a big prefix
	// takes a while to delete. The deleted keys come back with their
	// leases.
	del, err := cli.Delete(ctx, prefix, clientv3.WithPrefix(), clientv3.WithPrevKV())
	if err != nil {
		return res, fail("delete", err)
	}
	res.Deleted = del.Deleted
	leases := map[clientv3.LeaseID]bool{}
	for _, kv := range del.PrevKvs {
		if kv.Lease != 0 {
			leases[clientv3.LeaseID(kv.Lease)] = true
		}
	}
	res.Leases = len(leases)
	for id := range leases {
		res.revoke(ctx, cli, id)
	}
	slices.Sort(res.Kept)
	return res, nil
}

// cleanPrefix is the folder Clean works under: prefix with a trailing
// "/", so that /lockbench/c1 cleans /lockbench/c1/…, never
// /lockbench/c10/… nor the key /lockbench/c1 (as run's prefix). It must
// start with "/" and not be "/": a clean never touches the whole
// keyspace.
func cleanPrefix(prefix string) (string, error) {
	if prefix == "/" || !strings.HasPrefix(prefix, "/") {
		return "", inputErr("prefix %q: must start with / and not be / or empty (a clean deletes everything under it)", prefix)
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return prefix, nil
}

// revoke revokes lease id, whose keys under the prefix are deleted,
// unless it is gone or a key outside the prefix still uses it, and counts
// what it did in res.
func (res *CleanResult) revoke(ctx context.Context, cli *clientv3.Client, id clientv3.LeaseID) {
	ttl, err := cli.TimeToLive(ctx, id, clientv3.WithAttachedKeys())
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound) || (err == nil && ttl.TTL == -1):
		res.Expired++
		return
	case err != nil:
		res.Kept = append(res.Kept, fmt.Sprintf("%x", int64(id)))
		return
	}
	for _, k := range ttl.Keys {
		if !strings.HasPrefix(string(k), res.Prefix) {
			res.Kept = append(res.Kept, fmt.Sprintf("%x", int64(id)))
			return
		}
	}
	_, err = cli.Revoke(ctx, id)
	switch {
	case err == nil:
		res.Revoked++
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		res.Expired++
	default:
		res.Kept = append(res.Kept, fmt.Sprintf("%x", int64(id)))
	}
}
