package runner

import (
	"context"
	"fmt"
	"slices"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/scenarios"
)

// newEtcdClient connects a client. A lock client (counter not nil) has its
// RPCs counted and its unary requests bounded by Config.RPCTimeout; the
// admin client bounds its own operations (opTimeout). extra are further
// dial options.
func (r *runner) newEtcdClient(endpoints []string, counter *etcdlocks.RPCCounter, extra ...grpc.DialOption) (*clientv3.Client, error) {
	cc := r.cfg.ClientConfig
	cc.Endpoints = endpoints
	cc.DialTimeout = r.cfg.DialTimeout
	cc.Logger = zap.NewNop()
	if counter != nil {
		cc.DialOptions = append(slices.Clip(cc.DialOptions), counter.DialOptions()...)
		cc.DialOptions = append(cc.DialOptions, etcdlocks.RPCDeadline(etcdlocks.RPCTimeoutOf(r.cfg.RPCTimeout))...)
	}
	cc.DialOptions = append(slices.Clip(cc.DialOptions), extra...)
	return clientv3.New(cc)
}

// leaseGrants is a dial option that tells onGrant the ID of every lease
// the connection is granted: the runner learns a waiter's lease before any
// grant of the lock names it.
func leaseGrants(onGrant func(clientv3.LeaseID)) grpc.DialOption {
	return grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if g, ok := reply.(*etcdserverpb.LeaseGrantResponse); ok && err == nil && g.ID != 0 {
			onGrant(clientv3.LeaseID(g.ID))
		}
		return err
	})
}

// sharedConn is an etcd connection several lock clients use
// (Config.SharedConns).
type sharedConn struct {
	cli  *clientv3.Client
	rpcs etcdlocks.RPCCounter
}

// CheckSharedConns rejects a SharedConns setting the scenario cannot use:
// Run checks it, and so can a caller before it starts anything.
func CheckSharedConns(sc scenarios.Scenario, n int) error {
	switch {
	case n < 0:
		return fmt.Errorf("shared connections %d: must be ≥ 0 (0: one connection per client)", n)
	case n > 0 && sc.Needs().ClientProxy:
		return fmt.Errorf("scenario %s has client faults, which act on one client's own connection: run it without shared connections", sc.Name)
	}
	return nil
}

// rpcsOf is client c's RPC count. On a shared connection the RPCs of its
// clients cannot be told apart: its count is shared out evenly among them
// (the total stays exact).
func (r *runner) rpcsOf(c *client) int64 {
	n := len(r.shared)
	if n == 0 {
		return c.conn.rpcs.Count()
	}
	at := c.pos
	total := r.shared[at%n].rpcs.Count()
	users := int64((len(r.clients) - at%n + n - 1) / n) // clients i with i mod n == at mod n
	k := int64(at / n)                                  // this client's place among them
	share := total / users
	if k < total%users {
		share++
	}
	return share
}
