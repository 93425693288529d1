package cli

import (
	"strings"
	"testing"
)

// Bad --etcd-bin values are bad input, named, before anything starts.
func TestEtcdBinBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--lock", "queue", "--scenario", "contention", "--etcd-bin", "/nonexistent/etcd"}, "--etcd-bin /nonexistent/etcd"},
		{[]string{"run", "--lock", "queue", "--scenario", "contention", "--etcd-bin", "/tmp"}, "--etcd-bin /tmp"},
		{[]string{"cluster", "--etcd-bin", "self"}, "lockbench cluster keeps only the embedded cluster"},
		{[]string{"run", "--lock", "queue", "--scenario", "contention", "--etcd-bin", "self,/usr/bin/etcd"}, "a dimension of suite only"},
		{[]string{"suite", "--locks", "queue", "--scenarios", "contention", "--etcd-bin", "self,self"}, "--etcd-bin: self given twice"},
		{[]string{"suite", "--locks", "queue", "--scenarios", "contention", "--etcd-bin", "self,/bin/true"}, "--etcd-bin /bin/true"},
		{[]string{"run", "--lock", "queue", "--scenario", "../examples/pause-leader.yaml"}, "the embedded cluster cannot freeze one member"},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, ExitUsage, tc.want)
		}
	}
}
