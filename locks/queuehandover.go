package locks

// The handover of the queue strategy (queue.go): a releasing holder that
// knows its successors grants the next one in its release txn, and the
// successor takes the put into its own key as its grant, with no read.

import (
	"context"
	"encoding/json"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// handoff is a grant's known successors: the oldest keys newer than the
// grant's, oldest first, at their create revisions, as one read saw them
// (or a handover passed them on).
type handoff struct {
	token int64
	next  []kv
}

// handoverValue begins what a releasing holder writes into its
// successor's key: that put is the successor's grant. The rest of the
// value is the releaser's other known successors (encodeNext), which the
// new holder hands over to in turn.
const handoverValue = "granted"

// maxNext bounds the successors one read fetches and a handover passes on.
const maxNext = 16

// setNext records next (none: none known) as the successors of the grant
// at token.
func (l *queueLocker) setNext(token int64, next []kv) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next = handoff{token: token, next: next}
}

// takeNext returns and forgets the known successors of the grant at token.
func (l *queueLocker) takeNext(token int64) []kv {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.next
	l.next = handoff{}
	if h.token != token {
		return nil
	}
	return h.next
}

// longer is the longer of two lists of successors (a, if as long): both
// are the oldest keys newer than ours at some revision, so either may be
// handed over along, and the longer reaches further down the queue.
func longer(a, b []kv) []kv {
	if len(b) > len(a) {
		return b
	}
	return a
}

// pollHandover returns the revision of a handover into me already
// delivered on *own (0: none yet) and the successors it passed on,
// without waiting.
func pollHandover(own *clientv3.WatchChan, me kv) (int64, []kv) {
	for {
		select {
		case wr, ok := <-*own:
			h, passed, alive := handover(wr, ok, me)
			if !alive {
				*own = nil
			}
			if h > 0 || !alive {
				return h, passed
			}
		default:
			return 0, nil
		}
	}
}

// handover returns the revision of a handover into me in wr (0: none) with
// the successors it passed on, and whether the watch goes on. A handover
// is a put of a value that begins with handoverValue into our key at our
// create revision (not into an earlier key of the same name) after it was
// created.
func handover(wr clientv3.WatchResponse, ok bool, me kv) (int64, []kv, bool) {
	if !ok || wr.Err() != nil || wr.Canceled {
		return 0, nil, false
	}
	for _, ev := range wr.Events {
		if ev.Type == mvccpb.PUT && ev.Kv.CreateRevision == me.rev && ev.Kv.ModRevision > me.rev &&
			strings.HasPrefix(string(ev.Kv.Value), handoverValue) {
			return ev.Kv.ModRevision, decodeNext(ev.Kv.Value[len(handoverValue):]), true
		}
	}
	return 0, nil, true
}

// nextKey is one passed-on successor in a handover's value.
type nextKey struct {
	Key string `json:"k"`
	Rev int64  `json:"r"`
}

// encodeNext is the part of a handover's value after handoverValue: the
// successors passed on, oldest first.
func encodeNext(next []kv) string {
	if len(next) == 0 {
		return ""
	}
	out := make([]nextKey, len(next))
	for i, k := range next {
		out[i] = nextKey{k.key, k.rev}
	}
	b, _ := json.Marshal(out) // strings and integers: cannot fail
	return string(b)
}

// decodeNext reads encodeNext's output; anything else reads as none (the
// grant does not depend on it: with no successor known, the new holder
// releases with a plain delete).
func decodeNext(b []byte) []kv {
	var in []nextKey
	if len(b) == 0 || json.Unmarshal(b, &in) != nil {
		return nil
	}
	next := make([]kv, 0, len(in))
	for _, k := range in {
		next = append(next, kv{key: k.Key, rev: k.Rev})
	}
	return next
}

// handOver deletes g's key if it is still g's and, in the same txn (at
// revision h), grants the lock to next[0] by putting handoverValue into
// its key, if that key is still there at its create revision. next are
// the oldest keys newer than g's, oldest first, in the state at some
// revision r that a read saw (g's re-check, or, passed on by
// handovers, of an earlier holder's). Why next[0] holds from h on:
//   - g holds: its key is still there (the compare), and it was the oldest
//     key when g was granted; no key older than it can join later (a new
//     key's create revision is above every existing one).
//   - No key between g's and next[0]'s (by create revision) is left: none
//     existed at r (g's key was there, or was one of the keys the read saw
//     before next, and next[0] the next one), and none can be created
//     after r (its create revision would be above r ≥ next[0].rev).
//   - next[0]'s key is still there at h, at its create revision (the
//     compare): its owner has not left, and its lease has not ended (etcd
//     #11456).
//
// So at h, with g's key deleted, next[0]'s key is the oldest of the queue
// and exists: its owner holds. The put keeps that key's lease
// (WithIgnoreLease) and changes neither its name nor its create revision
// (the fencing token). Its value passes next[1:] on: for the same reasons,
// next[1] is then the oldest key newer than next[0]'s, and so on. If a
// compare fails, the else branch deletes g's key alone, if it is still
// g's, as deleteOwn does; a waiter behind it learns of that from its
// predecessor's watch and re-checks.
func (l *queueLocker) handOver(ctx context.Context, g *Grant, next []kv) error {
	mine := clientv3.Compare(clientv3.CreateRevision(g.Key), "=", g.Token)
	_, err := l.cli.Txn(ctx).
		If(mine, clientv3.Compare(clientv3.CreateRevision(next[0].key), "=", next[0].rev)).
		Then(clientv3.OpDelete(g.Key), clientv3.OpPut(next[0].key, handoverValue+encodeNext(next[1:]), clientv3.WithIgnoreLease())).
		Else(clientv3.OpTxn([]clientv3.Cmp{mine}, []clientv3.Op{clientv3.OpDelete(g.Key)}, nil)).
		Commit()
	return err
}
