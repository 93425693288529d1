package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/internal/owned"
	"github.com/lockbench/lockbench/redis/rediscluster"
	"github.com/lockbench/lockbench/zookeeper/zkcluster"
)

// The CLI's side of a run's resource limits and clean-up: what the harness
// decided for the user (Notice), the dead runs' data folders a start
// removed, the open-file limit, and etcd's data on a forced exit.

// runFlags names run's flag for each harness.RunSpec field a *FieldError
// may name (e.g. Clients above the machine's budget), as benchFlags does
// for bench.
var runFlags = map[string]string{"Clients": "clients"}

// noticeTo prints the harness's decisions (e.g. shared connections picked
// to fit the open-file limit): they change what is measured.
func noticeTo(w io.Writer) func(string) {
	return func(msg string) { fmt.Fprintf(w, "lockbench: %s\n", msg) }
}

// staleTo prints each dead run's etcd data folder that was removed: the
// space it frees can be large.
func staleTo(w io.Writer) func(cluster.Stale) {
	return func(s cluster.Stale) { fmt.Fprintf(w, "lockbench: %s\n", s) }
}

// raiseFDLimit raises the open-file limit to the hard limit and, with
// --verbose, says so; a failure to raise it is said always. The harness
// raises it too (once per process): this is for the user to see it.
func (e *env) raiseFDLimit(verbose bool) {
	lim, err := harness.RaiseOpenFileLimit()
	switch {
	case err != nil:
		fmt.Fprintf(e.stderr, "lockbench: %v\n", err)
	case verbose:
		fmt.Fprintf(e.stderr, "lockbench: %s\n", lim)
	}
}

// staleScratchAge is how old an empty scratch folder of another process
// must be to be removed: a younger one may be a live CLI's that is about
// to start its cluster in it.
const staleScratchAge = time.Minute

// removeStale removes the etcd (and Redis) data folders of dead processes under parent
// (os.TempDir when ""), telling report of each. cluster.Start does this
// itself, but only in its DataParent, which for the CLI is a fresh scratch
// folder: the folders a killed lockbench left are one level down, in its
// own scratch folder (parent/lockbench-cli-*/lockbench-etcd-*), or, from a
// lockbench older than package cli, directly in parent. Scratch folders
// left empty are removed once they are staleScratchAge old. Best effort:
// what cannot be removed is no reason not to run.
func removeStale(parent string, report func(cluster.Stale)) {
	if parent == "" {
		parent = os.TempDir()
	}
	dirs := []string{parent}
	ents, _ := os.ReadDir(parent)
	for _, d := range ents {
		if d.IsDir() && strings.HasPrefix(d.Name(), scratchPrefix) {
			dirs = append(dirs, filepath.Join(parent, d.Name()))
		}
	}
	for i, dir := range dirs {
		info, err := os.Stat(dir)
		if err != nil {
			continue
		}
		stale, _ := cluster.RemoveStale(dir)
		redis, _ := rediscluster.RemoveStale(dir)
		zk, _ := zkcluster.RemoveStale(dir)
		for _, s := range slices.Concat(stale, redis, zk) {
			report(s)
		}
		// Emptied (or left empty) by a dead process of a lockbench that
		// did not claim its scratch folders: os.Remove fails on a folder
		// that holds anything, a live CLI's claim included.
		if i > 0 && time.Since(info.ModTime()) > staleScratchAge {
			os.Remove(dir)
		}
	}
	// Scratch folders claimed by a CLI that died (SIGKILL), whatever is
	// left in them.
	dead, _ := owned.RemoveStale(parent, scratchPrefix, "scratch folder")
	for _, s := range dead {
		report(s)
	}
}

// removeDataNow removes etcd's data at once, for a forced exit: every open
// cluster's data folder (cluster.RemoveAllDataNow: any this process
// started, wherever its DataParent), then the CLI's scratch folders that
// hold them. The process must exit right after: members still run on the
// removed files.
func (e *env) removeDataNow() {
	// Member processes first (--etcd-bin): they would outlive the exit.
	cluster.KillAllNow()
	if _, err := cluster.RemoveAllDataNow(); err != nil {
		fmt.Fprintf(e.stderr, "lockbench: %v\n", err)
	}
	e.scratch.removeAll()
}
