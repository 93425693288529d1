package zklocks

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/lockbench/lockbench/locks"
)

// GoZK is github.com/go-zookeeper/zk's zk.Lock exactly as its
// documentation shows it: zk.NewLock(conn, path, zk.WorldACL(zk.PermAll)),
// Lock(), Unlock(). It has no context and no signal of loss, which is what
// it is judged on:
//
//   - Lock cannot be cancelled. When the caller's ctx ends first, Lock
//     answers with an unknown outcome and the library's wait goes on; the
//     next Lock first waits for it and unlocks what it got.
//   - A grant's Lost never closes: a holder whose session expired is not
//     told, as zk.Lock's users are not.
//   - zk.Lock does not say which node it holds. lockbench reads the
//     queue after a grant to name it (the lowest child, with its creation
//     zxid as the token): two requests of lockbench's own, counted with
//     the client's.
type GoZK struct {
	conn *Conn
	dir  string
	lock *zk.Lock
	// pending carries the outcome of a Lock the caller gave up on, while
	// the library still waits.
	pending chan error
}

// NewGoZK is a go-zookeeper Locker over conn.
func NewGoZK(conn *Conn, opts locks.Options) (*GoZK, error) {
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	return &GoZK{conn: conn, dir: opts.Key(), lock: zk.NewLock(conn.ZK, opts.Key(), zk.WorldACL(zk.PermAll))}, nil
}

// Lock calls zk.Lock's Lock.
func (l *GoZK) Lock(ctx context.Context) (*locks.Grant, error) {
	if err := l.settle(ctx); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- l.lock.Lock() }()
	select {
	case err := <-done:
		if err != nil {
			return nil, fmt.Errorf("go-zookeeper lock: %w", err)
		}
		g, err := l.grant()
		if err != nil {
			// Held by the library, unnamed: give it back (the outcome
			// stays unknown: the unlock may fail too).
			return nil, errors.Join(err, l.lock.Unlock())
		}
		return g, nil
	case <-ctx.Done():
		l.pending = done
		return nil, fmt.Errorf("go-zookeeper lock: %w (zk.Lock cannot be cancelled: its wait goes on)", ctx.Err())
	}
}

// settle waits for a Lock the caller gave up on, and unlocks what it got.
func (l *GoZK) settle(ctx context.Context) error {
	if l.pending == nil {
		return nil
	}
	select {
	case err := <-l.pending:
		l.pending = nil
		if err == nil {
			if err := l.lock.Unlock(); err != nil {
				return fmt.Errorf("go-zookeeper: unlock an abandoned grant: %w", err)
			}
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("go-zookeeper lock: the last Lock's wait goes on: %w: %w", ctx.Err(), locks.ErrNotAcquired)
	}
}

// grant names the node zk.Lock holds: the lowest of the queue.
func (l *GoZK) grant() (*locks.Grant, error) {
	children, _, err := l.conn.ZK.Children(l.dir)
	if err != nil {
		return nil, fmt.Errorf("go-zookeeper: read the queue after a grant: %w", err)
	}
	if len(children) == 0 {
		return nil, errors.New("go-zookeeper: granted, but the queue is empty (the session expired)")
	}
	sortQueue(children)
	node := l.dir + "/" + children[0]
	ok, st, err := l.conn.ZK.Exists(node)
	if err != nil || !ok {
		return nil, fmt.Errorf("go-zookeeper: read the granted node %s: exists %v, %v", node, ok, err)
	}
	return &locks.Grant{Key: node, Token: st.Czxid, Lease: st.EphemeralOwner}, nil
}

// Unlock calls zk.Lock's Unlock.
func (l *GoZK) Unlock(context.Context, *locks.Grant) error {
	if err := l.lock.Unlock(); err != nil {
		return fmt.Errorf("go-zookeeper unlock: %w", err)
	}
	return nil
}

// Close gives up a wait still in flight: the session is the
// connection's.
func (l *GoZK) Close(context.Context) error { return nil }
