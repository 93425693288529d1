package locktest

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3lock/v3lockpb"
)

func TestOutside(t *testing.T) {
	const p = "/run/1/"
	put := func(k string) *pb.RequestOp {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(k)}}}
	}
	for _, tc := range []struct {
		name   string
		method string
		req    any
		bad    bool
	}{
		{"get inside", "/etcdserverpb.KV/Range", &pb.RangeRequest{Key: []byte(p + "locks/lock")}, false},
		{"prefix range", "/etcdserverpb.KV/Range", &pb.RangeRequest{Key: []byte(p), RangeEnd: []byte("/run/10")}, false},
		{"sub range", "/etcdserverpb.KV/Range", &pb.RangeRequest{Key: []byte(p + "a"), RangeEnd: []byte(p + "b")}, false},
		{"prefix without slash", "/etcdserverpb.KV/Range", &pb.RangeRequest{Key: []byte("/run/1")}, true},
		{"range past the end", "/etcdserverpb.KV/Range", &pb.RangeRequest{Key: []byte(p), RangeEnd: []byte("/run/2")}, true},
		{"from key", "/etcdserverpb.KV/Range", &pb.RangeRequest{Key: []byte(p), RangeEnd: []byte{0}}, true},
		{"put outside", "/etcdserverpb.KV/Put", &pb.PutRequest{Key: []byte("locks/lock")}, true},
		{"delete sibling", "/etcdserverpb.KV/DeleteRange", &pb.DeleteRangeRequest{Key: []byte("/run/10")}, true},
		{"txn inside", "/etcdserverpb.KV/Txn", &pb.TxnRequest{
			Compare: []*pb.Compare{{Key: []byte(p + "k")}},
			Success: []*pb.RequestOp{put(p + "k")}}, false},
		{"txn compare outside", "/etcdserverpb.KV/Txn", &pb.TxnRequest{Compare: []*pb.Compare{{Key: []byte("/x")}}}, true},
		{"txn else outside", "/etcdserverpb.KV/Txn", &pb.TxnRequest{Failure: []*pb.RequestOp{put("/x")}}, true},
		{"watch inside", "/etcdserverpb.Watch/Watch", &pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{
			CreateRequest: &pb.WatchCreateRequest{Key: []byte(p + "k")}}}, false},
		{"watch everything", "/etcdserverpb.Watch/Watch", &pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{
			CreateRequest: &pb.WatchCreateRequest{Key: []byte{0}, RangeEnd: []byte{0}}}}, true},
		{"watch cancel", "/etcdserverpb.Watch/Watch", &pb.WatchRequest{RequestUnion: &pb.WatchRequest_CancelRequest{
			CancelRequest: &pb.WatchCancelRequest{WatchId: 1}}}, false},
		{"lock inside", "/v3lockpb.Lock/Lock", &v3lockpb.LockRequest{Name: []byte(p + "locks/lock")}, false},
		{"lock on the prefix's stem", "/v3lockpb.Lock/Lock", &v3lockpb.LockRequest{Name: []byte("/run/1")}, false},
		{"lock outside", "/v3lockpb.Lock/Lock", &v3lockpb.LockRequest{Name: []byte("lock")}, true},
		{"lease", "/etcdserverpb.Lease/LeaseGrant", &pb.LeaseGrantRequest{TTL: 5}, false},
		{"compaction", "/etcdserverpb.KV/Compact", &pb.CompactionRequest{Revision: 5}, true},
		{"unknown", "/etcdserverpb.Maintenance/Defragment", &pb.DefragmentRequest{}, true},
	} {
		got := outside(p, tc.method, tc.req)
		if (len(got) > 0) != tc.bad {
			t.Errorf("%s: outside = %q, want bad=%v", tc.name, got, tc.bad)
		}
	}
}
