package redislocks_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/locktest"
	"github.com/lockbench/lockbench/redis/redisbackend"
	"github.com/lockbench/lockbench/redis/rediscluster/redistest"
	"github.com/lockbench/lockbench/redis/redislocks"
)

// deploy starts the deployment a run of lock gets, through Redis's
// Deployer, closed when t ends.
func deploy(t *testing.T, lock string) *backend.Deployment {
	t.Helper()
	redistest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dep, err := redisbackend.Deployer{}.Deploy(ctx, lock, backend.DeployOptions{DataParent: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dep.Close(); err != nil {
			t.Error(err)
		}
	})
	return dep
}

// TestConformance runs the conformance suite (package locktest) on each
// Redis strategy, each on the deployment a run of it gets (a primary with
// replicas behind Sentinels; Redlock's five primaries), started once. A
// grant is lost by cutting its client off until the key's expiry passes:
// Redis has no lease to revoke. On redis-setnx's deployment the suite must
// also catch the same lock released by name (DEL without comparing the
// value), which deletes a successor's key after an expiry.
func TestConformance(t *testing.T) {
	for _, name := range []string{redislocks.SetNXName, redislocks.RedlockName, redislocks.RedsyncName, redislocks.RedsyncSingleName, redislocks.BsmName} {
		t.Run(name, func(t *testing.T) {
			st, err := locks.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			dep := deploy(t, name)
			env := locktest.Env{Backend: dep.Backend, Endpoints: dep.Members.Endpoints(), Factory: st.New, Root: "/locktest-" + name + "/"}
			locktest.Run(t, env)
			if name != redislocks.SetNXName {
				return
			}
			t.Run("unlock-by-name", func(t *testing.T) {
				env.Factory, env.Root = unlockByName(st.New), "/locktest-unlock-by-name/"
				r := locktest.Check(env)
				for _, f := range r.Failures {
					t.Logf("caught: %s", f)
				}
				if !slices.ContainsFunc(r.Failures, func(f locktest.Failure) bool {
					return f.Subtest == "StaleUnlock" && strings.Contains(f.Message, "after the stale Unlock")
				}) {
					t.Errorf("a lock released by name was not caught deleting its successor's key: %v", r.Failures)
				}
			})
		})
	}
}

// unlockByName is f's lock released with a plain DEL of the key, as a
// user who skips the compare-and-delete script would write it.
func unlockByName(f locks.Factory) locks.Factory {
	return func(ctx context.Context, conn locks.Conn, opts locks.Options) (locks.Locker, error) {
		l, err := f(ctx, conn, opts)
		if err != nil {
			return nil, err
		}
		return byName{Locker: l, cli: conn.(*redislocks.Conn).Instances[0]}, nil
	}
}

type byName struct {
	locks.Locker
	cli *redis.Client
}

// Unlock stops the grant's renewal (the wrapped Close), then deletes the
// key by name, whoever holds it now.
func (b byName) Unlock(ctx context.Context, g *locks.Grant) error {
	b.Locker.Close(ctx)
	return b.cli.Del(ctx, g.Key).Err()
}
