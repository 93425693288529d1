package harness

import (
	"os"
	"os/exec"
	"path"
	"strings"
	"testing"
)

// TestLayering keeps the data flowing one way (docs/design.md §2): the run
// folder contract sits below everything that checks or renders runs, and
// a scenario (data) does not know the lock strategies.
func TestLayering(t *testing.T) {
	const mod = "github.com/lockbench/lockbench/"
	for pkg, banned := range map[string][]string{
		"rundir":    {"report", "check", "locks", "scenarios", "harness", "runner"},
		"scenarios": {"locks", "check", "report", "rundir", "runner"},
		"chaos":     {"check", "report", "scenarios", "locks", "etcd/cluster"},
		"check":     {"report", "rundir", "scenarios", "locks", "runner"},
		"harness":   {"bench", "suite", "cli"},
		"suite":     {"bench", "cli"},
	} {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		for _, b := range banned {
			for _, d := range deps {
				if d == mod+b {
					t.Errorf("%s depends on %s", pkg, b)
				}
			}
		}
	}
}

// TestStagesNameNoBackend: the stages every backend shares import no
// backend's client (docs/design.md §2), so that a new backend plugs in
// without them changing. A strategy's backend lives in its own package
// (etcd/etcdlocks, redislocks, zklocks).
func TestStagesNameNoBackend(t *testing.T) {
	const mod = "github.com/lockbench/lockbench/"
	for _, pkg := range []string{"backend", "locks", "locktest", "runner", "relay", "check", "report", "scenarios", "chaos", "rundir", "history", "verdict", "stats", "clocks"} {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, d := range strings.Fields(string(out)) {
			if strings.HasPrefix(d, "go.etcd.io/") || strings.HasPrefix(d, "github.com/redis/") || strings.HasPrefix(d, "github.com/go-zookeeper/") {
				t.Errorf("%s depends on %s, a backend's client", pkg, d)
			}
		}
	}
}

// TestDesignListsEveryPackage keeps docs/design.md §2's package table
// true: every package of the module (but examples, test helpers and the
// adapters' own programs) has a row, and every row is a package.
func TestDesignListsEveryPackage(t *testing.T) {
	const mod = "github.com/lockbench/lockbench/"
	out, err := exec.Command("go", "list", mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	doc, err := os.ReadFile("../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	inTable := false
	for _, line := range strings.Split(string(doc), "\n") {
		switch {
		case strings.HasPrefix(line, "| package | role |"):
			inTable = true
		case inTable && !strings.HasPrefix(line, "|"):
			inTable = false
		case inTable && strings.HasPrefix(line, "| `"):
			rows[strings.Trim(strings.Fields(line)[1], "`")] = true
		}
	}
	listed := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		p = strings.TrimPrefix(p, mod)
		if base := path.Base(p); strings.HasPrefix(p, "examples/") || strings.HasSuffix(base, "test") && base != "locktest" || strings.HasPrefix(p, "adapters/") {
			continue
		}
		listed[p] = true
		if !rows[p] {
			t.Errorf("package %s has no row in docs/design.md §2", p)
		}
	}
	for r := range rows {
		if !listed[r] {
			t.Errorf("docs/design.md §2 lists %s, which is not a package", r)
		}
	}
}
