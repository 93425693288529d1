// Package owned tracks what a lockbench process owns on its machine —
// child process groups and data folders — so that every path out, a
// second signal's included, leaves none of it behind, and a later process
// removes what a killed one left. The etcd member processes and data
// folders of package cluster are owned this way, and so is any other
// server lockbench starts.
package owned

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// A data folder says who owns it, so that a later process can tell a
// folder left by a killed process (SIGKILL, OOM, a power cut: its Close
// never ran) from one still in use, possibly by another process:
//
//   - PIDFile holds the owner's process id, written right after the folder
//     is made;
//   - the owner holds an flock on that file for as long as the cluster is
//     open; the kernel drops it when the process dies, however it dies.
//
// A folder is stale when its owner's pid is not alive and its lock is not
// held. The lock alone would do on one host; the pid covers a file system
// without flock, and the lock a pid from another pid namespace (a container
// sharing $TMPDIR), which looks dead from here.

// PIDFile is the file in a data folder that names (and is locked by) the
// process that owns the folder.
const PIDFile = "lockbench.pid"

// Stale is a data folder RemoveStale removed: the CLI prints it, since the
// space it frees can be large (a long run's WAL and snapshots).
type Stale struct {
	// What the folder was, e.g. "etcd data folder".
	What  string
	Dir   string
	PID   int
	Bytes int64
}

// String is what to tell the user: "removed stale etcd data folder X (pid
// N, 367 MB)".
func (s Stale) String() string {
	return fmt.Sprintf("removed stale %s %s (pid %d, %s)", s.What, s.Dir, s.PID, humanBytes(s.Bytes))
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d kB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// Claim writes PIDFile into dir and locks it; the returned file keeps the
// lock until it is closed (by its owner's Close, or by the process's
// death).
func Claim(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, PIDFile), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("claim data folder: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("claim data folder %s: lock: %w", dir, err)
	}
	if _, err := f.WriteString(strconv.Itoa(os.Getpid()) + "\n"); err != nil {
		f.Close()
		return nil, fmt.Errorf("claim data folder %s: %w", dir, err)
	}
	return f, nil
}

// RemoveStale removes the data folders in parent (os.TempDir when empty)
// whose names begin with prefix and whose owner is dead: pid not alive
// and lock not held. A folder without a PIDFile is left alone: it may be
// one being created this instant, or one of an older lockbench that wrote
// none. what names such a folder in Stale's message.
func RemoveStale(parent, prefix, what string) ([]Stale, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil, fmt.Errorf("look for stale data folders in %s: %w", parent, err)
	}
	var removed []Stale
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		pid, stale := isStale(dir)
		if !stale {
			continue
		}
		size := dirBytes(dir)
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove stale data folder %s: %w", dir, err))
			continue
		}
		removed = append(removed, Stale{What: what, Dir: dir, PID: pid, Bytes: size})
	}
	return removed, errors.Join(errs...)
}

// isStale reads dir's PIDFile and says whether its owner is dead.
func isStale(dir string) (pid int, stale bool) {
	path := filepath.Join(dir, PIDFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		// Written but not yet filled in, or garbage: only the lock can say.
		pid = 0
	} else if pidAlive(pid) {
		return pid, false
	}
	return pid, !lockHeld(path)
}

// dirBytes is the size of the files under dir, for the report.
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// live are the data folders this process owns and has not removed, for
// RemoveAllNow.
var live struct {
	mu   sync.Mutex
	dirs map[string]struct{}
}

// Register notes dir as this process's until Unregister, for RemoveAllNow.
func Register(dir string) {
	live.mu.Lock()
	defer live.mu.Unlock()
	if live.dirs == nil {
		live.dirs = map[string]struct{}{}
	}
	live.dirs[dir] = struct{}{}
}

// Unregister forgets dir (removed, or handed on).
func Unregister(dir string) {
	live.mu.Lock()
	defer live.mu.Unlock()
	delete(live.dirs, dir)
}

// RemoveAllNow removes every registered folder at once, without stopping
// what uses it: for a CLI's second-signal handler, which exits right
// after and has no time for orderly closes. The process must exit
// afterwards: its children still run on removed files. It returns the
// folders removed.
func RemoveAllNow() ([]string, error) {
	live.mu.Lock()
	dirs := make([]string, 0, len(live.dirs))
	for d := range live.dirs {
		dirs = append(dirs, d)
	}
	live.mu.Unlock()
	var errs []error
	var removed []string
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("remove data folder %s: %w", d, err))
			continue
		}
		removed = append(removed, d)
		Unregister(d)
	}
	return removed, errors.Join(errs...)
}
