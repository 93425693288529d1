package owned

import (
	"sync"
	"syscall"
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
