package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// injectUsage is --inject-delay's help text, shared by run, suite and
// regress.
const injectUsage = "test only: hold every grant of a strategy this long before Lock returns, `LOCK=DURATION[,...]` e.g. queue=2ms (a known regression, to show that compare/regress catches it)"

// injectDelayFlag is --inject-delay LOCK=D[,LOCK=D...]: a deliberate
// slowdown of named strategies, applied by the runner around their Locker.
type injectDelayFlag map[string]time.Duration

// String prints the flag back in the form Set takes.
func (f injectDelayFlag) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(f)) {
		parts = append(parts, k+"="+f[k].String())
	}
	return strings.Join(parts, ",")
}

// Set parses "queue=2ms" or "queue=2ms,txn=1ms".
func (f injectDelayFlag) Set(s string) error {
	for _, part := range splitList(s) {
		lock, ds, ok := strings.Cut(part, "=")
		if !ok || strings.TrimSpace(lock) == "" {
			return fmt.Errorf("%q: want LOCK=DURATION, e.g. queue=2ms", part)
		}
		d, err := time.ParseDuration(strings.TrimSpace(ds))
		if err != nil || d <= 0 {
			return fmt.Errorf("%q: want a duration > 0 after '=', e.g. queue=2ms", part)
		}
		f[strings.TrimSpace(lock)] = d
	}
	return nil
}

// only checks that the flag names no strategy but lock (run takes one)
// and returns its delay.
func (f injectDelayFlag) only(lock string) (time.Duration, error) {
	for l := range f {
		if l != lock {
			return 0, badInputf("--inject-delay %s: this run's lock is %s", f, lock)
		}
	}
	return f[lock], nil
}
