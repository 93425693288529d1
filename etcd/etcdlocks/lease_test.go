package etcdlocks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockbench/lockbench/locks"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// fakeLeases grants leases 1, 2, ... (or fails with err) and keeps each
// alive until its context ends, with no server: underLease's retry is
// tested without a cluster.
type fakeLeases struct {
	clientv3.Lease
	granted clientv3.LeaseID
	err     error
}

func (f *fakeLeases) Grant(context.Context, int64) (*clientv3.LeaseGrantResponse, error) {
	if f.err != nil {
		return nil, f.err
	}
	f.granted++
	return &clientv3.LeaseGrantResponse{ID: f.granted, TTL: 5}, nil
}

func (f *fakeLeases) KeepAlive(ctx context.Context, _ clientv3.LeaseID) (<-chan *clientv3.LeaseKeepAliveResponse, error) {
	ch := make(chan *clientv3.LeaseKeepAliveResponse)
	go func() {
		<-ctx.Done()
		close(ch)
	}()
	return ch, nil
}

func (f *fakeLeases) Revoke(context.Context, clientv3.LeaseID) (*clientv3.LeaseRevokeResponse, error) {
	return &clientv3.LeaseRevokeResponse{}, nil
}

// TestUnderLease: a put refused with "lease not found" runs once more
// under a new lease, and only once however often the caller loops; other
// errors, and an error getting the lease, end it at once.
func TestUnderLease(t *testing.T) {
	notFound := rpctypes.ErrLeaseNotFound
	other := errors.New("no leader")
	for _, tc := range []struct {
		name     string
		grantErr error
		retried  bool    // on entry
		answers  []error // put's, in turn; the last repeats
		puts     int
		lease    clientv3.LeaseID // 0: none returned
		err      error
	}{
		{"first put succeeds", nil, false, []error{nil}, 1, 1, nil},
		{"lease not found, then put under a new lease", nil, false, []error{notFound, nil}, 2, 2, nil},
		{"lease not found twice: the second is returned", nil, false, []error{notFound}, 2, 2, notFound},
		{"already retried in this call: no retry", nil, true, []error{notFound}, 1, 1, notFound},
		{"another error: no retry", nil, false, []error{other}, 1, 1, other},
		{"no lease", other, false, []error{nil}, 0, 0, locks.ErrNotAcquired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cli := clientv3.NewCtxClient(ctx)
			cli.Lease = &fakeLeases{err: tc.grantErr}
			k := newLeaseKeeper(cli, Options{Options: locks.Options{TTL: 5 * time.Second}})
			defer k.close(ctx)
			var under []*lease
			retried := tc.retried
			ls, got, err := underLease(ctx, k, &retried, func(ls *lease) (clientv3.LeaseID, error) {
				under = append(under, ls)
				return ls.id, tc.answers[min(len(under), len(tc.answers))-1]
			})
			if len(under) != tc.puts {
				t.Fatalf("%d puts, want %d", len(under), tc.puts)
			}
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Errorf("err %v, want %v", err, tc.err)
			}
			switch {
			case tc.lease == 0 && ls != nil:
				t.Errorf("lease %x returned, want none", int64(ls.id))
			case tc.lease != 0 && (ls == nil || ls.id != tc.lease || got != tc.lease):
				t.Errorf("lease %v (put's answer %x), want %x", ls, int64(got), int64(tc.lease))
			}
			if len(under) == 2 && !under[0].isLost() {
				t.Error("the lease the server did not know is still in use")
			}
			if wantRetried := tc.retried || len(under) == 2; retried != wantRetried {
				t.Errorf("retried %v, want %v", retried, wantRetried)
			}
		})
	}
}
