package check

import (
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// TestExclusionExcusesARevoke: an operator's revoke ends the holder's
// lease on the server at once and the lock moves on, while the holder
// hears of it only at its next keepalive answer. The overlap that makes is
// excused when the holder stops within the policy's overrun bound, and
// only then: told late, never told, a revoke of another client, a revoke
// after the successor's grant, or a grant to the revoked client itself
// (etcd's Campaign) are still two holders at once.
func TestExclusionExcusesARevoke(t *testing.T) {
	const bound = 750 * time.Millisecond
	// p0 holds token 10 from 1ms; its lease is revoked at 300ms (by
	// default), its key seen gone at 301ms; p1 is granted token 20 at
	// 310ms. stop ends p0's hold.
	run := func(revokeAt int64, revoked int, stop ...history.Event) []history.Event {
		return cat([]history.Event{ev(0, 0, inv, acq, 0), ev(msec(1), 0, ok, acq, 10), ev(msec(2), 1, inv, acq, 0)},
			clientFault(revokeAt, revokeAt+msec(1), "revoke-lease", revoked),
			[]history.Event{deleted(msec(301), 10, history.CauseLease), ev(msec(310), 1, ok, acq, 20)}, stop)
	}
	toldAt := func(t int64) history.Event { return proc(t, 0, ok, history.FLeaseLost) }
	for _, tc := range []struct {
		name   string
		events []history.Event
		bound  time.Duration
		want   verdict.Verdict
		says   string
	}{
		{"told 400ms after the revoke", run(msec(300), 0, toldAt(msec(700))), bound, verdict.Pass, "1 overlap began after an operator revoked"},
		{"told at the bound", run(msec(300), 0, toldAt(msec(301)+int64(bound))), bound, verdict.Pass, ""},
		{"told late", run(msec(300), 0, toldAt(msec(1200))), bound, verdict.Fail, "held by two processes at once"},
		{"never told, released late", run(msec(300), 0, ev(sec(2), 0, inv, rel, 0)), bound, verdict.Fail, ""},
		{"never told, still holding", run(msec(300), 0), bound, verdict.Fail, ""},
		{"another client's lease revoked", run(msec(300), 2, toldAt(msec(700))), bound, verdict.Fail, ""},
		{"revoked only after the successor's grant", run(msec(320), 0, toldAt(msec(700))), bound, verdict.Fail, ""},
		{"no key-deleted event: the revoke is not seen to have taken the key", cat(
			[]history.Event{ev(0, 0, inv, acq, 0), ev(msec(1), 0, ok, acq, 10), ev(msec(2), 1, inv, acq, 0)},
			clientFault(msec(300), msec(301), "revoke-lease", 0),
			[]history.Event{ev(msec(310), 1, ok, acq, 20), toldAt(msec(400))}), bound, verdict.Fail, ""},
		{"the grantee's own lease revoked while it waited", cat(
			[]history.Event{ev(0, 0, inv, acq, 0), ev(msec(1), 0, ok, acq, 10), ev(msec(2), 1, inv, acq, 0)},
			clientFault(msec(300), msec(301), "revoke-lease", 1),
			[]history.Event{deleted(msec(301), 20, history.CauseLease), ev(msec(310), 1, ok, acq, 20), toldAt(msec(400))}), bound, verdict.Fail, ""},
		{"negative bound: any revoke's overlap", run(msec(300), 0, toldAt(sec(3))), -1, verdict.Pass, ""},
		{"paused time does not count", run(msec(300), 0, proc(msec(400), 0, ok, history.FPause), proc(msec(1400), 0, ok, history.FResume),
			toldAt(msec(1500))), bound, verdict.Pass, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := CheckExclusion(tc.events, Options{OverrunBound: tc.bound})
			if res.Verdict != tc.want {
				t.Fatalf("verdict %s, want %s: %+v (note %q)", res.Verdict, tc.want, res.Violations, res.Note)
			}
			if tc.says != "" && !strings.Contains(res.Note+messages(res), tc.says) {
				t.Errorf("note %q, violations %+v: want %q", res.Note, res.Violations, tc.says)
			}
			if _, ok := res.Metrics["revoked_overlaps"]; !ok {
				t.Errorf("no revoked_overlaps metric in a history with a revoke: %v", res.Metrics)
			}
		})
	}
}

func messages(r Result) string {
	var b strings.Builder
	for _, v := range r.Violations {
		b.WriteString(v.Message)
	}
	return b.String()
}
