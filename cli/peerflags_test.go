package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/scenarios"
)

// TestPeerFaultFlags: the harness gives a peer-fault scenario the
// cluster it needs without flags (ClusterFor), so what is still refused,
// before anything starts and naming why, is a cluster that cannot have
// it: a snapshot count the fault cannot reach, member processes for
// snapshot-catchup (their flags set no snapshot count), --snapshot-count
// on member processes, and an external cluster.
func TestPeerFaultFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "runs")
	for _, tc := range []struct {
		scenario string
		args     []string
		want     []string
	}{
		{"snapshot-catchup", []string{"--snapshot-count", "5000"}, []string{"snapshot-catchup", "--snapshot-count 1..1000"}},
		{"snapshot-catchup", []string{"--etcd-bin", "self"}, []string{"snapshot-catchup", "process cluster does not set the members' snapshot count"}},
		{"drop-peers", []string{"--snapshot-count", "100", "--etcd-bin", "self"}, []string{"--snapshot-count 100", "embedded"}},
		{"delay-peers", []string{"--endpoints", "http://127.0.0.1:1"}, []string{"delay-peers", "member faults"}},
	} {
		args := append([]string{"run", "--lock", "queue", "--scenario", tc.scenario, "--out", out}, tc.args...)
		code, _, stderr := runCLI(t, args...)
		wantUsage(t, code, stderr, tc.want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused run wrote %s", out)
	}
}

// TestSuiteExtended: suite --extended runs the default scenarios, then
// the extended set; with --scenarios, those alone, found by name in
// either set; on an external cluster the extended ones (member faults)
// are left out of the default list, as the default set's are.
func TestSuiteExtended(t *testing.T) {
	names := func(args ...string) []string {
		t.Helper()
		fs := newFlags(&env{stdout: os.Stdout}, "suite", "suite")
		o := suiteOptions{inject: injectDelayFlag{}}
		o.register(fs)
		if err := fs.parseFlagsOnly(append([]string{"--locks", "queue", "--out", t.TempDir()}, args...)); err != nil {
			t.Fatal(err)
		}
		o.set = fs.given()
		spec, err := o.spec(t.Context())
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var out []string
		for _, sc := range spec.Scenarios {
			out = append(out, sc.Name)
		}
		return out
	}
	def, ext := scenarios.Names(), scenarios.ExtendedNames()
	if len(ext) < 4 {
		t.Fatalf("extended set %v: want the four peer faults", ext)
	}
	if got := strings.Join(names(), ","); got != strings.Join(def, ",") {
		t.Errorf("default: %s", got)
	}
	if got, want := strings.Join(names("--extended"), ","), strings.Join(append(append([]string{}, def...), ext...), ","); got != want {
		t.Errorf("--extended: %s, want %s", got, want)
	}
	if got := strings.Join(names("--extended", "--scenarios", ext[0]+",contention"), ","); got != ext[0]+",contention" {
		t.Errorf("--extended --scenarios: %s", got)
	}
	if got := strings.Join(names("--scenarios", ext[1]), ","); got != ext[1] {
		t.Errorf("an extended scenario by name: %s", got)
	}
	for _, n := range names("--extended", "--endpoints", "http://127.0.0.1:1") {
		if sc, _ := scenarios.Lookup(n); slices.Contains(ext, n) && sc.Needs().Members {
			t.Errorf("--extended --endpoints kept %s, whose faults need members lockbench runs", n)
		}
	}
}
