package check

import (
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// TestLeaseOverrunBound: a holder whose key went with its lease must be
// told within Options.OverrunBound (its paused time not counted), whatever
// fault explains the loss; told in time passes, told late or never fails
// with the overrun in the message.
func TestLeaseOverrunBound(t *testing.T) {
	// p0 holds token 10 from 1ms, cut off from 100ms to 3s; its key goes
	// with its lease at 1.1s.
	held := func(rest ...history.Event) []history.Event {
		return cat([]history.Event{ev(0, 0, inv, acq, 0), ev(msec(1), 0, ok, acq, 10)},
			clientFault(msec(100), sec(3), "isolate-client", 0),
			[]history.Event{deleted(msec(1100), 10, history.CauseLease)}, rest)
	}
	toldAt := func(t int64) []history.Event { return held(proc(t, 0, ok, history.FLeaseLost)) }
	releasedAt := func(t int64) []history.Event {
		return held(ev(t, 0, inv, rel, 0), ev(t+msec(1), 0, ok, rel, 0))
	}
	bound := 1500 * time.Millisecond
	for _, tc := range []struct {
		name   string
		events []history.Event
		bound  time.Duration
		want   verdict.Verdict
		says   string
	}{
		{"told 900ms late, within 1.5s", toldAt(sec(2)), bound, verdict.Pass, ""},
		{"told exactly at the bound", toldAt(msec(2600)), bound, verdict.Pass, ""},
		{"told 2s late", toldAt(msec(3100)), bound, verdict.Fail,
			"was told its lease was lost only at 3.1s — a belief overrun of 2s (time paused not counted), past the 1.5s"},
		{"never told: released 2.9s later", releasedAt(sec(4)), bound, verdict.Fail,
			"was never told its lease was lost: it held until it released at 4s — a belief overrun of 2.9s"},
		{"never told: still holding at the end", held(ev(sec(5), 1, inv, acq, 0)), bound, verdict.Fail,
			"it still held at the end of the history — a belief overrun of 3.9s"},
		{"never told, but released within the bound", releasedAt(sec(2)), bound, verdict.Pass, ""},
		{"gave up before the key went: no overrun", cat([]history.Event{ev(0, 0, inv, acq, 0), ev(msec(1), 0, ok, acq, 10)},
			clientFault(msec(100), sec(3), "isolate-client", 0),
			[]history.Event{proc(msec(1000), 0, ok, history.FLeaseLost), deleted(msec(1100), 10, history.CauseLease)}), 0, verdict.Pass, ""},
		{"the safe policy's bound is tighter", toldAt(sec(2)), 750 * time.Millisecond, verdict.Fail, "past the 750ms"},
		{"negative bound: not judged", releasedAt(sec(5)), -1, verdict.Pass, ""},
		{"default bound (auto at 5s TTL: 2.67s)", toldAt(msec(3700)), 0, verdict.Pass, ""},
		{"default bound exceeded", toldAt(msec(3800)), 0, verdict.Fail, "past the 2.666666666s"},
		{"paused time does not count", held(proc(msec(1000), 0, ok, history.FPause), proc(msec(2900), 0, ok, history.FResume),
			proc(msec(3000), 0, ok, history.FLeaseLost)), 750 * time.Millisecond, verdict.Pass, ""},
		{"paused, then told too late", held(proc(msec(1000), 0, ok, history.FPause), proc(msec(2000), 0, ok, history.FResume),
			proc(msec(3000), 0, ok, history.FLeaseLost)), 750 * time.Millisecond, verdict.Fail, "a belief overrun of 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := CheckLease(tc.events, Options{OverrunBound: tc.bound})
			if res.Verdict != tc.want {
				t.Fatalf("verdict %s, want %s: %+v", res.Verdict, tc.want, res.Violations)
			}
			if tc.says != "" && (len(res.Violations) == 0 || !strings.Contains(res.Violations[0].Message, tc.says)) {
				t.Errorf("violations %+v, want one saying %q", res.Violations, tc.says)
			}
		})
	}
}
