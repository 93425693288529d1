package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSuiteRefusesBadMatrix: a suite's matrix flags that would silently run
// something other than what was typed (a negative cap meaning "no cap", an
// empty list entry, a lock or scenario twice) exit 2 naming the entry, and
// write nothing.
func TestSuiteRefusesBadMatrix(t *testing.T) {
	out := filepath.Join(t.TempDir(), "runs")
	contention := writeScenario(t, "name: contention\nclients: 2\nduration: 1s\nworkload: {kind: hold}\n")
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--quick-duration", "-1s"}, []string{"--quick-duration -1s", "≥0", "0: no cap"}},
		{[]string{"--locks", "queue,,mutex"}, []string{`--locks "queue,,mutex"`, "entry 2 is empty"}},
		{[]string{"--locks", "queue,"}, []string{`--locks "queue,"`, "entry 2 is empty"}},
		{[]string{"--locks", "queue,mutex,queue"}, []string{`"queue" is listed twice`}},
		{[]string{"--scenarios", "contention, contention"}, []string{`--scenarios`, `"contention" is listed twice`}},
		{[]string{"--scenarios", ",herd"}, []string{"entry 1 is empty"}},
		{[]string{"--scenarios", "contention," + contention}, []string{`"contention" and "` + contention + `" are both scenario "contention"`}},
		{[]string{"--keepalive", "auto,auto"}, []string{`--keepalive "auto,auto"`, "listed twice"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"suite", "--out", out}, tc.args...)...)
			wantUsage(t, code, stderr, tc.want)
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("bad input wrote %s", out)
	}
}

// wantUsage fails t unless a command exited 2 with one line on stderr
// that mentions every one of want.
func wantUsage(t *testing.T, code int, stderr string, want []string) {
	t.Helper()
	if code != ExitUsage {
		t.Errorf("exit %d, want %d; stderr: %s", code, ExitUsage, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr %q does not mention %q", stderr, w)
		}
	}
	if n := strings.Count(strings.TrimSpace(stderr), "\n"); n > 0 {
		t.Errorf("want one line of error, got %d:\n%s", n+1, stderr)
	}
}
