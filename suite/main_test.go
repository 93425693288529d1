package suite

import (
	"os"
	"testing"

	"github.com/lockbench/lockbench/etcd/cluster"
)

// TestMain lets the test binary be an etcd member (--etcd-bin self), as
// the matrix tests' second binary.
func TestMain(m *testing.M) {
	cluster.RunMemberIfAsked()
	os.Exit(m.Run())
}
