//go:build unix && !linux

package cluster

import "syscall"

// memberProcAttr puts a member in its own process group (so that a signal
// reaches all of it and a terminal's Ctrl-C does not).
func memberProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
