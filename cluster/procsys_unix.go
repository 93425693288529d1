//go:build unix

package cluster

import "syscall"

// signalGroup sends sig to the process group led by pid: the member and
// anything it started.
func signalGroup(pid int, sig syscall.Signal) error {
	return syscall.Kill(-pid, sig)
}
