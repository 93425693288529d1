package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/lockbench/lockbench/etcd/cluster"
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

// fakeData makes an etcd data folder under parent owned by pid.
func fakeData(t *testing.T, parent string, pid int) string {
	t.Helper()
	dir, err := os.MkdirTemp(parent, cluster.DataPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, cluster.PIDFile), []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRemoveStaleFindsKilledCLIsData: the data folders a killed lockbench
// left inside its scratch folder (and, from an older lockbench, directly
// in the parent) are removed and reported, as is the scratch folder they
// leave empty; a live process's data folder and a fresh empty scratch
// folder (a live CLI about to start its cluster) stay.
func TestRemoveStaleFindsKilledCLIsData(t *testing.T) {
	parent, dead := t.TempDir(), deadPID(t)
	old := time.Now().Add(-time.Hour)
	killed, err := os.MkdirTemp(parent, scratchPrefix)
	if err != nil {
		t.Fatal(err)
	}
	killedData := fakeData(t, killed, dead)
	os.Chtimes(killed, old, old)
	olderLockbench := fakeData(t, parent, dead)
	live, _ := os.MkdirTemp(parent, scratchPrefix)
	liveData := fakeData(t, live, os.Getpid())
	os.Chtimes(live, old, old)
	fresh, _ := os.MkdirTemp(parent, scratchPrefix)

	var got []string
	removeStale(parent, func(s cluster.Stale) { got = append(got, s.Dir) })

	if len(got) != 2 {
		t.Errorf("reported %v, want %s and %s", got, killedData, olderLockbench)
	}
	for _, d := range []string{killedData, olderLockbench, killed} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s left (%v)", d, err)
		}
	}
	for _, d := range []string{liveData, live, fresh} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed: %v", d, err)
		}
	}
}

// TestRemoveStaleKeepsAnIdleLiveScratch: a live CLI's scratch folder,
// empty for longer than staleScratchAge (lockbench redis makes the etcd
// cell's long before that cell runs), is not another lockbench's to
// remove; one claimed by a dead CLI is removed whatever it holds.
func TestRemoveStaleKeepsAnIdleLiveScratch(t *testing.T) {
	parent := t.TempDir()
	var s scratch
	live, err := s.make(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer s.removeAll()
	old := time.Now().Add(-time.Hour)
	os.Chtimes(live, old, old)
	dead, _ := os.MkdirTemp(parent, scratchPrefix)
	os.WriteFile(filepath.Join(dead, cluster.PIDFile), []byte(strconv.Itoa(deadPID(t))+"\n"), 0o600)
	os.WriteFile(filepath.Join(dead, "left-behind"), []byte("x"), 0o600)

	removeStale(parent, func(cluster.Stale) {})

	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live CLI's idle scratch folder was removed: %v", err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("a dead CLI's scratch folder is left (%v)", err)
	}
}
