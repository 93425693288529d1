package cluster

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"

	"github.com/lockbench/lockbench/internal/owned"
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

// KillAllNow sends SIGKILL to every member process this process started
// and has not reaped, without waiting (see owned.KillAllNow): for a CLI's
// second-signal handler, which exits right after. It returns how many it
// signalled.
func KillAllNow() int { return owned.KillAllNow() }
