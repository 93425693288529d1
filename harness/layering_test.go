package harness

import (
	"os/exec"
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
		"chaos":     {"check", "report", "scenarios", "locks", "cluster"},
		"check":     {"report", "rundir", "scenarios", "locks", "runner"},
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
