package adapters

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/locks"
)

// RepoEnv names the variable that points lockbench at the checkout whose
// bin/ and adapters/ hold what `make adapter-deps` installed (the Node
// client's node_modules, etcdctl v3.7): without it, lockbench looks
// beside its executable and in the working directory, and their parents.
const RepoEnv = "LOCKBENCH_REPO"

// Node is the Node.js the node-etcd3 adapter runs with: Debian's.
const Node = "/usr/bin/node"

// DebianEtcdctl is Debian's etcd-client 3.4, for the etcdctl-3.4 adapter.
const DebianEtcdctl = "/usr/bin/etcdctl"

// checkoutMark is a file only a lockbench checkout has at its root: a
// parent that lacks it is not searched (/bin/etcdctl is Debian's).
const checkoutMark = "adapters/install-deps.sh"

// repoFile finds rel (slash-separated, e.g. "bin/etcdctl") in the
// lockbench checkout: under $LOCKBENCH_REPO if set, else under the
// executable's directory or the working directory or one of their
// parents that is a checkout. The error says where it looked.
func repoFile(rel string) (string, error) {
	var roots []string
	if r := os.Getenv(RepoEnv); r != "" {
		roots = []string{r}
	} else {
		if exe, err := os.Executable(); err == nil {
			roots = append(roots, ancestors(filepath.Dir(exe))...)
		}
		if wd, err := os.Getwd(); err == nil {
			roots = append(roots, ancestors(wd)...)
		}
	}
	for _, r := range roots {
		if _, err := os.Stat(filepath.Join(r, checkoutMark)); err != nil {
			continue
		}
		p := filepath.Join(r, filepath.FromSlash(rel))
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	where := "beside the executable or the working directory (set " + RepoEnv + " to the lockbench checkout)"
	if len(roots) == 1 {
		where = "under " + RepoEnv + "=" + roots[0]
	}
	return "", fmt.Errorf("no %s %s", rel, where)
}

// ancestors is dir and its parents up to the root.
func ancestors(dir string) []string {
	var out []string
	for {
		out = append(out, dir)
		parent := filepath.Dir(dir)
		if parent == dir {
			return out
		}
		dir = parent
	}
}

// etcdctlLock is adapters/etcdctl/lock.py, embedded like python-etcd3's:
// it runs `etcdctl lock` per request.
//
//go:embed etcdctl/lock.py
var etcdctlLock string

// installed is one adapter whose program depends on what is installed: it
// is found once, on first use, and its error says what to install.
type installed struct {
	once sync.Once
	find func() (*Program, error)
	prog *Program
	err  error
}

// program finds the Program (once).
func (r *installed) program() (*Program, error) {
	r.once.Do(func() { r.prog, r.err = r.find() })
	return r.prog, r.err
}

// ready is the adapter's locks.Strategy.Runtime: whether its Program is
// found, and its check passes.
func (r *installed) ready(ctx context.Context) error {
	p, err := r.program()
	if err != nil {
		return err
	}
	return p.check(ctx)
}

// factory is the etcdlocks.Factory of the Program, once found.
func (r *installed) factory(ctx context.Context, cli *clientv3.Client, opts etcdlocks.Options) (locks.Locker, error) {
	p, err := r.program()
	if err != nil {
		return nil, err
	}
	return p.Factory()(ctx, cli, opts)
}

var (
	nodeEtcd3 = &installed{find: findNodeEtcd3}
	etcdctl37 = &installed{find: func() (*Program, error) { return findEtcdctl("etcdctl", etcdctlBuilt, etcdVersion()) }}
	etcdctl34 = &installed{find: func() (*Program, error) {
		return findEtcdctl("etcdctl-3.4", func() (string, error) { return DebianEtcdctl, nil }, "3.4.")
	}}
)

// needsSetup is the one command that installs every adapter's runtime.
const needsSetup = "make adapter-deps"

// NodeEtcd3 is the node-etcd3 adapter's Program, or what to install.
func NodeEtcd3() (*Program, error) { return nodeEtcd3.program() }

// Etcdctl is the etcdctl adapter's Program (etcdctl built from the etcd
// module lockbench embeds, in bin/), or what to install.
func Etcdctl() (*Program, error) { return etcdctl37.program() }

// Etcdctl34 is the etcdctl-3.4 adapter's Program (Debian's etcd-client),
// or what to install.
func Etcdctl34() (*Program, error) { return etcdctl34.program() }

func findNodeEtcd3() (*Program, error) {
	if _, err := os.Stat(Node); err != nil {
		return nil, fmt.Errorf("adapter node-etcd3: needs %s (apt-get install nodejs npm, or %s): %w", Node, needsSetup, err)
	}
	script, err := repoFile("adapters/node-etcd3/lock.js")
	if err != nil {
		return nil, fmt.Errorf("adapter node-etcd3: %w", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "etcd3", "package.json")); err != nil {
		return nil, fmt.Errorf("adapter node-etcd3: the etcd3 package is not installed beside %s (%s, or npm ci in its folder)", script, needsSetup)
	}
	return &Program{Name: "node-etcd3", Command: []string{Node, script}, Ready: true, Cancel: true}, nil
}

// etcdctlBuilt is bin/etcdctl in the checkout.
func etcdctlBuilt() (string, error) { return repoFile("bin/etcdctl") }

// findEtcdctl is the etcdctl adapter over the binary that where finds,
// whose `etcdctl version` must start with version.
func findEtcdctl(name string, where func() (string, error), version string) (*Program, error) {
	if _, err := os.Stat(Python); err != nil {
		return nil, fmt.Errorf("adapter %s: needs %s to run its wrapper (apt-get install python3, or %s): %w", name, Python, needsSetup, err)
	}
	bin, err := where()
	if err == nil {
		err = etcdctlVersion(bin, version)
	}
	if err != nil {
		return nil, fmt.Errorf("adapter %s: needs etcdctl %s (%s): %w", name, strings.TrimSuffix(version, "."), needsSetup, err)
	}
	return &Program{Name: name, Command: []string{Python, "-c", etcdctlLock, bin}, Ready: true, Cancel: true}, nil
}

// etcdctlVersion checks that bin says "etcdctl version: " + version….
func etcdctlVersion(bin, version string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return fmt.Errorf("%s version: %w", bin, err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	if !strings.HasPrefix(first, "etcdctl version: "+version) {
		return fmt.Errorf("%s is %q, want %s", bin, first, version)
	}
	return nil
}

// etcdVersion is the etcd client module's version lockbench is built
// with (e.g. "3.7.3"): etcdctl from the same release.
func etcdVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "go.etcd.io/etcd/client/v3" {
				return strings.TrimPrefix(m.Version, "v")
			}
		}
	}
	return "3.7."
}
