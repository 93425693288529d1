package verdict

import (
	"errors"
	"strings"
	"testing"
)

func TestWorst(t *testing.T) {
	for _, tc := range []struct {
		in   []Verdict
		want Verdict
	}{
		{nil, Pass},
		{[]Verdict{Pass, Unknown}, Unknown},
		{[]Verdict{Unknown, Fail, Pass}, Fail},
	} {
		if got := Worst(tc.in...); got != tc.want {
			t.Errorf("Worst(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestExpectationsFor: the baseline under the defaults under the
// backend's under the policy's under the lock's own entries; "any"
// un-asserts a check at any level.
func TestExpectationsFor(t *testing.T) {
	e := Expectations{
		DefaultKey:                {Exclusion: Pass, Liveness: Pass},
		"naive":                   {Exclusion: Fail, Liveness: Any},
		"racy":                    {Symmetry: Any},
		BackendPrefix + "redis":   {Exclusion: Fail, Fencing: Fail},
		KeepAlivePrefix + "never": {Fencing: Pass},
	}
	got := e.For(Subject{Lock: "naive", KeepAlive: "auto"})
	if got[Exclusion] != Fail || got[Progress] != Pass {
		t.Errorf("naive: %v", got)
	}
	if _, judged := got[Liveness]; judged {
		t.Errorf("naive: liveness is un-asserted, got %v", got)
	}
	if _, judged := e.For(Subject{Lock: "racy", KeepAlive: "auto"})[Symmetry]; judged {
		t.Errorf("racy: the baseline's symmetry is un-asserted")
	}
	if got := e.For(Subject{Lock: "other", KeepAlive: "auto"}); got[Exclusion] != Pass || got[Lease] != Pass {
		t.Errorf("other: %v", got)
	}
	if got := e.For(Subject{Lock: "setnx", Backend: "redis"}); got[Exclusion] != Fail || got[Fencing] != Fail || got[Liveness] != Pass {
		t.Errorf("a redis lock: %v, want the backend's entries over the defaults", got)
	}
	if got := e.For(Subject{Lock: "setnx", Backend: "redis", KeepAlive: "never"}); got[Fencing] != Pass {
		t.Errorf("a redis lock under never: %v, want the policy's fencing over the backend's", got)
	}
	if got, want := e.Decider(Subject{Lock: "naive", Backend: "redis"}, Exclusion), "naive"; got != want {
		t.Errorf("decider of naive's exclusion: %q, want %q", got, want)
	}
	if got := e.Decider(Subject{Lock: "q", Backend: "etcd"}, Fairness); got != "" {
		t.Errorf("decider of an unnamed check: %q, want none", got)
	}
}

func TestExpectationsValidate(t *testing.T) {
	isLock := func(l string) error {
		if l == "queue" {
			return nil
		}
		return errors.New("unknown lock " + l)
	}
	for _, tc := range []struct {
		e    Expectations
		want string
	}{
		{Expectations{"queue": {Exclusion: Pass}}, ""},
		{Expectations{"nolock": {Exclusion: Pass}}, "unknown lock nolock"},
		{Expectations{DefaultKey: {"safety": Pass}}, `unknown check "safety"`},
		{Expectations{DefaultKey: {Exclusion: "ok"}}, `verdict "ok"`},
		{Expectations{BackendPrefix + "queue": {Exclusion: Pass}}, ""},
		{Expectations{BackendPrefix + "mongo": {Exclusion: Pass}}, "backend:mongo: unknown lock mongo"},
	} {
		err := tc.e.Validate(func(string) string { return "f.yaml:3" }, Names{Lock: isLock, KeepAlive: isLock, Backend: isLock})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.e, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "f.yaml:3")):
			t.Errorf("%v: %v, want %q and the place", tc.e, err, tc.want)
		}
	}
}
