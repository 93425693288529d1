package report

import (
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
)

// TestEtcdOverload: only etcd's refusal counts (not a timeout, which a
// partition also causes), from a fail or an info; the run is saturated
// from 1% of its acquires.
func TestEtcdOverload(t *testing.T) {
	const refused = "lock not acquired: grant lease: etcdserver: too many requests"
	const timeout = "join queue: etcd request unanswered after 1s (context deadline exceeded)"
	events := func(acquires int, errs ...history.Event) []history.Event {
		var evs []history.Event
		for range acquires {
			evs = append(evs, history.Event{Type: history.Invoke, F: history.FAcquire})
		}
		return append(evs, errs...)
	}
	fail := func(typ history.Type, f history.Function, msg string) history.Event {
		return history.Event{Type: typ, F: f, Error: msg}
	}
	for _, tc := range []struct {
		name      string
		events    []history.Event
		end       time.Duration // the run's clock (0: not known)
		refused   int           // -1: no figures
		saturated bool
	}{
		{"none refused", events(100, fail(history.Fail, history.FAcquire, timeout)), 0, -1, false},
		{"one in 200: counted, not saturated", events(200, fail(history.Fail, history.FAcquire, refused)), 0, 1, false},
		{"two in 200: saturated", events(200, fail(history.Fail, history.FAcquire, refused), fail(history.Info, history.FRelease, "delete: etcdserver: too many requests")), 0, 2, true},
		{"timeouts do not count", events(10, fail(history.Fail, history.FAcquire, timeout), fail(history.Info, history.FAcquire, refused)), 0, 1, true},
		{"after the run's end: the harness's cancellations", events(10, history.Event{Time: 6e9, Type: history.Info, F: history.FAcquire, Error: refused}), 5 * time.Second, -1, false},
		{"at the end: counted", events(10, history.Event{Time: 5e9, Type: history.Info, F: history.FAcquire, Error: refused}), 5 * time.Second, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := etcdOverload(tc.events, tc.end)
			switch {
			case tc.refused < 0 && o != nil:
				t.Fatalf("figures %+v, want none", o)
			case tc.refused < 0:
				return
			case o == nil:
				t.Fatalf("no figures, want %d refused", tc.refused)
			}
			if o.Refused != tc.refused || o.Saturated != tc.saturated {
				t.Errorf("refused %d saturated %v, want %d and %v", o.Refused, o.Saturated, tc.refused, tc.saturated)
			}
			if o.Saturated != strings.Contains(o.Reason, "refused") {
				t.Errorf("reason %q for saturated %v", o.Reason, o.Saturated)
			}
		})
	}
}
