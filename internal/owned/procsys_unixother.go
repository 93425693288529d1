//go:build unix && !linux

package owned

import "syscall"

// ProcAttr puts a child in its own process group (so that a signal
// reaches all of it and a terminal's Ctrl-C does not).
func ProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
