package etcdlocks

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc"
)

// RPCCounter counts the RPCs one etcd client sends. Add its DialOptions to
// clientv3.Config.DialOptions:
//
//	var n locks.RPCCounter
//	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialOptions: n.DialOptions()})
//
// What counts as one RPC: every unary call (Range, Txn, LeaseGrant, the
// v3lock Lock and Unlock, ...) counts once, and so does every message the
// client sends on a stream (a watch create or cancel request, one lease
// keepalive); opening a stream counts nothing by itself. So a watch that is
// created and later cancelled counts 2, a KeepAliveOnce counts 1, and the
// auto keepalive policy costs one per TTL/3.
//
// The interceptors are chained after clientv3's own retry interceptor, so
// they see every attempt that goes on the wire: a call that the client
// retries counts once per attempt. Requests that etcd's server makes on a
// client's behalf (the v3lock service's own Txn, Get and watch) are not
// this client's RPCs and are not counted.
//
// The zero value is ready to use; it is safe for concurrent use.
type RPCCounter struct {
	unary, streams, streamMsgs atomic.Int64
}

// RPCStats breaks a count down.
type RPCStats struct {
	// Unary is the number of unary calls.
	Unary int64
	// Streams is the number of streams opened (not part of Count).
	Streams int64
	// StreamMsgs is the number of messages sent on streams.
	StreamMsgs int64
}

// Count is the number of RPCs so far: unary calls plus stream messages.
func (c *RPCCounter) Count() int64 { return c.unary.Load() + c.streamMsgs.Load() }

// Stats returns the counts by kind.
func (c *RPCCounter) Stats() RPCStats {
	return RPCStats{Unary: c.unary.Load(), Streams: c.streams.Load(), StreamMsgs: c.streamMsgs.Load()}
}

// DialOptions returns a unary and a stream client interceptor that count
// every RPC on the connection.
func (c *RPCCounter) DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(c.unaryInterceptor),
		grpc.WithChainStreamInterceptor(c.streamInterceptor),
	}
}

func (c *RPCCounter) unaryInterceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	c.unary.Add(1)
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (c *RPCCounter) streamInterceptor(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	c.streams.Add(1)
	return &countingStream{ClientStream: s, c: c}, nil
}

type countingStream struct {
	grpc.ClientStream
	c *RPCCounter
}

func (s *countingStream) SendMsg(m any) error {
	s.c.streamMsgs.Add(1)
	return s.ClientStream.SendMsg(m)
}
