package etcd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/etcd/cluster"
)

// KeepTTL is the TTL of the admin lease that the counter and a worker's
// meeting keys live under, kept alive by the admin client for the whole
// run: the counter of a killed run (SIGKILL, where no clean-up runs)
// expires this long after, instead of staying on an external cluster for
// ever. Long enough to outlast a leader election or a member crash that
// interrupts the keepalive stream; clients write the counter with
// WithIgnoreLease, so their writes keep it under this lease.
const KeepTTL = 30 // seconds

// opTimeout bounds each admin operation that is not bounded by its
// caller's context.
const opTimeout = 5 * time.Second

// Admin is the run's own etcd client (backend.Admin): it also watches the
// run's keys (backend.Observer), revokes a client's lease
// (backend.LeaseRevoker), is the workers' meeting place (backend.Meeting)
// and compacts the store (chaos.Store's Compact).
type Admin struct {
	Connection
	// lease is Keep's lease (0: none); stopKeepAlive ends its keepalive.
	lease         clientv3.LeaseID
	stopKeepAlive context.CancelFunc
}

var (
	_ backend.Observer     = (*Admin)(nil)
	_ backend.LeaseRevoker = (*Admin)(nil)
	_ backend.Meeting      = (*Admin)(nil)
	_ backend.KeyLister    = (*Admin)(nil)
)

// Keep grants the admin lease, kept alive until Release.
func (a *Admin) Keep(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	lease, err := a.Client.Grant(cctx, KeepTTL)
	if err != nil {
		return fmt.Errorf("admin lease: %w", err)
	}
	a.lease = lease.ID
	kctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	a.stopKeepAlive = stop
	ka, err := a.Client.KeepAlive(kctx, lease.ID)
	if err != nil {
		return fmt.Errorf("admin lease: keep alive: %w", err)
	}
	go func() {
		for range ka { // drained, or the client stops sending
		}
	}()
	return nil
}

// Lease is the lease Keep granted (0: none yet).
func (a *Admin) Lease() clientv3.LeaseID { return a.lease }

// InitCounter puts the counter at key, 0, under the admin lease.
func (a *Admin) InitCounter(ctx context.Context, key string) error {
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if _, err := a.Client.Put(cctx, key, "0", clientv3.WithLease(a.lease)); err != nil {
		return fmt.Errorf("initialise counter: %w", err)
	}
	return nil
}

// Release stops the admin lease's keepalive and revokes it.
func (a *Admin) Release(ctx context.Context) error {
	a.stopKeepAlive()
	if a.lease == 0 {
		return nil
	}
	_, err := a.Client.Revoke(ctx, a.lease)
	return err
}

// Clean deletes every key under prefix.
func (a *Admin) Clean(ctx context.Context, prefix string) error {
	_, err := a.Client.Delete(ctx, prefix, clientv3.WithPrefix())
	return err
}

// Keys lists the keys under prefix, with each one's create revision and
// lease (a key under a lease is ephemeral). Not keys-only: etcd answers
// that from its index, without leases.
func (a *Admin) Keys(ctx context.Context, prefix string) ([]backend.Key, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	resp, err := a.Client.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list keys under %s: %w", prefix, err)
	}
	out := make([]backend.Key, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		out[i] = backend.Key{Name: string(kv.Key), Created: kv.CreateRevision, Owner: kv.Lease, Ephemeral: kv.Lease != 0}
	}
	return out, nil
}

// Revision is the store's revision now.
func (a *Admin) Revision(ctx context.Context, prefix string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	resp, err := a.Client.Get(ctx, prefix, clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

// WatchDeletes watches the keys under prefix for deletes from revision
// from on. The watch asks for deletes only and without their previous
// values: a previous value would cost the member a read of its store for
// every release of the run (measured: a few percent of a contended run's
// throughput).
func (a *Admin) WatchDeletes(ctx context.Context, prefix string, from int64, onDelete func(key string, rev int64)) {
	a.watch(ctx, prefix, from, []clientv3.OpOption{clientv3.WithFilterPut()}, func(ev *clientv3.Event) {
		if ev.Type == mvccpb.DELETE {
			onDelete(string(ev.Kv.Key), ev.Kv.ModRevision)
		}
	})
}

// WatchChanges watches the keys under prefix for creations and deletes
// from revision from on (backend.ChangeWatcher), without previous values
// (see WatchDeletes): a put event carries its key's lease itself.
func (a *Admin) WatchChanges(ctx context.Context, prefix string, from int64, onChange func(backend.KeyChange)) {
	a.watch(ctx, prefix, from, nil, func(ev *clientv3.Event) {
		switch {
		case ev.Type == mvccpb.DELETE:
			onChange(backend.KeyChange{Key: string(ev.Kv.Key), Revision: ev.Kv.ModRevision, Deleted: true})
		case ev.IsCreate():
			onChange(backend.KeyChange{Key: string(ev.Kv.Key), Revision: ev.Kv.ModRevision, Lease: ev.Kv.Lease})
		}
	})
}

// watch calls on with every event under prefix from revision from on,
// with the watch options opts, until ctx ends, opening a broken watch
// again where it broke.
func (a *Admin) watch(ctx context.Context, prefix string, from int64, opts []clientv3.OpOption, on func(*clientv3.Event)) {
	opts = append(opts, clientv3.WithPrefix())
	for ctx.Err() == nil {
		wch := a.Client.Watch(ctx, prefix, append(opts, clientv3.WithRev(from))...)
		for wr := range wch {
			if wr.Err() != nil {
				break
			}
			for _, ev := range wr.Events {
				from = ev.Kv.ModRevision + 1
				on(ev)
			}
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// LeaseAlive asks etcd whether the lease is alive: etcd answers a lease
// it does not have with TTL -1, and a live one with its remaining TTL in
// whole seconds, rounded down, so a live 1 s lease answers 0.
func (a *Admin) LeaseAlive(ctx context.Context, lease int64) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	ttl, err := a.Client.TimeToLive(ctx, clientv3.LeaseID(lease))
	if err != nil {
		return false, err
	}
	return ttl.TTL >= 0, nil
}

// RevokeLease revokes the lease.
func (a *Admin) RevokeLease(ctx context.Context, lease int64) error {
	_, err := a.Client.Revoke(ctx, clientv3.LeaseID(lease))
	return err
}

// Compact compacts the store to its current revision (physical: and waits
// until the backend has removed the old revisions).
func (a *Admin) Compact(ctx context.Context, physical bool) error {
	_, err := cluster.Compact(ctx, a.Client, physical)
	return err
}

// Put writes key, empty, under the admin lease when there is one, and
// returns the revision it was written at.
func (a *Admin) Put(ctx context.Context, key, value string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	var opts []clientv3.OpOption
	if a.lease != 0 {
		opts = append(opts, clientv3.WithLease(a.lease))
	}
	resp, err := a.Client.Put(ctx, key, value, opts...)
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

// Claim puts key under the admin lease unless it exists
// (backend.Claimer): one transaction, so that of two runs only one wins.
func (a *Admin) Claim(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	resp, err := a.Client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, "", clientv3.WithLease(a.lease))).
		Commit()
	switch {
	case err != nil:
		return fmt.Errorf("claim %s: %w", key, err)
	case !resp.Succeeded:
		return backend.ErrClaimed
	}
	return nil
}

// Values are the values of the keys under prefix, by key.
func (a *Admin) Values(ctx context.Context, prefix string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	resp, err := a.Client.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = string(kv.Value)
	}
	return out, nil
}

// AwaitPuts watches from revision from: it sees each put even if the key
// is gone by then (a worker's done goes with its lease when it closes).
func (a *Admin) AwaitPuts(ctx context.Context, key string, from int64, n int) (int, error) {
	opts := []clientv3.OpOption{clientv3.WithRev(from), clientv3.WithFilterDelete()}
	if strings.HasSuffix(key, "/") {
		opts = append(opts, clientv3.WithPrefix())
	}
	seen := map[string]bool{}
	for wr := range a.Client.Watch(ctx, key, opts...) {
		if wr.Err() != nil {
			return len(seen), wr.Err()
		}
		for _, ev := range wr.Events {
			seen[string(ev.Kv.Key)] = true
		}
		if len(seen) >= n {
			return len(seen), nil
		}
	}
	return len(seen), ctx.Err()
}

// Queue is the lease of each key under prefix by create revision. Not
// keys-only: etcd 3.7 answers that from its index, without leases.
func (a *Admin) Queue(ctx context.Context, prefix string) ([]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	resp, err := a.Client.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		out[i] = kv.Lease
	}
	return out, nil
}
