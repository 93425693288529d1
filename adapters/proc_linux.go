package adapters

import (
	"os/exec"
	"runtime"
	"syscall"
)

// sysProcAttr puts the adapter in a process group of its own, so that a
// kill reaches whatever it started, and has the kernel SIGKILL it when
// lockbench dies, even by SIGKILL (Pdeathsig; it reaches the group's
// leader only, whose children are then orphans of a dead adapter).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// Linux sends Pdeathsig when the *thread* that forked the child ends, not
// the process: every adapter is started from one goroutine locked to its
// thread for good, which therefore lives as long as lockbench.
var starts = make(chan startReq)

type startReq struct {
	cmd  *exec.Cmd
	done chan error
}

func init() {
	go func() {
		runtime.LockOSThread() // never unlocked: the thread never ends
		for r := range starts {
			r.done <- r.cmd.Start()
		}
	}()
}

// start starts cmd from the starter thread.
func start(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	starts <- startReq{cmd: cmd, done: done}
	return <-done
}
