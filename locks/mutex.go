package locks

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

func init() {
	Register(Strategy{
		Name:        "mutex",
		Description: "etcd's client-side concurrency.Mutex over a Session (one per client)",
		Origin:      "etcd client/v3/concurrency: the reference",
		New:         newMutex,
	})
}

// mutexLocker wraps concurrency.Mutex unchanged: it is the reference that
// the other strategies are measured against, so it must behave exactly as
// users of etcd's client get it.
type mutexLocker struct {
	cli  *clientv3.Client
	opts Options
	sess *concurrency.Session
	mu   *concurrency.Mutex
}

func newMutex(ctx context.Context, cli *clientv3.Client, opts Options) (Locker, error) {
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	return &mutexLocker{cli: cli, opts: opts}, nil
}

// session returns a live session, replacing one whose lease is gone: a
// Session never recovers from a lost lease.
func (l *mutexLocker) session(ctx context.Context) (*concurrency.Session, error) {
	if l.sess != nil {
		select {
		case <-l.sess.Done():
			l.sess = nil
		default:
			return l.sess, nil
		}
	}
	s, err := concurrency.NewSession(l.cli, concurrency.WithTTL(int(l.opts.ttlSeconds())), concurrency.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("new session: %w", err)
	}
	l.sess = s
	return s, nil
}

func (l *mutexLocker) Lock(ctx context.Context) (*Grant, error) {
	// Step 1: a live session (lease + keepalive) to hang the waiter key on.
	// Its context is the client's, not this call's, so that cancelling one
	// Lock does not end the lease of later ones.
	s, err := l.session(l.cli.Ctx())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotAcquired, err)
	}
	// Step 2: etcd's Mutex puts the waiter key and waits for every older key
	// under the prefix to go.
	m := concurrency.NewMutex(s, l.opts.Key())
	if err := m.Lock(ctx); err != nil {
		// Mutex marks its key "\x00" once it has deleted it: only then is it
		// certain that nothing is held.
		if m.Key() == "\x00" || err == concurrency.ErrSessionExpired {
			return nil, fmt.Errorf("%w: %v", ErrNotAcquired, err)
		}
		return nil, err
	}
	l.mu = m
	// Step 3: the token is the create revision Mutex compares in IsOwner.
	owner := m.IsOwner()
	token := owner.GetCompare().GetCreateRevision()
	return &Grant{Key: m.Key(), Token: token, Lease: s.Lease(), Lost: s.Done()}, nil
}

func (l *mutexLocker) Unlock(ctx context.Context, g *Grant) error {
	if l.mu == nil || l.mu.Key() != g.Key {
		return fmt.Errorf("unlock %s: not held by this client", g.Key)
	}
	// Mutex deletes its key by name; the name embeds the lease ID, so it can
	// never be a successor's key.
	err := l.mu.Unlock(ctx)
	l.mu = nil
	return err
}

func (l *mutexLocker) Close(ctx context.Context) error {
	if l.sess == nil {
		return nil
	}
	err := l.sess.Close()
	l.sess = nil
	return err
}
