package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
	Prefix string
	// Count is the number of keys found; Keys the first of them (at most
	// 1,000), in key order.
	Count int64
	Keys  []string
	// Deleted is the number of keys deleted (0 on a dry run).
	Deleted int64
}

// Clean lists the keys under prefix on an external cluster and, when
// delete is set, deletes them: what a killed run left behind (its lock
// keys expire with their leases, but a run of an older lockbench left its
// counter without one). The prefix must start with "/" and not be "/": a
// clean never touches the whole keyspace. Input errors, an endpoint that
// does not answer included (as for RunExternal), are *InputError.
func Clean(ctx context.Context, ext External, prefix string, delete bool) (*CleanResult, error) {
	if prefix == "" || prefix == "/" || !strings.HasPrefix(prefix, "/") {
		return nil, inputErr("prefix %q: must start with / and not be / or empty (a clean deletes everything under it)", prefix)
	}
	ext.Prefix = ""
	x, cc, err := ext.prepared()
	if err != nil {
		return nil, err
	}
	// The checks run makes first (every endpoint answers, the credentials
	// work): an endpoint that does not answer is the same *InputError,
	// naming it, and not a bare deadline on the listing.
	if _, err := healthCheck(ctx, x, cc); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, x.DialTimeout)
	defer cancel()
	cli, err := newClient(cctx, x, cc, x.Endpoints)
	if err != nil {
		return nil, connectErr(ctx, strings.Join(x.Endpoints, ","), x.DialTimeout, err)
	}
	defer cli.Close()
	resp, err := cli.Get(cctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(cleanListMax),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			// No answer to a linearizable read: no quorum, which run's
			// health check calls bad input too.
			err = connectErr(ctx, strings.Join(x.Endpoints, ","), x.DialTimeout, err)
		}
		return nil, fmt.Errorf("list keys under %s: %w", prefix, err)
	}
	res := &CleanResult{Prefix: prefix, Count: resp.Count}
	for _, kv := range resp.Kvs {
		res.Keys = append(res.Keys, string(kv.Key))
	}
	if !delete || res.Count == 0 {
		return res, nil
	}
	// Bounded by the caller's ctx, not the dial timeout: a big prefix
	// takes a while to delete.
	del, err := cli.Delete(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return res, fmt.Errorf("delete keys under %s: %w", prefix, err)
	}
	res.Deleted = del.Deleted
	return res, nil
}
