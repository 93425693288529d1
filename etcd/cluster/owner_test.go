package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// A cluster's own folder names this process and is not stale; Start
// removes a dead process's folder in the same parent and says so.
func TestStartRemovesStaleAndOwnsItsFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	parent := t.TempDir()
	// A folder of a process that has exited (package owned's tests cover
	// the other kinds of folder).
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skipf("cannot run a child process: %v", err)
	}
	stale := filepath.Join(parent, DataPrefix+"old")
	if err := os.Mkdir(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, PIDFile), []byte(strconv.Itoa(dead.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
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
