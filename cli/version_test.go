package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/rundir"
)

// TestVersion: `lockbench version` and `lockbench --version` print the
// build as the files it writes name it (lockbench_version) and their
// schema_version, and exit 0; an argument is bad input.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		code, stdout, stderr := runCLI(t, args...)
		first, _, _ := strings.Cut(stdout, "\n")
		if code != ExitPass || first != "lockbench "+rundir.ThisBuild() || !strings.Contains(stdout, fmt.Sprintf("schema_version %d\n", rundir.SchemaVersion)) || stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "version", "extra"); code != ExitUsage || !strings.Contains(stderr, `"extra"`) {
		t.Errorf("version extra: exit %d, stderr %q; want exit 2 naming it", code, stderr)
	}
}
