package adapters

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/locks"
)

// Python is the interpreter the Python adapters run with: Debian's, whose
// dist-packages hold python3-etcd3, not whatever python3 comes first on
// PATH (a pyenv one, say, without the module).
const Python = "/usr/bin/python3"

// pythonEtcd3 is adapters/python-etcd3/lock.py, embedded so that
// lockbench finds it wherever it runs; it is passed to Python with -c, so
// no file is written.
//
//go:embed python-etcd3/lock.py
var pythonEtcd3 string

// PythonEtcd3 is the python-etcd3 adapter's program.
var PythonEtcd3 = &Program{
	Name:    "python-etcd3",
	Command: []string{Python, "-c", pythonEtcd3},
	Ready:   true,
	Check:   pythonModule("etcd3", "python3-etcd3", "make adapter-deps"),
}

// pythonModule checks that Python imports module, and otherwise says what
// to install: the Debian package pkg, or the make target setup.
func pythonModule(module, pkg, setup string) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, Python, "-c", "import "+module).CombinedOutput()
		if err != nil {
			return fmt.Errorf("needs %s with the %s module (apt-get install %s, or %s): %v: %s",
				Python, module, pkg, setup, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
}

// The shipped adapters are Hidden: they need runtimes lockbench does not
// bring (the default suite must run on a machine with Go alone). run,
// suite and bench find them by name; their known failures are their
// Expect (expect.go).
func init() {
	etcdlocks.Register(locks.Strategy{
		Name:        "python-etcd3",
		Description: "python-etcd3's Lock (client.lock(name, ttl): a txn on one key, waiters watch it; the lease is not refreshed), as a process",
		Origin:      "python-etcd3 0.12 (Debian python3-etcd3), adapters/python-etcd3",
		// The library grants and keeps (or rather, does not keep) its
		// own lease: --keepalive does not apply.
		OwnLease: true,
		Hidden:   true,
		Process:  true,
		Expect:   pythonEtcd3Expect(),
		Runtime:  PythonEtcd3.check,
	}, PythonEtcd3.Factory())
	etcdlocks.Register(locks.Strategy{
		Name:        "node-etcd3",
		Description: "the Node client etcd3's Lock (client.lock(name).ttl(s).acquire(): a try-lock, one txn on one key with a lease the library keeps alive; no loss notice), as a process",
		Origin:      "npm etcd3 1.1.2 on Debian's Node, adapters/node-etcd3",
		OwnLease:    true,
		Hidden:      true,
		Process:     true,
		Expect:      nodeEtcd3Expect(),
		Runtime:     nodeEtcd3.ready,
	}, nodeEtcd3.factory)
	etcdlocks.Register(locks.Strategy{
		Name:        "etcdctl",
		Description: "etcdctl lock NAME, one process per grant, released by Ctrl-C (concurrency.Mutex on a Session of its own), as a process",
		Origin:      "etcdctl v3.7 built from the etcd module (make adapter-deps), adapters/etcdctl",
		OwnLease:    true,
		Hidden:      true,
		Process:     true,
		Expect:      etcdctlExpect(),
		Runtime:     etcdctl37.ready,
	}, etcdctl37.factory)
	etcdlocks.Register(locks.Strategy{
		Name:        "etcdctl-3.4",
		Description: "etcdctl lock NAME as the etcdctl strategy, with Debian's etcdctl 3.4 (its concurrency.Mutex of 3.4)",
		Origin:      "Debian etcd-client 3.4.23 (/usr/bin/etcdctl), adapters/etcdctl",
		OwnLease:    true,
		Hidden:      true,
		Process:     true,
		Expect:      etcdctlExpect(),
		Runtime:     etcdctl34.ready,
	}, etcdctl34.factory)
	etcdlocks.Register(locks.Strategy{
		Name:        "adapter",
		Description: "any adapter program (docs/adapters.md): the command in $" + CommandEnv + ", split on spaces",
		Origin:      "yours: adapters/ has examples",
		// The program keeps its own lease.
		OwnLease: true,
		Hidden:   true,
		Process:  true,
		Runtime:  commandSet,
	}, fromEnv)
}

// CommandEnv names the environment variable holding the command of the
// "adapter" strategy, so that an adapter one writes runs without a line
// of Go.
const CommandEnv = "LOCKBENCH_ADAPTER"

// commandSet is the "adapter" strategy's Runtime: its program is named
// by the environment.
func commandSet(context.Context) error {
	if strings.TrimSpace(os.Getenv(CommandEnv)) == "" {
		return fmt.Errorf("set %s to the adapter's command (docs/adapters.md)", CommandEnv)
	}
	return nil
}

var (
	fromEnvMu sync.Mutex
	fromEnvs  = map[string]*Program{}
)

// fromEnv is the "adapter" strategy's Factory: one Program per command,
// so that its clients' ids are distinct.
func fromEnv(ctx context.Context, cli *clientv3.Client, opts etcdlocks.Options) (locks.Locker, error) {
	if err := commandSet(ctx); err != nil {
		return nil, fmt.Errorf("adapter: %w", err)
	}
	command := os.Getenv(CommandEnv)
	args := strings.Fields(command)
	fromEnvMu.Lock()
	p, ok := fromEnvs[command]
	if !ok {
		p = &Program{Name: args[0], Command: args}
		fromEnvs[command] = p
	}
	fromEnvMu.Unlock()
	return p.Factory()(ctx, cli, opts)
}
