package etcdlocks

// The handover of the queue strategy (queue.go): a releasing holder that
// knows its successors grants the next one in its release txn, and the
// successor takes the put into its own key as its grant, with no read.

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/lockbench/lockbench/locks"
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

// extensionValue begins what a releaser puts into the last key of a list
// it passed on, when that list is about to run out (refillAt): the rest
// is the keys that follow that key (encodeNext), for its owner to hand
// over along once it holds. Not a grant (it does not begin with
// handoverValue).
const extensionValue = "next"

// refillAt is the length of a releaser's list at which its handover also
// reads the keys that follow the list's last key, to extend it. A list
// shrinks by one at every handover; without an extension, the holder that
// gets it empty releases with a plain delete, and its successor needs a
// re-check read on the handoff's path. At three, the extension has two
// handoffs' time to reach the last key's owner before it holds.
const refillAt = 3

// refill is an extension read by a handover, still to be put into key to
// (by the releaser's next join).
type refill struct {
	to   kv
	next []kv
}

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
	return take(&l.next, token)
}

// takeExt returns and forgets an extension put into our key at create
// revision rev (none: nil).
func (l *queueLocker) takeExt(rev int64) []kv {
	l.mu.Lock()
	defer l.mu.Unlock()
	return take(&l.ext, rev)
}

// take returns *h's successors if they are of token, and forgets them.
func take(h *handoff, token int64) []kv {
	out := *h
	*h = handoff{}
	if out.token != token {
		return nil
	}
	return out.next
}

// takeRefill returns and forgets the extension the last handover read.
func (l *queueLocker) takeRefill() refill {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.refill
	l.refill = refill{}
	return r
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
func (l *queueLocker) pollHandover(own *clientv3.WatchChan, me kv) (int64, []kv) {
	for {
		select {
		case wr, ok := <-*own:
			h, passed, alive := l.handover(wr, ok, me)
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

// handoverGrace is how long a waiter woken by its predecessor's delete
// waits for the handover of the same txn before it re-checks by a read.
// The two events come on two watches of one stream, microseconds apart
// or in either order; a delete with no handover behind it (the releaser
// knew no successor, or crashed) is rare once lists are extended
// (refillAt), so a short wait costs little and saves the read in most
// cases where the delete came first.
const handoverGrace = time.Millisecond

// awaitHandover is pollHandover that waits up to grace for the handover.
func (l *queueLocker) awaitHandover(ctx context.Context, own *clientv3.WatchChan, me kv, grace time.Duration) (int64, []kv) {
	t := time.NewTimer(grace)
	defer t.Stop()
	for *own != nil {
		select {
		case wr, ok := <-*own:
			h, passed, alive := l.handover(wr, ok, me)
			if !alive {
				*own = nil
			}
			if h > 0 {
				return h, passed
			}
		case <-t.C:
			return 0, nil
		case <-ctx.Done():
			return 0, nil
		}
	}
	return 0, nil
}

// handover returns the revision of a handover into me in wr (0: none) with
// the successors it passed on, and whether the watch goes on. A handover
// is a put of a value that begins with handoverValue into our key at our
// create revision (not into an earlier key of the same name) after it was
// created. An extension put into the same key (extensionValue) is kept
// for the grant (takeExt).
func (l *queueLocker) handover(wr clientv3.WatchResponse, ok bool, me kv) (int64, []kv, bool) {
	if !ok || wr.Err() != nil || wr.Canceled {
		return 0, nil, false
	}
	for _, ev := range wr.Events {
		if ev.Type != mvccpb.PUT || ev.Kv.CreateRevision != me.rev || ev.Kv.ModRevision <= me.rev {
			continue
		}
		switch v := ev.Kv.Value; {
		case strings.HasPrefix(string(v), handoverValue):
			return ev.Kv.ModRevision, decodeNext(v[len(handoverValue):]), true
		case strings.HasPrefix(string(v), extensionValue):
			l.mu.Lock()
			l.ext = handoff{token: me.rev, next: decodeNext(v[len(extensionValue):])}
			l.mu.Unlock()
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
//
// Refill. A list of refillAt keys is about to run out: the txn also reads
// the oldest keys newer than its last key, to (in the state at h), and
// the releaser's next join puts them into to's key (extend). They are
// valid successors of to for the same reasons as above: if to's owner
// ever holds, its key existed at h (it was created before r ≤ h, and a
// key never comes back at the same create revision), no key between it
// and the extension's first existed at h, and none can be created after.
func (l *queueLocker) handOver(ctx context.Context, g *locks.Grant, next []kv) error {
	mine := clientv3.Compare(clientv3.CreateRevision(g.Key), "=", g.Token)
	then := []clientv3.Op{clientv3.OpDelete(g.Key), clientv3.OpPut(next[0].key, handoverValue+encodeNext(next[1:]), clientv3.WithIgnoreLease())}
	var to kv
	if len(next) == refillAt {
		to = next[len(next)-1]
		then = append(then, clientv3.OpGet(l.pfx, successors(to.rev)...))
	}
	resp, err := l.cli.Txn(ctx).
		If(mine, clientv3.Compare(clientv3.CreateRevision(next[0].key), "=", next[0].rev)).
		Then(then...).
		Else(clientv3.OpTxn([]clientv3.Cmp{mine}, []clientv3.Op{clientv3.OpDelete(g.Key)}, nil)).
		Commit()
	if err == nil && resp.Succeeded && to.key != "" {
		if ext := nextOf(resp.Responses[2:]); len(ext) > 0 {
			l.mu.Lock()
			l.refill = refill{to: to, next: ext}
			l.mu.Unlock()
		}
	}
	return err
}

// extend is the op of a join (by the client at key me) that puts the
// extension the last handover read into its key's owner's key, if that
// key is still there at its create revision (none: nil).
func (l *queueLocker) extend(me string) []clientv3.Op {
	r := l.takeRefill()
	if len(r.next) == 0 || r.to.key == me {
		return nil
	}
	return []clientv3.Op{clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(r.to.key), "=", r.to.rev)},
		[]clientv3.Op{clientv3.OpPut(r.to.key, extensionValue+encodeNext(r.next), clientv3.WithIgnoreLease())}, nil)}
}
