package owned

import (
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// procs are the pids of child processes this process started and has not
// reaped, for KillAllNow.
var procs struct {
	mu   sync.Mutex
	pids map[int]struct{}
}

// Track notes a child process (started with ProcAttr, so the leader of
// its own group) until Untrack, for KillAllNow.
func Track(pid int) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	if procs.pids == nil {
		procs.pids = map[int]struct{}{}
	}
	procs.pids[pid] = struct{}{}
}

// Untrack forgets a child that has been reaped.
func Untrack(pid int) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	delete(procs.pids, pid)
}

// KillAllNow sends SIGKILL to the group of every tracked child (and
// SIGCONT, for one that is paused), without waiting: for a CLI's
// second-signal handler, which exits right after (as RemoveAllNow is for
// folders). It returns how many it signalled.
func KillAllNow() int {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	for pid := range procs.pids {
		SignalGroup(pid, syscall.SIGKILL)
		SignalGroup(pid, syscall.SIGCONT)
	}
	return len(procs.pids)
}

// Start starts cmd as an owned child: in its own process group (ProcAttr)
// and tracked until it is reaped. done closes once it has exited and been
// reaped, after which closer (its log, or nil) is closed.
func Start(cmd *exec.Cmd, closer io.Closer) (done <-chan struct{}, err error) {
	cmd.SysProcAttr = ProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	Track(cmd.Process.Pid)
	ch := make(chan struct{})
	go func() {
		cmd.Wait()
		Untrack(cmd.Process.Pid)
		if closer != nil {
			closer.Close()
		}
		close(ch)
	}()
	return ch, nil
}

// Kill sends SIGKILL to the group of a child started by Start (and
// SIGCONT, should it be paused) and waits up to wait for it to be reaped.
func Kill(cmd *exec.Cmd, done <-chan struct{}, wait time.Duration) error {
	SignalGroup(cmd.Process.Pid, syscall.SIGKILL)
	SignalGroup(cmd.Process.Pid, syscall.SIGCONT)
	select {
	case <-done:
		return nil
	case <-time.After(wait):
		return fmt.Errorf("pid %d not reaped %s after SIGKILL", cmd.Process.Pid, wait)
	}
}
