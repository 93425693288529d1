package zklocks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/lockbench/lockbench/locks"
)

// Queue is ZooKeeper's lock recipe as lockbench would write it (zk-queue):
// each Lock creates a protected ephemeral sequential node under the
// lock's node, is granted when its node is the lowest, and otherwise
// watches only its predecessor, so a release wakes one waiter. Unlike
// go-zookeeper's zk.Lock it checks after every wake that its own node
// still exists (a session that expired while waiting took it), gives up
// on a cancelled wait by deleting its node, and closes a grant's Lost
// once its session expires or stays suspended past its grace
// (SuspendGrace), before the ensemble can expire it.
type Queue struct {
	conn *Conn
	dir  string // the lock's node: the waiters' nodes are its children
	opts locks.Options
	// held are the nodes of grants not unlocked: one whose holder was
	// told of its loss while its session lived on still blocks the
	// queue, and goes at the next Lock.
	held []string
	// create makes a waiter's node (createProtected; the mutant's is
	// createRetrying).
	create func(zc *zk.Conn, prefix string) (string, error)
}

// NewQueue is a zk-queue Locker over conn.
func NewQueue(conn *Conn, opts locks.Options) (*Queue, error) {
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	return &Queue{conn: conn, dir: opts.Key(), opts: opts, create: createProtected}, nil
}

// createProtected is the recipe's create: a protected ephemeral
// sequential node (a GUID in its name), which go-zookeeper looks up
// after a connection lost before the answer rather than creating again.
func createProtected(zc *zk.Conn, prefix string) (string, error) {
	return zc.CreateProtectedEphemeralSequential(prefix, nil, zk.WorldACL(zk.PermAll))
}

// nodePrefix is the sequential part of every waiter's node name (after
// the protected create's GUID).
const nodePrefix = "lock-"

// Lock enqueues the client and waits for its turn.
func (q *Queue) Lock(ctx context.Context) (*locks.Grant, error) {
	zc := q.conn.ZK
	// Step 1: a grant given up as lost leaves its node, if its session
	// lived on: delete it, or it would stand before our own.
	for len(q.held) > 0 {
		if err := zc.Delete(q.held[0], -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return nil, fmt.Errorf("zk-queue: delete the lost grant's node %s: %w: %w", q.held[0], err, locks.ErrNotAcquired)
		}
		q.held = q.held[1:]
	}
	// Step 2: our node, ephemeral (it dies with the session) and
	// sequential (its place in the queue). The protected create names it
	// with a GUID, so a create whose answer was lost finds its own node
	// instead of leaving an orphan that blocks the queue (the mutant
	// zk-queue-unprotected's create does not: unprotected.go).
	node, err := q.create(zc, q.dir+"/"+nodePrefix)
	if errors.Is(err, zk.ErrNoNode) {
		// Step 3: the first Lock of this lock creates its node, the
		// persistent parent of the queue, then enqueues again.
		if err := EnsurePath(zc, q.dir); err != nil {
			return nil, fmt.Errorf("zk-queue: %w: %w", err, locks.ErrNotAcquired)
		}
		node, err = q.create(zc, q.dir+"/"+nodePrefix)
	}
	if err != nil {
		if certain(err) {
			err = fmt.Errorf("%w: %w", err, locks.ErrNotAcquired)
		}
		return nil, fmt.Errorf("zk-queue enqueue: %w", err)
	}
	g, err := q.wait(ctx, node)
	if err != nil {
		return nil, q.abandon(node, err)
	}
	q.held = append(q.held, node)
	return g, nil
}

// wait waits until node is the lowest of the queue.
func (q *Queue) wait(ctx context.Context, node string) (*locks.Grant, error) {
	zc, name := q.conn.ZK, node[strings.LastIndex(node, "/")+1:]
	for {
		// Step 4: the session's state before the read that may grant:
		// a suspension from here on is the grant's loss.
		down := q.conn.Down()
		children, _, err := zc.Children(q.dir)
		if err != nil {
			return nil, err
		}
		sortQueue(children)
		at := indexOf(children, name)
		switch {
		case at < 0:
			// Step 5a: our node is gone (the session expired while we
			// waited): we are not in the queue at all.
			return nil, fmt.Errorf("zk-queue: our node %s is gone (session expired): %w: %w", name, locks.ErrLeaseLost, locks.ErrNotAcquired)
		case at == 0:
			// Step 5b: lowest: ours. Its creation zxid is the token.
			ok, st, err := zc.Exists(node)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue // gone between the two reads: 5a says so
			}
			return &locks.Grant{Key: node, Token: st.Czxid, Lease: st.EphemeralOwner, Lost: down}, nil
		}
		// Step 6: watch only the predecessor, so that a release wakes one
		// waiter, not the herd.
		pred := q.dir + "/" + children[at-1]
		ok, _, ch, err := zc.ExistsW(pred)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		select {
		case <-ch:
			q.opts.OnWakeup()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// abandon deletes our node after a failed wait, so that it blocks no
// one, and says whether the failure is certain.
func (q *Queue) abandon(node string, cause error) error {
	err := q.conn.ZK.Delete(node, -1)
	if err == nil || errors.Is(err, zk.ErrNoNode) || errors.Is(cause, locks.ErrNotAcquired) {
		return fmt.Errorf("zk-queue: %w: %w", cause, locks.ErrNotAcquired)
	}
	return fmt.Errorf("zk-queue: %w (and our node %s may remain: %v)", cause, node, err)
}

// Unlock deletes the grant's own node (its name is unique to this
// wait: never a successor's).
func (q *Queue) Unlock(_ context.Context, g *locks.Grant) error {
	if err := q.conn.ZK.Delete(g.Key, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("zk-queue unlock %s: %w", g.Key, err)
	}
	q.held = slices.DeleteFunc(q.held, func(n string) bool { return n == g.Key })
	return nil
}

// Close does nothing: the session is the connection's (its backend
// closes it, and the ensemble then deletes its nodes).
func (q *Queue) Close(context.Context) error { return nil }

// sortQueue orders a lock's children by their sequence number (the
// protected create's GUID comes before it in the name).
func sortQueue(children []string) {
	sort.Slice(children, func(i, j int) bool { return seqOf(children[i]) < seqOf(children[j]) })
}

// seqOf is the sequence number a sequential node's name ends with, -1
// when it has none.
func seqOf(name string) int64 {
	i := strings.LastIndex(name, nodePrefix)
	if i < 0 {
		return -1
	}
	n, err := strconv.ParseInt(name[i+len(nodePrefix):], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func indexOf(children []string, name string) int {
	for i, c := range children {
		if c == name {
			return i
		}
	}
	return -1
}
