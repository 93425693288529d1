package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
)

// The recipes of docs/recipes/ (docs/scale.md) are held to what lockbench
// relies on by their own module's tests (docs/recipes, with the
// Kubernetes API's types, which lockbench itself does not import); this
// one runs the GitHub Actions workflow's commands.

// workflowCommands are the run lines of the recipe's workflow that start
// with ./lockbench suite and ./lockbench merge, and the shard count of
// its matrix.
func workflowCommands(t *testing.T) (suite, merge string, shards int) {
	t.Helper()
	b, err := os.ReadFile("../docs/recipes/github-actions.yml")
	if err != nil {
		t.Fatal(err)
	}
	var w struct {
		Jobs map[string]struct {
			Strategy struct {
				Matrix struct {
					Shard []int `yaml:"shard"`
				} `yaml:"matrix"`
			} `yaml:"strategy"`
			Steps []struct {
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(b, &w); err != nil {
		t.Fatalf("github-actions.yml: %v", err)
	}
	for _, job := range w.Jobs {
		shards = max(shards, len(job.Strategy.Matrix.Shard))
		for _, s := range job.Steps {
			switch {
			case strings.HasPrefix(s.Run, "./lockbench suite "):
				suite = s.Run
			case strings.HasPrefix(s.Run, "./lockbench merge "):
				merge = s.Run
			}
		}
	}
	if suite == "" || merge == "" || shards == 0 {
		t.Fatalf("github-actions.yml: want a shard matrix, a ./lockbench suite step and a ./lockbench merge step; got %d shards, %q, %q", shards, suite, merge)
	}
	return suite, merge, shards
}

// TestGitHubActionsRecipeRuns runs the workflow's shard command for every
// shard of its matrix (narrowed to a small matrix by flags added at the
// end) and then its merge command, in a folder of their own as the jobs'
// working folders: the merge finds every shard and exits 0 with every
// cell of the narrowed matrix.
func TestGitHubActionsRecipeRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd clusters")
	}
	suite, merge, n := workflowCommands(t)
	t.Chdir(t.TempDir())
	// 1 s cells: a 300 ms one failed under make test's load.
	narrow := []string{"--locks", "txn", "--scenarios", "contention,herd", "--quick-duration", "1s"}
	for i := 1; i <= n; i++ {
		args := commandArgs(strings.ReplaceAll(suite, "${{ matrix.shard }}", strconv.Itoa(i)))
		if code, stdout, stderr := runCLI(t, append(args, narrow...)...); code != 0 {
			t.Fatalf("shard %d: exit %d: %s\n%s", i, code, stderr, stdout)
		}
	}
	args := commandArgs(merge)
	var expanded []string
	for _, a := range args {
		if m, _ := filepath.Glob(a); strings.Contains(a, "*") {
			expanded = append(expanded, m...)
		} else {
			expanded = append(expanded, a)
		}
	}
	code, stdout, stderr := runCLI(t, expanded...)
	if code != 0 {
		t.Fatalf("merge: exit %d: %s\n%s", code, stderr, stdout)
	}
	if !strings.Contains(stdout, strconv.Itoa(n)+" of "+strconv.Itoa(n)+" shards") {
		t.Errorf("merge: %q, want all %d shards", stdout, n)
	}
	dirs, _ := filepath.Glob(filepath.Join(flagValue(t, merge, "--out"), "suite-*-merged"))
	if len(dirs) != 1 {
		t.Fatalf("merged folders %v, want one", dirs)
	}
	s, err := report.ReadSuiteFile(filepath.Join(dirs[0], rundir.SuiteFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cells) != 2*2 { // 2 scenarios × 2 seeds
		t.Errorf("merged %d cells, want 4 (txn × contention, herd × seeds 1, 2)", len(s.Cells))
	}
	if _, err := os.Stat(flagValue(t, merge, "--junit")); err != nil {
		t.Error(err)
	}
}

// commandArgs are a recipe's command line's arguments after the
// program's name.
func commandArgs(line string) []string { return strings.Fields(line)[1:] }

// flagValue is the value of flag in a command line.
func flagValue(t *testing.T, line, flag string) string {
	t.Helper()
	args := strings.Fields(line)
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("%q: no %s", line, flag)
	}
	return args[i+1]
}
