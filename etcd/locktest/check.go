package locktest

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/lockbench/lockbench/locks"
)

// Failure is one thing the suite found wrong, under the subtest's name.
type Failure struct {
	Subtest string
	Message string
}

func (f Failure) String() string { return f.Subtest + ": " + f.Message }

// Check runs the whole suite against factory outside go test and returns
// what failed (nil when the strategy conforms). It is Run for programs —
// a catalogue of mutants that must each be caught, or a CLI — that need
// the verdict as a value rather than a failed test.
func Check(factory locks.Factory, env Env) []Failure {
	env = env.withDefaults()
	if len(env.Endpoints) == 0 {
		return []Failure{{Subtest: "setup", Message: "Env.Endpoints is empty"}}
	}
	var out []Failure
	for _, tc := range subtests {
		r := &recorder{name: tc.name}
		r.run(func() { tc.f(newSuite(r, factory, env)) })
		out = append(out, r.failures...)
	}
	return out
}

// recorder is a T that collects failures. Fatal ends the subtest's
// goroutine (runtime.Goexit, as testing does); cleanups run after it, in
// reverse order, each in its own goroutine so that a Fatal in one does not
// skip the rest.
type recorder struct {
	name     string
	mu       sync.Mutex
	failures []Failure
	cleanups []func()
}

func (r *recorder) run(f func()) {
	inGoroutine(f)
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		inGoroutine(r.cleanups[i])
	}
}

// inGoroutine runs f to its end or its runtime.Goexit.
func inGoroutine(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, Failure{Subtest: r.name, Message: fmt.Sprintf(format, args...)})
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) {
	r.Errorf("%s", fmt.Sprint(args...))
	runtime.Goexit()
}

func (r *recorder) Logf(string, ...any) {}

// Skip ends the subtest without a failure (e.g. TryLock for a strategy
// that is not a TryLocker).
func (r *recorder) Skip(...any) { runtime.Goexit() }

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.failures) > 0
}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
