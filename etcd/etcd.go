// Package etcd is etcd as a lock backend (backend.Backend): how a lock
// client connects (an etcd client whose requests are counted and bounded,
// told each lease it is granted), the lease a client's Lockers share, and
// the counter resource in etcd's store, fenced by the grant's key. The
// strategies are etcd/etcdlocks'; the cluster lockbench starts is package
// cluster's.
package etcd

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/locks"
)

// DefaultDialTimeout bounds connecting a client when Backend has none.
const DefaultDialTimeout = 5 * time.Second

// Backend is etcd for one run. The zero value dials with the defaults.
type Backend struct {
	// ClientConfig is the base client configuration (TLS, credentials);
	// Endpoints, DialTimeout and Logger are filled in.
	ClientConfig clientv3.Config
	// DialTimeout bounds connecting each client (0: DefaultDialTimeout).
	DialTimeout time.Duration
	// KeepAlive is the lock clients' lease refresh policy (empty: the
	// default).
	KeepAlive etcdlocks.KeepAlive
	// RPCTimeout bounds each unary request of a lock client (see
	// etcdlocks.RPCDeadline); 0 means etcdlocks.DefaultRPCTimeout, < 0 none.
	RPCTimeout time.Duration
}

var _ backend.Backend = Backend{}

// Name is etcd's backend name.
func (Backend) Name() string { return etcdlocks.Backend }

// Dial connects a lock client's etcd client to endpoints: its RPCs are
// counted and its unary requests bounded by RPCTimeout.
func (b Backend) Dial(_ context.Context, endpoints []string, opts backend.DialOptions) (backend.Connection, error) {
	c := &Connection{keepAlive: b.KeepAlive}
	extra := append(c.rpcs.DialOptions(), etcdlocks.RPCDeadline(etcdlocks.RPCTimeoutOf(b.RPCTimeout))...)
	extra = append(extra, c.revs.dialOptions()...)
	if opts.OnLease != nil {
		extra = append(extra, leaseGrants(opts.OnLease))
	}
	if opts.OnLeaseOp != nil {
		extra = append(extra, leaseOps(opts.OnLeaseOp)...)
	}
	cli, err := b.client(endpoints, extra)
	if err != nil {
		return nil, err
	}
	c.Client = cli
	return c, nil
}

// Admin connects the run's own etcd client, which bounds each of its
// operations itself.
func (b Backend) Admin(_ context.Context, endpoints []string) (backend.Admin, error) {
	cli, err := b.client(endpoints, nil)
	if err != nil {
		return nil, err
	}
	return &Admin{Connection: Connection{Client: cli}, stopKeepAlive: func() {}}, nil
}

// client connects an etcd client with b's settings and the extra dial
// options.
func (b Backend) client(endpoints []string, extra []grpc.DialOption) (*clientv3.Client, error) {
	cc := b.ClientConfig
	cc.Endpoints = endpoints
	cc.DialTimeout = cmp.Or(b.DialTimeout, DefaultDialTimeout)
	cc.Logger = zap.NewNop()
	cc.DialOptions = append(slices.Clip(cc.DialOptions), extra...)
	return clientv3.New(cc)
}

// leaseGrants is a dial option that tells onGrant the ID of every lease
// the connection is granted.
func leaseGrants(onGrant func(int64)) grpc.DialOption {
	return grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if g, ok := reply.(*etcdserverpb.LeaseGrantResponse); ok && err == nil && g.ID != 0 {
			onGrant(g.ID)
		}
		return err
	})
}

// Connection is one etcd client (backend.Connection).
type Connection struct {
	// Client is the etcd client, for what the run does on etcd alone.
	Client    *clientv3.Client
	rpcs      etcdlocks.RPCCounter
	keepAlive etcdlocks.KeepAlive
	revs      revisions
}

// NewSession starts the client's one lease for all its Lockers, as one
// Session serves a process's every Mutex (etcdlocks.ClientLease).
func (c *Connection) NewSession(_ context.Context, ttl time.Duration) (backend.Session, error) {
	lease, err := etcdlocks.NewClientLease(c.Client, etcdlocks.Options{Options: locks.Options{TTL: ttl}, KeepAlive: c.keepAlive})
	if err != nil {
		return nil, err
	}
	return &session{conn: &etcdlocks.Conn{Client: c.Client, KeepAlive: c.keepAlive, Lease: lease}}, nil
}

// ReadCounter reads the counter at key.
func (c *Connection) ReadCounter(ctx context.Context, key string) (int64, error) {
	resp, err := c.Client.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	if len(resp.Kvs) == 0 {
		return 0, backend.ErrNoCounter
	}
	return strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
}

// WriteCounter writes v at key, which must exist, keeping its lease (the
// admin client's: the run's). Fenced, only while fence's key still exists at its
// create revision (its token): a stale holder is rejected.
func (c *Connection) WriteCounter(ctx context.Context, key string, v int64, fence *locks.Grant) (bool, error) {
	put := clientv3.OpPut(key, strconv.FormatInt(v, 10), clientv3.WithIgnoreLease())
	if fence == nil {
		_, err := c.Client.Do(ctx, put)
		return err == nil, err
	}
	tr, err := c.Client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(fence.Key), "=", fence.Token)).Then(put).Commit()
	if err != nil {
		return false, err
	}
	return tr.Succeeded, nil
}

// RPCs counts the lock client's RPCs.
func (c *Connection) RPCs() int64 { return c.rpcs.Count() }

// Close closes the client.
func (c *Connection) Close() error { return c.Client.Close() }

// session is a client's shared lease.
type session struct{ conn *etcdlocks.Conn }

func (s *session) Conn() locks.Conn                { return s.conn }
func (s *session) Lease() int64                    { return int64(s.conn.Lease.ID()) }
func (s *session) Close(ctx context.Context) error { return s.conn.Lease.Close(ctx) }
