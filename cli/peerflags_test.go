package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPeerFaultFlags: a scenario with peer faults is refused on an
// embedded cluster without the flag it needs, naming the flag, before
// anything starts; --snapshot-count is refused on member processes.
func TestPeerFaultFlags(t *testing.T) {
	scenario := filepath.Join("..", "examples", "peer-faults.yaml")
	out := filepath.Join(t.TempDir(), "runs")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"snapshot-catchup", "--snapshot-count"}},
		{[]string{"--snapshot-count", "100"}, []string{"drop-peers", "--peer-relays"}},
		{[]string{"--peer-relays", "--snapshot-count", "5000"}, []string{"snapshot-catchup", "--snapshot-count 1..1000"}},
		{[]string{"--snapshot-count", "100", "--etcd-bin", "self"}, []string{"--snapshot-count 100", "embedded"}},
	} {
		args := append([]string{"run", "--lock", "queue", "--scenario", scenario, "--out", out}, tc.args...)
		code, _, stderr := runCLI(t, args...)
		wantUsage(t, code, stderr, tc.want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused run wrote %s", out)
	}
}
