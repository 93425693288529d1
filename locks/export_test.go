package locks

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// NewQueueWithoutHandover makes queue lockers that run the protocol from
// before handovers, for TestMeasureHandover's A/B.
func NewQueueWithoutHandover() Factory {
	f := newQueue(false)
	return func(ctx context.Context, cli *clientv3.Client, opts Options) (Locker, error) {
		l, err := f(ctx, cli, opts)
		if err != nil {
			return nil, err
		}
		l.(*queueLocker).noHandover = true
		return l, nil
	}
}

// PredWatchOf is the key name and channel of l's kept predecessor's watch
// (queue only; "" and nil: none).
func PredWatchOf(l Locker) (string, clientv3.WatchChan) {
	q := l.(*queueLocker)
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pred.key, q.pred.ch
}

// NextOf is the key names of the successors l's current grant will hand
// over to (queue only).
func NextOf(l Locker) []string {
	q := l.(*queueLocker)
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for _, k := range q.next.next {
		out = append(out, k.key)
	}
	return out
}
