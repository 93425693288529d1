package cluster

import (
	"os"
	"sync"
	"syscall"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

// MemberCommand is the hidden first argument with which lockbench runs as
// an etcd member (--etcd-bin self): see RunMemberIfAsked.
const MemberCommand = "etcd-member"

// RunMemberIfAsked turns this process into an etcd member when its first
// argument is MemberCommand: it runs etcd's own main (etcdmain.Main, the
// etcd binary's) with the remaining arguments as etcd's flags, and never
// returns. Otherwise it returns at once. A main that wants --etcd-bin self
// calls it first (cli.Main does); so does a test binary's TestMain.
func RunMemberIfAsked() {
	if len(os.Args) < 2 || os.Args[1] != MemberCommand {
		return
	}
	// etcdmain reads os.Args[1:] as its flags (its args[0] is the name).
	etcdmain.Main(os.Args[1:])
	os.Exit(0)
}

// procs are the pids of member processes this process started and has
// not reaped, for KillAllNow.
var procs struct {
	mu   sync.Mutex
	pids map[int]struct{}
}

func trackProcess(pid int) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	if procs.pids == nil {
		procs.pids = map[int]struct{}{}
	}
	procs.pids[pid] = struct{}{}
}

func untrackProcess(pid int) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	delete(procs.pids, pid)
}

// KillAllNow sends SIGKILL to every member process this process started
// and has not reaped, without waiting: for a CLI's second-signal handler,
// which exits right after (as RemoveAllDataNow is for data folders). It
// returns how many it signalled.
func KillAllNow() int {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	for pid := range procs.pids {
		signalGroup(pid, syscall.SIGKILL)
		signalGroup(pid, syscall.SIGCONT)
	}
	return len(procs.pids)
}
