package etcdlocks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
)

// DefaultRPCTimeout is the per-request deadline lockbench's clients use:
// twice the 500 ms election timeout of the embedded cluster, so that a
// request stranded by a leader's death gives up soon after a new leader is
// there to take the retry.
const DefaultRPCTimeout = time.Second

// RPCTimeoutOf is the deadline a configured value stands for: 0 means
// DefaultRPCTimeout, a negative value none (0).
func RPCTimeoutOf(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultRPCTimeout
	case d < 0:
		return 0
	}
	return d
}

// ErrRPCTimeout marks a request that got no answer within its deadline.
// Its outcome is unknown: a write may still be applied later.
var ErrRPCTimeout = errors.New("etcd request unanswered")

// blockingRPCs are the unary methods whose answer is meant to wait as long
// as the caller does: the v3lock service's Lock returns only once the lock
// is held, the v3election service's Campaign once the caller leads. And
// the login: clientv3 bounds Authenticate by the dial timeout (at New and
// when it fetches a token again), which is what a user sets for it.
var blockingRPCs = map[string]bool{"/v3lockpb.Lock/Lock": true, "/v3electionpb.Election/Campaign": true,
	"/etcdserverpb.Auth/Authenticate": true}

// RPCDeadline returns the dial options that give every unary request at most
// d to answer (the caller's own, shorter deadline still applies).
//
// Why: a write sent to a follower is forwarded to the leader; if that
// leader dies, etcd's server waits out its request timeout (5 s + two
// election timeouts) before it answers, although a new leader exists after
// one election timeout. A lock strategy stuck there stalls every waiter
// behind it. With a deadline the strategy gets its answer early, treats
// the outcome as unknown as it must, and settles it (e.g. revokes its
// lease) on the new leader.
//
// The interceptor runs inside clientv3's retry interceptor, which would
// re-send any request that failed with a deadline of its own making — a
// write too. So an expired deadline comes back as ErrRPCTimeout (wrapping
// context.DeadlineExceeded), which that interceptor does not retry.
// Streams (watch, lease keepalive) are not bounded. d ≤ 0 returns no
// option.
func RPCDeadline(d time.Duration) []grpc.DialOption {
	if d <= 0 {
		return nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(rpcDeadlineInterceptor(d))}
}

func rpcDeadlineInterceptor(d time.Duration) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if blockingRPCs[method] {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		rctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		err := invoker(rctx, method, req, reply, cc, opts...)
		if err != nil && ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%s: %w after %v (%w)", method, ErrRPCTimeout, d, context.DeadlineExceeded)
		}
		return err
	}
}
