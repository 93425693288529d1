package zkbackend

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/go-zookeeper/zk"

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
