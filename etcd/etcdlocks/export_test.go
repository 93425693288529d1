package etcdlocks

import (
	"strings"

	"github.com/lockbench/lockbench/locks"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// PredWatchOf is the key name and channel of l's kept predecessor's watch
// (queue only; "" and nil: none).
func PredWatchOf(l locks.Locker) (string, clientv3.WatchChan) {
	q := l.(*queueLocker)
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pred.key, q.pred.ch
}

// NextOf is the key names of the successors l's current grant will hand
// over to (queue only).
func NextOf(l locks.Locker) []string {
	q := l.(*queueLocker)
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for _, k := range q.next.next {
		out = append(out, k.key)
	}
	return out
}

// HandoverValue and ExtensionValue are what a queue's handover puts into
// its successor's key and a refill into a later key, passing keys on (at
// create revisions from rev on), in the lock's own encoding; HandedOn
// reads the keys a handover's value passes on. For TestMeasureLockParts's
// dataflow, which carries what the lock's handovers carry.
func HandoverValue(keys []string, rev int64) string {
	return handoverValue + encodeNext(kvsOf(keys, rev))
}

func ExtensionValue(keys []string, rev int64) string {
	return extensionValue + encodeNext(kvsOf(keys, rev))
}

func HandedOn(v []byte) int {
	if !strings.HasPrefix(string(v), handoverValue) {
		return 0
	}
	return len(decodeNext(v[len(handoverValue):]))
}

// IsExtension reports whether v is an extension, not a grant.
func IsExtension(v []byte) bool { return strings.HasPrefix(string(v), extensionValue) }

func kvsOf(keys []string, rev int64) []kv {
	out := make([]kv, len(keys))
	for i, k := range keys {
		out[i] = kv{key: k, rev: rev + int64(i)}
	}
	return out
}
