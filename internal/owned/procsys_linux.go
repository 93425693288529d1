//go:build linux

package owned

import "syscall"

// ProcAttr puts a child in its own process group (so that a signal
// reaches all of it and a terminal's Ctrl-C does not) and has the kernel
// SIGKILL it should lockbench die without stopping it.
func ProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
