//go:build unix

package owned

import "syscall"

// SignalGroup sends sig to the process group led by pid: the child and
// anything it started.
func SignalGroup(pid int, sig syscall.Signal) error {
	return syscall.Kill(-pid, sig)
}
