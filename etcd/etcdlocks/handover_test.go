package etcdlocks

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestHandoverEvent: only a put of handoverValue into our key at our
// create revision, after it, is a handover; a put into an earlier key of
// the same name (an earlier acquisition on the lease), our own join, or
// any other value is not.
func TestHandoverEvent(t *testing.T) {
	me := kv{key: "/l/k", rev: 10}
	put := func(create, mod int64, value string) *clientv3.Event {
		return &clientv3.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte(me.key), CreateRevision: create, ModRevision: mod, Value: []byte(value)}}
	}
	passed := []kv{{"/l/a", 11}, {"/l/b", 12}}
	for _, tc := range []struct {
		name string
		ev   *clientv3.Event
		want int64
		next []kv
	}{
		{"handover", put(10, 15, handoverValue), 15, nil},
		{"handover passing successors on", put(10, 15, handoverValue+encodeNext(passed)), 15, passed},
		{"handover with an unreadable rest", put(10, 15, handoverValue+"{"), 15, nil},
		{"our join", put(10, 10, ""), 0, nil},
		{"an earlier key of the same name", put(7, 9, handoverValue), 0, nil},
		{"another value", put(10, 15, "x"), 0, nil},
		{"a delete", &clientv3.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte(me.key), ModRevision: 15}}, 0, nil},
	} {
		h, next, alive := (&queueLocker{}).handover(clientv3.WatchResponse{Events: []*clientv3.Event{tc.ev}}, true, me)
		if h != tc.want || !slices.Equal(next, tc.next) || !alive {
			t.Errorf("%s: handover = %d, %v, %v; want %d, %v, true", tc.name, h, next, alive, tc.want, tc.next)
		}
	}
	if h, _, alive := (&queueLocker{}).handover(clientv3.WatchResponse{}, false, me); h != 0 || alive {
		t.Errorf("closed watch: handover = %d, alive %v; want 0, false", h, alive)
	}
	// An extension is not a grant; it is kept for the grant at our create
	// revision only.
	l := &queueLocker{}
	for _, ev := range []*clientv3.Event{put(7, 9, extensionValue+encodeNext(passed[:1])), put(10, 12, extensionValue+encodeNext(passed))} {
		if h, _, _ := l.handover(clientv3.WatchResponse{Events: []*clientv3.Event{ev}}, true, me); h != 0 {
			t.Errorf("extension read as a handover at %d", h)
		}
	}
	if ext := l.takeExt(9); ext != nil {
		t.Errorf("takeExt(9) = %v, want none", ext)
	}
	l.handover(clientv3.WatchResponse{Events: []*clientv3.Event{put(10, 12, extensionValue+encodeNext(passed))}}, true, me)
	if ext := l.takeExt(me.rev); !slices.Equal(ext, passed) {
		t.Errorf("takeExt(%d) = %v, want %v", me.rev, ext, passed)
	}
	if ext := l.takeExt(me.rev); ext != nil {
		t.Errorf("takeExt twice = %v, want none the second time", ext)
	}
}

// TestAwaitHandover: a handover that comes within the grace is taken;
// other events are not a handover; a closed watch or no event gives none.
func TestAwaitHandover(t *testing.T) {
	me := kv{key: "/l/k", rev: 10}
	event := func(create, mod int64, value string) clientv3.WatchResponse {
		return clientv3.WatchResponse{Events: []*clientv3.Event{{Type: mvccpb.PUT,
			Kv: &mvccpb.KeyValue{Key: []byte(me.key), CreateRevision: create, ModRevision: mod, Value: []byte(value)}}}}
	}
	l := &queueLocker{}
	ch := make(chan clientv3.WatchResponse, 2)
	go func() {
		time.Sleep(time.Millisecond)
		ch <- event(7, 8, handoverValue) // an earlier key of the name
		ch <- event(10, 15, handoverValue)
	}()
	own := clientv3.WatchChan(ch)
	if h, _ := l.awaitHandover(context.Background(), &own, me, time.Minute); h != 15 {
		t.Errorf("awaitHandover = %d, want 15", h)
	}
	if h, _ := l.awaitHandover(context.Background(), &own, me, time.Millisecond); h != 0 || own == nil {
		t.Errorf("no event: awaitHandover = %d (watch kept: %v), want 0, kept", h, own != nil)
	}
	close(ch)
	if h, _ := l.awaitHandover(context.Background(), &own, me, time.Minute); h != 0 || own != nil {
		t.Errorf("closed watch: awaitHandover = %d (watch dropped: %v), want 0, dropped", h, own == nil)
	}
}

// TestWaitTurnSkipsEarlierKeys: a kept predecessor's watch (watchPred)
// still holds the deletes of the name's earlier keys; only a delete after
// the revision the predecessor was seen at is its own.
func TestWaitTurnSkipsEarlierKeys(t *testing.T) {
	del := func(rev int64) clientv3.WatchResponse {
		return clientv3.WatchResponse{Events: []*clientv3.Event{{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte("/l/p"), ModRevision: rev}}}}
	}
	wch := make(chan clientv3.WatchResponse, 3)
	wch <- del(4) // an earlier key of the name, before we saw the predecessor at 10
	wch <- del(10)
	wch <- del(12)
	own := new(clientv3.WatchChan)
	l := &queueLocker{}
	d, handed, _, err := l.waitTurn(context.Background(), nil, wch, own, kv{"/l/me", 9}, 10)
	if err != nil || handed || d != 12 {
		t.Fatalf("waitTurn = %d, handed %v, %v; want 12, false, nil", d, handed, err)
	}
}
