package locktest

import (
	"context"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/locks"
	conformance "github.com/lockbench/lockbench/locktest"
)

// TestCancelCutOff runs the CancelCutOff subtest on a real cluster: queue,
// whose cleanup has its own deadline, passes; etcd's concurrency.Mutex
// (the mutex strategy, unchanged) fails it, since its cancelled Lock
// deletes its key with the client's context and waits for the members
// (etcd #18082) — locktest's clients have no per-request deadline to end
// that wait.
func TestCancelCutOff(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	c, err := cluster.Start(context.Background(), cluster.Options{UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for _, tc := range []struct {
		lock string
		fail bool
	}{{"queue", false}, {"mutex", true}} {
		t.Run(tc.lock, func(t *testing.T) {
			st, err := locks.Lookup(tc.lock)
			if err != nil {
				t.Fatal(err)
			}
			env := Env{Endpoints: c.Endpoints(), CutOff: true}.withDefaults()
			r := conformance.Record("CancelCutOff", func(t T) { newSuite(t, st.New, env).cancelCutOff() })
			var cut []string
			for _, f := range r.Failures {
				t.Logf("%s", f)
				if strings.Contains(f.Message, "cancelled while cut off") {
					cut = append(cut, f.Message)
				}
			}
			switch {
			case tc.fail && len(cut) == 0:
				t.Errorf("%s passed CancelCutOff: its cancelled Lock returned in time while cut off", tc.lock)
			case !tc.fail && len(r.Failures) > 0:
				t.Errorf("%s failed CancelCutOff: %v", tc.lock, r.Failures)
			}
		})
	}
}
