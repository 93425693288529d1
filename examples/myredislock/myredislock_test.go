package myredislock_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/cli"
	"github.com/lockbench/lockbench/examples/myredislock"
	"github.com/lockbench/lockbench/locktest"
	"github.com/lockbench/lockbench/redis/redisbackend"
	"github.com/lockbench/lockbench/redis/rediscluster/redistest"
	"github.com/lockbench/lockbench/redis/redislocks"
)

// cliRun runs the lockbench CLI in process, as cmd/lockbench-myredislock
// does, and returns its exit code and output.
func cliRun(args ...string) (int, string) {
	var stdout, stderr bytes.Buffer
	code := cli.Run(args, &stdout, &stderr)
	return code, stdout.String() + stderr.String()
}

// TestCLISeesMyRedisLock: list shows the registered strategy as a Redis
// one; where Redis is installed, a run of the fault-free redis-steady
// passes every check, and a suite of redis-steady and redis-holder-pause
// is as each scenario expects — the holder's pause breaks exclusion, as
// it does every Redis lock without fencing (docs/redis.md).
func TestCLISeesMyRedisLock(t *testing.T) {
	code, out := cliRun("list")
	if code != cli.ExitPass || !strings.Contains(out, myredislock.Name) {
		t.Fatalf("list: exit %d:\n%s", code, out)
	}
	if !redislocks.Independent(redislocks.RedlockName) || redislocks.Independent(myredislock.Name) {
		t.Errorf("registered over one instance, %s must get the Sentinels' deployment, not independent primaries", myredislock.Name)
	}
	redistest.Need(t)
	code, out = cliRun("run", "--lock", myredislock.Name, "--scenario", "redis-steady", "--out", t.TempDir())
	if code != cli.ExitPass || !strings.Contains(out, myredislock.Name) {
		t.Fatalf("run: exit %d:\n%s", code, out)
	}
	code, out = cliRun("suite", "--locks", myredislock.Name, "--scenarios", "redis-steady,redis-holder-pause",
		"--seeds", "1", "--parallel", "1", "--out", t.TempDir())
	if code != cli.ExitPass || !strings.Contains(out, "2 cells, 0 not as expected") {
		t.Fatalf("suite: exit %d:\n%s", code, out)
	}
}

// TestConformance runs the backend-neutral conformance suite on the
// example, on the deployment a run of it gets.
func TestConformance(t *testing.T) {
	redistest.Need(t)
	redislocks.QuietLogs()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dep, err := redisbackend.Deployer{}.Deploy(ctx, myredislock.Name, backend.DeployOptions{DataParent: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := dep.Close(); err != nil {
			t.Error(err)
		}
	}()
	locktest.Run(t, locktest.Env{Backend: dep.Backend, Endpoints: dep.Members.Endpoints(), Strategy: myredislock.Name, Root: "/locktest-myredislock/"})
}
