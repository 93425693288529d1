package owned

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// prefix and what stand for a kind of data folder (package cluster's
// etcd folders are one).
const (
	prefix = "lockbench-test-"
	what   = "test data folder"
)

// deadPID is the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run a child process: %v", err)
	}
	return cmd.Process.Pid
}

func fakeDataDir(t *testing.T, parent, name string, pid int, size int) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(filepath.Join(dir, "m0", "member", "wal"), 0o700); err != nil {
		t.Fatal(err)
	}
	if pid != 0 {
		if err := os.WriteFile(filepath.Join(dir, PIDFile), []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "m0", "member", "wal", "0.wal"), make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Only the folder whose owner is dead goes: not a live owner's, not one
// without a pid file (being created, or an older lockbench's), not one
// that is not lockbench's.
func TestRemoveStale(t *testing.T) {
	parent := t.TempDir()
	dead := deadPID(t)
	stale := fakeDataDir(t, parent, prefix+"stale", dead, 3<<20)
	alive := fakeDataDir(t, parent, prefix+"alive", os.Getpid(), 10)
	nopid := fakeDataDir(t, parent, prefix+"nopid", 0, 10)
	other := fakeDataDir(t, parent, "something-else", dead, 10)

	removed, err := RemoveStale(parent, prefix, what)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].Dir != stale || removed[0].PID != dead || removed[0].Bytes < 3<<20 {
		t.Fatalf("removed %+v, want only %s (pid %d, ≥3 MB)", removed, stale, dead)
	}
	if got, want := removed[0].String(), "removed stale test data folder "+stale+" (pid "+strconv.Itoa(dead)+", 3 MB)"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale folder still there: %v", err)
	}
	for _, d := range []string{alive, nopid, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed: %v", d, err)
		}
	}
}

// A dead pid is not enough while someone holds the folder's lock: a live
// owner in another pid namespace looks dead from here.
func TestRemoveStaleKeepsLockedFolder(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, prefix+"locked")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := Claim(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, PIDFile), []byte(strconv.Itoa(deadPID(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	if removed, err := RemoveStale(parent, prefix, what); err != nil || len(removed) != 0 {
		t.Fatalf("removed %v (%v) while the lock is held", removed, err)
	}
	f.Close()
	if removed, err := RemoveStale(parent, prefix, what); err != nil || len(removed) != 1 {
		t.Fatalf("removed %v (%v) after the lock was dropped, want the folder", removed, err)
	}
}
