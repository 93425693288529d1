package mylock_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/cli"
	_ "github.com/lockbench/lockbench/examples/mylock"
)

// TestCLISeesMyLock runs the lockbench CLI in process, as
// cmd/lockbench-mylock does: list shows the registered strategy, and a
// short contention run of it passes every check.
func TestCLISeesMyLock(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := cli.Run([]string{"list"}, &stdout, &stderr); code != cli.ExitPass || !strings.Contains(stdout.String(), "mylock") {
		t.Fatalf("list: exit %d, stdout:\n%s%s", code, stdout.String(), stderr.String())
	}
	if testing.Short() {
		t.Skip("the run starts an etcd cluster")
	}
	stdout.Reset()
	stderr.Reset()
	code := cli.Run([]string{"run", "--lock", "mylock", "--scenario", "contention", "--duration", "1s",
		"--clients", "4", "--out", t.TempDir(), "--data-dir", t.TempDir(), "--unsafe-no-fsync"}, &stdout, &stderr)
	if code != cli.ExitPass {
		t.Fatalf("run: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "mylock") || !strings.Contains(stdout.String(), "pass") {
		t.Errorf("run table:\n%s", stdout.String())
	}
}
