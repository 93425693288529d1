package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3lock/v3lockpb"
	"go.uber.org/zap"
)

// ErrLockServiceStuck means a member's server-side lock service (v3lock)
// no longer hands a lock to a waiter. The service waits for a key's
// deletion through its member's in-process client, whose watch stream
// deadlocks when many watches are cancelled at once (etcd issues #18879
// and #20716, in v3.7.3): from then on no waiter on that member is woken,
// and the member cannot stop. A run on such a cluster would measure the
// bug, not the lock.
var ErrLockServiceStuck = errors.New("etcd's lock service there no longer wakes waiters (etcd issues #18879, #20716)")

// LockServiceWait bounds one member's probe hand-over.
const LockServiceWait = 2 * time.Second

// CheckLockService hands a lock from one holder to one waiter on each
// running member's lock service, and returns ErrLockServiceStuck naming
// the members where the waiter was not granted within LockServiceWait.
// Its keys are under /lockbench/probe-* and its leases are revoked.
func (c *Cluster) CheckLockService(ctx context.Context) error {
	var stuck []string
	for _, m := range c.members {
		if !m.Running() {
			continue
		}
		tlsCfg, err := c.ClientTLSConfig()
		if err != nil {
			return err
		}
		ok, err := probeLockService(ctx, tlsCfg, m.Index, m.ClientURL)
		if err != nil {
			return fmt.Errorf("member %d: lock service probe: %w", m.Index, err)
		}
		if !ok {
			stuck = append(stuck, strconv.Itoa(m.Index))
		}
	}
	switch len(stuck) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("member %s: %w", stuck[0], ErrLockServiceStuck)
	}
	return fmt.Errorf("members %s: %w", strings.Join(stuck, ", "), ErrLockServiceStuck)
}

// probeLockService reports whether the lock service of member index, at
// url, handed a held lock to a waiting caller in time.
func probeLockService(ctx context.Context, tlsCfg *tls.Config, index int, url string) (bool, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, TLS: tlsCfg,
		DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return false, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*LockServiceWait)
	defer cancel()
	// Step 1: two leases; revoking them at the end removes whatever keys
	// the probe left.
	var leases [2]clientv3.LeaseID
	for i := range leases {
		g, err := cli.Grant(ctx, 10)
		if err != nil {
			return false, err
		}
		leases[i] = g.ID
		defer func(id clientv3.LeaseID) {
			rctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			cli.Revoke(rctx, id)
		}(g.ID)
	}
	lc := v3lockpb.NewLockClient(cli.ActiveConnection())
	name := fmt.Sprintf("/lockbench/probe-%d-%d", index, time.Now().UnixNano())
	// Step 2: take the lock; nobody holds it, so nothing is watched yet.
	held, err := lc.Lock(ctx, &v3lockpb.LockRequest{Name: []byte(name), Lease: int64(leases[0])})
	if err != nil {
		return false, err
	}
	// Step 3: a second caller waits for it: the service watches the
	// holder's key through the member's in-process client.
	wctx, cancelWait := context.WithTimeout(ctx, LockServiceWait)
	defer cancelWait()
	granted := make(chan error, 1)
	go func() {
		_, err := lc.Lock(wctx, &v3lockpb.LockRequest{Name: []byte(name), Lease: int64(leases[1])})
		granted <- err
	}()
	// Step 4: once the waiter's key is queued behind ours, release.
	for {
		select {
		case err := <-granted:
			return false, fmt.Errorf("the waiter was answered before the release: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
		resp, err := cli.Get(wctx, name+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			<-granted
			return false, ignoreDeadline(wctx, err)
		}
		if resp.Count >= 2 {
			break
		}
	}
	if _, err := lc.Unlock(ctx, &v3lockpb.UnlockRequest{Key: held.Key}); err != nil {
		<-granted
		return false, err
	}
	// Step 5: the waiter must now be granted.
	if err := <-granted; err != nil {
		return false, ignoreDeadline(wctx, err)
	}
	return true, nil
}

// ignoreDeadline turns an error caused by wctx's deadline into nil: the
// probe's answer is then "not in time", not a failure to probe.
func ignoreDeadline(wctx context.Context, err error) error {
	if errors.Is(wctx.Err(), context.DeadlineExceeded) {
		return nil
	}
	return err
}
