package etcd

import (
	"context"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/history"
)

// leaseOps are dial options that tell onOp what the connection sees of
// its leases: grants answered and revokes sent (unary), renewals answered
// on the KeepAlive streams. A renewal's answer is paired with its request
// per lease in order, as etcd answers a stream's requests one by one, so
// each answer knows when its request was sent: the server renewed at or
// after then.
func leaseOps(onOp func(backend.LeaseOp)) []grpc.DialOption {
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if r, ok := req.(*etcdserverpb.LeaseRevokeRequest); ok {
			onOp(backend.LeaseOp{Op: history.LeaseRevoke, Lease: r.ID})
		}
		sent := time.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		if g, ok := reply.(*etcdserverpb.LeaseGrantResponse); ok && err == nil && g.ID != 0 && g.Error == "" {
			onOp(backend.LeaseOp{Op: history.LeaseGrant, Lease: g.ID, TTL: time.Duration(g.TTL) * time.Second, Took: time.Since(sent)})
		}
		return err
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return s, err
		}
		return &keepAliveStream{ClientStream: s, onOp: onOp, sent: map[int64][]time.Time{}}, nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)}
}

// keepAliveStream watches a stream's lease renewals: every other stream's
// messages pass through untouched.
type keepAliveStream struct {
	grpc.ClientStream
	onOp func(backend.LeaseOp)
	mu   sync.Mutex
	// sent are the send times of each lease's unanswered renewals, oldest
	// first.
	sent map[int64][]time.Time
}

// SendMsg notes when a renewal's request was sent.
func (s *keepAliveStream) SendMsg(m any) error {
	if r, ok := m.(*etcdserverpb.LeaseKeepAliveRequest); ok {
		s.mu.Lock()
		s.sent[r.ID] = append(s.sent[r.ID], time.Now())
		s.mu.Unlock()
	}
	return s.ClientStream.SendMsg(m)
}

// RecvMsg tells onOp of each renewal answered: alive with its TTL, or
// gone.
func (s *keepAliveStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	r, ok := m.(*etcdserverpb.LeaseKeepAliveResponse)
	if err != nil || !ok {
		return err
	}
	s.mu.Lock()
	q := s.sent[r.ID]
	if len(q) == 0 {
		s.mu.Unlock()
		return nil // an answer to no request seen: not one to judge
	}
	sent := q[0]
	if len(q) == 1 {
		delete(s.sent, r.ID)
	} else {
		s.sent[r.ID] = q[1:]
	}
	s.mu.Unlock()
	op := backend.LeaseOp{Op: history.LeaseRenew, Lease: r.ID, TTL: time.Duration(r.TTL) * time.Second, Took: time.Since(sent)}
	if r.TTL <= 0 {
		op.Op, op.TTL = history.LeaseGone, 0
	}
	s.onOp(op)
	return nil
}
