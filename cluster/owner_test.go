package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
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
	stale := fakeDataDir(t, parent, DataPrefix+"stale", dead, 3<<20)
	alive := fakeDataDir(t, parent, DataPrefix+"alive", os.Getpid(), 10)
	nopid := fakeDataDir(t, parent, DataPrefix+"nopid", 0, 10)
	other := fakeDataDir(t, parent, "something-else", dead, 10)

	removed, err := RemoveStale(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].Dir != stale || removed[0].PID != dead || removed[0].Bytes < 3<<20 {
		t.Fatalf("removed %+v, want only %s (pid %d, ≥3 MB)", removed, stale, dead)
	}
	if got, want := removed[0].String(), "removed stale etcd data folder "+stale+" (pid "+strconv.Itoa(dead)+", 3 MB)"; got != want {
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
	dir := filepath.Join(parent, DataPrefix+"locked")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := claim(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, PIDFile), []byte(strconv.Itoa(deadPID(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	if removed, err := RemoveStale(parent); err != nil || len(removed) != 0 {
		t.Fatalf("removed %v (%v) while the lock is held", removed, err)
	}
	f.Close()
	if removed, err := RemoveStale(parent); err != nil || len(removed) != 1 {
		t.Fatalf("removed %v (%v) after the lock was dropped, want the folder", removed, err)
	}
}

// A cluster's own folder names this process and is not stale; Start
// removes a dead process's folder in the same parent and says so.
func TestStartRemovesStaleAndOwnsItsFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	parent := t.TempDir()
	stale := fakeDataDir(t, parent, DataPrefix+"old", deadPID(t), 10)
	var heard []Stale
	c, err := Start(t.Context(), Options{Members: 1, UnsafeNoFsync: true, DataParent: parent,
		OnStaleRemoved: func(s Stale) { heard = append(heard, s) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(heard) != 1 || heard[0].Dir != stale || len(c.StaleRemoved()) != 1 {
		t.Errorf("heard %v, StaleRemoved %v; want %s", heard, c.StaleRemoved(), stale)
	}
	b, err := os.ReadFile(filepath.Join(c.DataDir(), PIDFile))
	if err != nil || string(b) != strconv.Itoa(os.Getpid())+"\n" {
		t.Errorf("pid file %q (%v), want our pid", b, err)
	}
	if removed, _ := RemoveStale(parent); len(removed) != 0 {
		t.Errorf("a live cluster's folder was removed as stale: %v", removed)
	}
}

// The second-signal path: every open cluster's folder goes at once, and a
// later Close still succeeds. Close after a crash of every member removes
// the folder too.
func TestRemoveAllDataNowAndCloseAfterCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	parent := t.TempDir()
	a, err := Start(t.Context(), Options{Members: 1, UnsafeNoFsync: true, DataParent: parent})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Start(t.Context(), Options{Members: 1, UnsafeNoFsync: true, DataParent: parent})
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	adir, bdir := a.DataDir(), b.DataDir()
	removed, err := RemoveAllDataNow()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{adir, bdir} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still there after RemoveAllDataNow (removed %v)", d, removed)
		}
	}
	a.Close()
	if err := b.Crash(0); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("close after crash: %v", err)
	}
	entries, _ := os.ReadDir(parent)
	if len(entries) != 0 {
		t.Errorf("left in %s: %v", parent, entries)
	}
}
