package etcd

import (
	"context"
	"sync"
	"sync/atomic"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"

	"github.com/lockbench/lockbench/backend"
)

// revisions is what a lock client's connection has seen of etcd's
// revisions (backend.Revisions): every answer's header revision, and the
// revision each of its writes created. Reading answers costs one atomic
// max per answer; the client's requests are not changed.
type revisions struct {
	seen atomic.Int64
	sent atomic.Uint64 // requests sent so far: a write's place
	mu   sync.Mutex
	// wrote are the latest writes answered: the place each was sent at
	// and the revision it created, oldest first, at most keptWrites.
	wrote []write
}

// write is one answered write: when it was sent (revisions.sent) and the
// revision it created.
type write struct {
	sent uint64
	rev  int64
}

// keptWrites bounds the writes a connection remembers: WroteSince is
// asked right after a release, whose writes are the latest.
const keptWrites = 16

var _ backend.Revisions = (*Connection)(nil)

// Seen is the highest revision an answer to the connection carried.
func (c *Connection) Seen() int64 { return c.revs.seen.Load() }

// Mark is the count of requests sent so far.
func (c *Connection) Mark() uint64 { return c.revs.sent.Load() }

// WroteSince is the highest revision created by a write sent after mark.
func (c *Connection) WroteSince(mark uint64) int64 {
	c.revs.mu.Lock()
	defer c.revs.mu.Unlock()
	var rev int64
	for _, w := range c.revs.wrote {
		if w.sent > mark {
			rev = max(rev, w.rev)
		}
	}
	return rev
}

// dialOptions read every answer's header, unary and streamed (watch
// events, keepalive answers), and each write's created revision.
func (r *revisions) dialOptions() []grpc.DialOption {
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		at := r.sent.Add(1)
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err == nil {
			r.saw(reply)
			if rev := createdRevision(reply); rev > 0 {
				r.wrote1(at, rev)
			}
		}
		return err
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return s, err
		}
		return &headerStream{ClientStream: s, r: r}, nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)}
}

// saw raises seen to m's header revision, when m has a header.
func (r *revisions) saw(m any) {
	h, ok := m.(interface {
		GetHeader() *etcdserverpb.ResponseHeader
	})
	if !ok {
		return
	}
	rev := h.GetHeader().GetRevision()
	for {
		cur := r.seen.Load()
		if rev <= cur || r.seen.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// wrote1 remembers a write sent at place at that created rev.
func (r *revisions) wrote1(at uint64, rev int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.wrote) == keptWrites {
		r.wrote = append(r.wrote[:0], r.wrote[1:]...)
	}
	r.wrote = append(r.wrote, write{sent: at, rev: rev})
}

// createdRevision is the revision a write's answer says it created, 0
// when the answer is no write's or the write changed nothing: etcd gives
// a put, a delete that deleted and a txn whose branch did either the
// revision of its change, and anything else the store's current one.
func createdRevision(reply any) int64 {
	switch r := reply.(type) {
	case *etcdserverpb.PutResponse:
		return r.GetHeader().GetRevision()
	case *etcdserverpb.DeleteRangeResponse:
		if r.Deleted > 0 {
			return r.GetHeader().GetRevision()
		}
	case *etcdserverpb.TxnResponse:
		if changed(r.Responses) {
			return r.GetHeader().GetRevision()
		}
	}
	return 0
}

// changed reports whether a txn branch's answers show a change: a put,
// or a delete that deleted, at any depth.
func changed(ops []*etcdserverpb.ResponseOp) bool {
	for _, op := range ops {
		switch {
		case op.GetResponsePut() != nil:
			return true
		case op.GetResponseDeleteRange().GetDeleted() > 0:
			return true
		case op.GetResponseTxn() != nil && changed(op.GetResponseTxn().Responses):
			return true
		}
	}
	return false
}

// headerStream is a stream whose answers' header revisions are seen.
type headerStream struct {
	grpc.ClientStream
	r *revisions
}

// RecvMsg sees each answer's header.
func (s *headerStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == nil {
		s.r.saw(m)
	}
	return err
}
