// Package redistest is for tests that start Redis processes: they skip
// under -short or where Redis is not installed, so that `go test` passes
// on a machine without it; with LOCKBENCH_REQUIRE_REDIS set (as CI does,
// after make redis-deps) a missing Redis fails them instead, so that a
// broken install cannot pass unnoticed.
package redistest

import (
	"os"
	"os/exec"
	"testing"
)

// Need skips or fails t as the package comment says.
func Need(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Redis processes")
	}
	for _, bin := range []string{"redis-server", "redis-sentinel"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("LOCKBENCH_REQUIRE_REDIS") != "" {
				t.Fatalf("%s not installed: %v", bin, err)
			}
			t.Skip(bin + " not installed (make redis-deps: the Debian packages redis-server, redis-sentinel)")
		}
	}
}
