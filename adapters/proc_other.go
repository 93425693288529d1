//go:build unix && !linux

package adapters

import (
	"os/exec"
	"syscall"
)

// sysProcAttr puts the adapter in a process group of its own, so that a
// kill reaches whatever it started. Outside Linux there is no Pdeathsig:
// an adapter outlives a lockbench killed by SIGKILL until its stdin ends.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func start(cmd *exec.Cmd) error { return cmd.Start() }
