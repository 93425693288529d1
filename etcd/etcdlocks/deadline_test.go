package etcdlocks

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func invokeWithDeadline(d time.Duration, ctx context.Context, method string, invoker grpc.UnaryInvoker) error {
	return rpcDeadlineInterceptor(d)(ctx, method, nil, nil, nil, invoker)
}

func TestRPCDeadline(t *testing.T) {
	const d = 30 * time.Millisecond
	hang := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	}
	deadlineOf := func(got *time.Duration) grpc.UnaryInvoker {
		return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
			if dl, ok := ctx.Deadline(); ok {
				*got = time.Until(dl)
			} else {
				*got = -1
			}
			return nil
		}
	}

	t.Run("an unanswered request fails with ErrRPCTimeout, which clientv3 does not retry", func(t *testing.T) {
		err := invokeWithDeadline(d, context.Background(), "/etcdserverpb.KV/Txn", hang)
		if !errors.Is(err, ErrRPCTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want ErrRPCTimeout wrapping context.DeadlineExceeded", err)
		}
		// clientv3's retry interceptor re-sends anything whose gRPC code is
		// DeadlineExceeded or Canceled while the caller's ctx lives.
		if c := status.Code(err); c == codes.DeadlineExceeded || c == codes.Canceled {
			t.Fatalf("gRPC code %v would be retried by clientv3", c)
		}
	})
	t.Run("the caller's own deadline passes through unchanged", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		err := invokeWithDeadline(d, ctx, "/etcdserverpb.KV/Txn", hang)
		if errors.Is(err, ErrRPCTimeout) || status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("err = %v, want the caller's DeadlineExceeded", err)
		}
	})
	t.Run("a request without deadline gets one", func(t *testing.T) {
		var got time.Duration
		if err := invokeWithDeadline(d, context.Background(), "/etcdserverpb.KV/Range", deadlineOf(&got)); err != nil {
			t.Fatal(err)
		}
		if got <= 0 || got > d {
			t.Fatalf("deadline in %v, want within (0, %v]", got, d)
		}
	})
	t.Run("the v3lock Lock call waits as long as the caller", func(t *testing.T) {
		var got time.Duration
		if err := invokeWithDeadline(d, context.Background(), "/v3lockpb.Lock/Lock", deadlineOf(&got)); err != nil {
			t.Fatal(err)
		}
		if got != -1 {
			t.Fatalf("Lock got a deadline in %v, want none", got)
		}
	})
	t.Run("the login keeps the dial timeout it was given", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		var got time.Duration
		if err := invokeWithDeadline(d, ctx, "/etcdserverpb.Auth/Authenticate", deadlineOf(&got)); err != nil {
			t.Fatal(err)
		}
		if got <= d {
			t.Fatalf("Authenticate got a deadline in %v, want the caller's hour", got)
		}
	})
	t.Run("zero or negative: no option", func(t *testing.T) {
		if n := len(RPCDeadline(0)) + len(RPCDeadline(-time.Second)); n != 0 {
			t.Fatalf("got %d options, want 0", n)
		}
	})
}
