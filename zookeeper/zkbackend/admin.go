package zkbackend

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/zookeeper/zklocks"
)

// Admin is the run's own session (backend.Admin). The run's nodes are
// persistent: Clean removes them, and a killed run's ensemble goes with
// it (lockbench owns its processes).
type Admin struct{ *Connection }

// Keep does nothing (see Admin).
func (*Admin) Keep(context.Context) error { return nil }

// InitCounter creates the counter node, 0, with its parents.
func (a *Admin) InitCounter(ctx context.Context, key string) error {
	zc, err := a.zk(ctx)
	if err != nil {
		return err
	}
	if err := zklocks.EnsurePath(zc, path.Dir(key)); err != nil {
		return err
	}
	_, err = zc.Create(key, []byte("0"), 0, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNodeExists) {
		_, err = zc.Set(key, []byte("0"), -1)
	}
	if err != nil {
		return fmt.Errorf("counter %s: %w", key, err)
	}
	return nil
}

// Release does nothing (see Keep).
func (*Admin) Release(context.Context) error { return nil }

// Clean deletes the node prefix names and everything under it.
func (a *Admin) Clean(ctx context.Context, prefix string) error {
	zc, err := a.zk(ctx)
	if err != nil {
		return err
	}
	return deleteTree(zc, strings.TrimSuffix(prefix, "/"))
}

// deleteTree deletes p's children, then p; a node already gone is fine.
func deleteTree(zc *zk.Conn, p string) error {
	children, _, err := zc.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("clean %s: %w", p, err)
	}
	for _, c := range children {
		if err := deleteTree(zc, p+"/"+c); err != nil {
			return err
		}
	}
	if err := zc.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrNotEmpty) {
		return fmt.Errorf("clean %s: %w", p, err)
	}
	return nil
}

var _ backend.KeyLister = (*Admin)(nil)

// Keys lists the nodes whose path begins with prefix (as a string: "/a/b"
// names /a/b, /a/b/c and /a/bc) as of the moment it is called, each with its creation zxid and its
// ephemeral owner's session.
func (a *Admin) Keys(ctx context.Context, prefix string) ([]backend.Key, error) {
	zc, err := a.zk(ctx)
	if err != nil {
		return nil, err
	}
	// The admin's session may be served by a follower behind the one
	// that answered a client's create: ZooKeeper orders one session's
	// reads, not two sessions', so a listing right after another client's
	// write first brings its server up to the leader (ZooKeeper's sync).
	if _, err := zc.Sync("/"); err != nil {
		return nil, fmt.Errorf("list nodes under %s: sync: %w", prefix, err)
	}
	// The walk starts at the deepest node every match is under.
	start := path.Dir(prefix)
	if strings.HasSuffix(prefix, "/") {
		start = path.Clean(prefix)
	}
	var out []backend.Key
	if err := listTree(zc, start, prefix, &out); err != nil {
		return nil, fmt.Errorf("list nodes under %s: %w", prefix, err)
	}
	return out, nil
}

// listTree adds p's descendants whose path begins with prefix to out; a
// node gone meanwhile is skipped.
func listTree(zc *zk.Conn, p, prefix string, out *[]backend.Key) error {
	children, _, err := zc.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, c := range children {
		child := path.Join(p, c)
		if !strings.HasPrefix(child, prefix) {
			continue
		}
		ok, st, err := zc.Exists(child)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		*out = append(*out, backend.Key{Name: child, Created: st.Czxid, Owner: st.EphemeralOwner, Ephemeral: st.EphemeralOwner != 0})
		if err := listTree(zc, child, prefix, out); err != nil {
			return err
		}
	}
	return nil
}
