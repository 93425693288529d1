// Package zktest is for tests that start ZooKeeper members: they skip
// under -short or where ZooKeeper or java is not installed, so that `go
// test` passes on a machine without them; with LOCKBENCH_REQUIRE_ZOOKEEPER
// set (as CI does, after make zk-deps) a missing ZooKeeper fails them
// instead, so that a broken install cannot pass unnoticed. (It checks what
// package zkcluster's defaults need without importing it, so that
// zkcluster's own tests can use it.)
package zktest

import (
	"os"
	"os/exec"
	"testing"
)

// Jar is the ZooKeeper server jar the defaults run (zkcluster.ZooKeeperJar).
const Jar = "/usr/share/java/zookeeper.jar"

// Need skips or fails t as the package comment says.
func Need(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts ZooKeeper members (JVMs)")
	}
	missing := ""
	if _, err := exec.LookPath("java"); err != nil {
		missing = "java not on PATH"
	} else if _, err := os.Stat(Jar); err != nil {
		missing = Jar + " missing"
	}
	if missing == "" {
		return
	}
	if os.Getenv("LOCKBENCH_REQUIRE_ZOOKEEPER") != "" {
		t.Fatalf("ZooKeeper not installed (%s) while LOCKBENCH_REQUIRE_ZOOKEEPER is set: make zk-deps", missing)
	}
	t.Skip("ZooKeeper not installed (" + missing + "; make zk-deps: the Debian packages zookeeper, libcurator-recipes-java, python3-kazoo)")
}
