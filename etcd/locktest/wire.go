package locktest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3election/v3electionpb"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3lock/v3lockpb"
	"google.golang.org/grpc"
)

// wireCheck inspects every request a Locker's client sends and records
// those that name a key outside the namespace: reads included, which a
// check of the keyspace afterwards cannot see.
type wireCheck struct {
	prefix string
	mu     sync.Mutex
	bad    []string       // distinct violations, first seen first
	seen   map[string]int // how often each happened
}

// violations lists each distinct violation once, with how often it
// happened.
func (w *wireCheck) violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, v := range w.bad {
		if n := w.seen[v]; n > 1 {
			v = fmt.Sprintf("%s (%d times)", v, n)
		}
		out = append(out, v)
	}
	return out
}

func (w *wireCheck) check(method string, req any) {
	for _, v := range outside(w.prefix, method, req) {
		w.mu.Lock()
		if w.seen == nil {
			w.seen = map[string]int{}
		}
		if w.seen[v]++; w.seen[v] == 1 {
			w.bad = append(w.bad, v)
		}
		w.mu.Unlock()
	}
}

func (w *wireCheck) dialOptions() []grpc.DialOption {
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		w.check(method, req)
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		return &checkedStream{ClientStream: s, w: w, method: method}, nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)}
}

type checkedStream struct {
	grpc.ClientStream
	w      *wireCheck
	method string
}

func (s *checkedStream) SendMsg(m any) error {
	s.w.check(s.method, m)
	return s.ClientStream.SendMsg(m)
}

// outside lists what in one request reaches outside prefix. Requests that
// name no key (leases, cluster and status calls) are fine; a request of a
// kind this function does not know is reported, so that a strategy cannot
// pass by using an unchecked call.
func outside(prefix, method string, req any) []string {
	var bad []string
	rng := func(what string, key, end []byte) {
		if !inRange(prefix, key, end) {
			bad = append(bad, fmt.Sprintf("%s %s %s", method, what, describe(key, end)))
		}
	}
	// name is a key prefix under which the server puts name + "/" + lease.
	name := func(what string, n []byte) { rng(what, append(append([]byte{}, n...), '/'), nil) }
	switch r := req.(type) {
	case *pb.RangeRequest:
		rng("range", r.Key, r.RangeEnd)
	case *pb.PutRequest:
		rng("put", r.Key, nil)
	case *pb.DeleteRangeRequest:
		rng("delete", r.Key, r.RangeEnd)
	case *pb.TxnRequest:
		bad = append(bad, txnOutside(prefix, method, r)...)
	case *pb.CompactionRequest:
		bad = append(bad, method+" compacts the whole keyspace")
	case *pb.WatchRequest:
		if c := r.GetCreateRequest(); c != nil {
			rng("watch", c.Key, c.RangeEnd)
		}
	case *v3lockpb.LockRequest:
		name("lock", r.Name)
	case *v3lockpb.UnlockRequest:
		rng("unlock", r.Key, nil)
	case *v3electionpb.CampaignRequest:
		name("campaign", r.Name)
	case *v3electionpb.LeaderRequest:
		name("leader", r.Name)
	case *v3electionpb.ProclaimRequest:
		rng("proclaim", r.GetLeader().GetKey(), nil)
	case *v3electionpb.ResignRequest:
		rng("resign", r.GetLeader().GetKey(), nil)
	default:
		if !keyless(method) {
			bad = append(bad, fmt.Sprintf("%s: request %T not checked by locktest", method, req))
		}
	}
	return bad
}

func txnOutside(prefix, method string, t *pb.TxnRequest) []string {
	var bad []string
	for _, c := range t.Compare {
		bad = append(bad, outside(prefix, method+" compare", &pb.RangeRequest{Key: c.Key, RangeEnd: c.RangeEnd})...)
	}
	for _, ops := range [][]*pb.RequestOp{t.Success, t.Failure} {
		for _, op := range ops {
			var r any
			switch {
			case op.GetRequestRange() != nil:
				r = op.GetRequestRange()
			case op.GetRequestPut() != nil:
				r = op.GetRequestPut()
			case op.GetRequestDeleteRange() != nil:
				r = op.GetRequestDeleteRange()
			case op.GetRequestTxn() != nil:
				r = op.GetRequestTxn()
			default:
				continue
			}
			bad = append(bad, outside(prefix, method, r)...)
		}
	}
	return bad
}

// keyless reports methods that touch no key by name. Revoking a lease
// deletes its keys, but those were put (and checked) by this client.
func keyless(method string) bool {
	for _, p := range []string{"/etcdserverpb.Lease/", "/etcdserverpb.Cluster/", "/etcdserverpb.Maintenance/Status", "/etcdserverpb.Auth/Authenticate"} {
		if strings.HasPrefix(method, p) {
			return true
		}
	}
	return false
}

// inRange reports whether the key range [key, end) lies inside prefix: a
// single key (end empty) must start with it, a range must start at or
// after it and end no later than the first key after every key with it.
func inRange(prefix string, key, end []byte) bool {
	p := []byte(prefix)
	if len(end) == 0 {
		return bytes.HasPrefix(key, p)
	}
	if bytes.Equal(end, []byte{0}) {
		return false // from key to the end of the keyspace
	}
	return bytes.Compare(key, p) >= 0 && bytes.Compare(end, prefixEnd(p)) <= 0
}

// prefixEnd is the first key after every key starting with p (etcd's
// GetPrefixRangeEnd).
func prefixEnd(p []byte) []byte {
	end := append([]byte{}, p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return []byte{0}
}

func describe(key, end []byte) string {
	switch {
	case len(end) == 0:
		return fmt.Sprintf("%q", key)
	case bytes.Equal(end, []byte{0}):
		return fmt.Sprintf("[%q, end of keyspace)", key)
	default:
		return fmt.Sprintf("[%q, %q)", key, end)
	}
}
