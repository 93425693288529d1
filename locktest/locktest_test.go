package locktest

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/locks"
)

// named is a backend.Backend of which validation reads only its name.
type named struct {
	backend.Backend
	name string
}

func (n named) Name() string { return n.name }

func init() {
	locks.Register(locks.Strategy{Name: "registered-on-etcd", Backend: "etcd", Hidden: true,
		New: func(context.Context, locks.Conn, locks.Options) (locks.Locker, error) {
			return nil, errors.New("not made")
		}})
}

// TestEnvSaysWhatIsMissing: Check refuses an incomplete Env with one
// setup failure naming the field and what to give.
func TestEnvSaysWhatIsMissing(t *testing.T) {
	for _, tc := range []struct {
		env  Env
		want string
	}{
		{Env{Endpoints: []string{"x"}}, "Env.Backend is nil"},
		{Env{Backend: named{}}, "Env.Endpoints is empty"},
		{Env{Backend: named{}, Endpoints: []string{"x"}}, "Env.Factory is nil and Env.Strategy empty"},
		{Env{Backend: named{}, Endpoints: []string{"x"}, Strategy: "no-such-lock"}, `unknown lock "no-such-lock"`},
		{Env{Backend: named{name: "zookeeper"}, Endpoints: []string{"x"}, Strategy: "registered-on-etcd"}, "strategy registered-on-etcd runs on etcd, not on Env.Backend's zookeeper"},
	} {
		r := Check(tc.env)
		if len(r.Failures) != 1 || r.Failures[0].Subtest != "setup" || !strings.Contains(r.Failures[0].Message, tc.want) {
			t.Errorf("Check(%+v) = %v, want one setup failure saying %q", tc.env, r.Failures, tc.want)
		}
	}
}

// TestIsLockKey: a lock's keys are Options.Key() and the keys under it,
// never a sibling name's that shares its string prefix.
func TestIsLockKey(t *testing.T) {
	opts := locks.Options{Name: "lock", Prefix: "/p/"}
	for key, want := range map[string]bool{
		"/p/locks/lock":         true,
		"/p/locks/lock/_c_1-00": true,
		"/p/locks/lock0":        false,
		"/p/locks/lock0/x":      false,
		"/p/locks/lock:token":   false,
		"/p/locks/loc":          false,
		"/q/locks/lock":         false,
	} {
		if got := isLockKey(opts, key); got != want {
			t.Errorf("isLockKey(%q) = %v, want %v", key, got, want)
		}
	}
}

// TestRecord: a recorded subtest keeps its failures and its skip's
// reason, stops at a Fatal or a Skip, and runs its cleanups after, last
// registered first.
func TestRecord(t *testing.T) {
	var order []string
	r := Record("X", func(t T) {
		t.Cleanup(func() { order = append(order, "first") })
		t.Cleanup(func() { order = append(order, "second") })
		t.Errorf("wrong %d", 1)
		t.Skip("nothing to judge")
		t.Errorf("not reached")
	})
	want := Result{Failures: []Failure{{"X", "wrong 1"}}, Skipped: []Failure{{"X", "nothing to judge"}}}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("Record = %+v, want %+v", r, want)
	}
	if !reflect.DeepEqual(order, []string{"second", "first"}) {
		t.Errorf("cleanups ran %v, want second then first", order)
	}
	r = Record("Y", func(t T) { t.Fatalf("stop"); t.Errorf("not reached") })
	if len(r.Failures) != 1 || r.Failures[0].Message != "stop" {
		t.Errorf("after a Fatal: %+v", r)
	}
}
