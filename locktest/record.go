package locktest

import (
	"fmt"
	"runtime"
	"sync"
)

// Failure is one thing the suite found wrong (or, in Result.Skipped, why
// a check was not made), under the subtest's name.
type Failure struct {
	Subtest string
	Message string
}

func (f Failure) String() string { return f.Subtest + ": " + f.Message }

// Result is what Check found: the failures, and the subtests that judged
// nothing, each with its reason (a skipped check is not a pass).
type Result struct {
	Failures []Failure
	Skipped  []Failure
}

func (r *Result) add(o Result) {
	r.Failures = append(r.Failures, o.Failures...)
	r.Skipped = append(r.Skipped, o.Skipped...)
}

// Record runs f, one subtest called name, on a T that collects its
// failures and its skip instead of failing a test; f's cleanups run
// after it, as go test runs them.
func Record(name string, f func(T)) Result {
	r := &recorder{name: name}
	r.run(func() { f(r) })
	return Result{Failures: r.failures, Skipped: r.skipped}
}

// recorder is a T that collects failures. Fatal ends the subtest's
// goroutine (runtime.Goexit, as testing does); cleanups run after it, in
// reverse order, each in its own goroutine so that a Fatal in one does not
// skip the rest.
type recorder struct {
	name     string
	mu       sync.Mutex
	failures []Failure
	skipped  []Failure
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

// Skip ends the subtest without a failure, its reason kept (e.g. TryLock
// for a strategy that is not a TryLocker).
func (r *recorder) Skip(args ...any) {
	r.mu.Lock()
	r.skipped = append(r.skipped, Failure{Subtest: r.name, Message: fmt.Sprint(args...)})
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.failures) > 0
}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
