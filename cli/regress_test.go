package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

// regress keeps its own flags and passes every other argument, in order,
// to both suites.
func TestParseRegressSplitsFlags(t *testing.T) {
	var stderr bytes.Buffer
	e := &env{stdout: &stderr, stderr: &stderr, scratch: &scratch{}}
	o, err := parseRegress(e, []string{"--base", "HEAD", "--locks", "queue,txn", "--reps=3", "--inject-delay", "queue=2ms",
		"--scenarios", "contention", "--threshold", "30%", "--quick-duration", "1s", "--out", t.TempDir()})
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	if o.base != "HEAD" || o.reps != 3 || o.inject["queue"] != 2*time.Millisecond || o.compare.threshold.v != 0.3 {
		t.Errorf("own flags: %+v", o)
	}
	want := []string{"--locks", "queue,txn", "--scenarios", "contention", "--quick-duration", "1s"}
	if !slices.Equal(o.suiteArgs, want) {
		t.Errorf("suite args %q, want %q", o.suiteArgs, want)
	}
	if got := injectArgs(o.inject); !slices.Equal(got, []string{"--inject-delay", "queue=2ms"}) {
		t.Errorf("new side's extra args %q", got)
	}
}

func TestRegressBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--base REV is required"},
		{[]string{"--base", "no-such-revision-xyz"}, "not a git revision"},
		{[]string{"--base", "HEAD", "--reps", "0"}, "--reps 0"},
		{[]string{"--base", "HEAD", "--alpha", "0"}, "--alpha"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Run(append([]string{"regress"}, tc.args...), &stdout, &stderr); code != ExitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
