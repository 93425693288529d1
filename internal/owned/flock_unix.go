//go:build unix

package owned

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f, held until f is closed.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// lockHeld reports whether someone holds an flock on path: it tries to take
// the lock and, when it can, drops it at once. Any doubt counts as held, so
// that a folder is never removed under a live owner.
func lockHeld(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false
	}
	return true
}

// pidAlive reports whether a process with that id exists (EPERM: it
// exists, owned by someone else).
func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
