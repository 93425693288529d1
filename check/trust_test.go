package check

import (
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// deleted is the harness's key-deleted event for the key with token tok.
func deleted(t int64, tok int64, cause string) history.Event {
	return history.Event{Time: t, Process: history.NemesisProcess, Type: ok, F: history.FKeyDeleted, Lock: "l", Token: tok,
		Value: history.DeletionValue(history.KeyDeletion{Revision: tok + 100, Cause: cause})}
}

// clientFault is a fault on one client, from..to.
func clientFault(from, to int64, name string, p int) []history.Event {
	v := history.FaultValue(history.Fault{Fault: name, Target: "holder", Resolved: "client:" + string(rune('0'+p))})
	return []history.Event{
		{Time: from, Process: history.NemesisProcess, Type: inv, F: flt, Value: v},
		{Time: to, Process: history.NemesisProcess, Type: ok, F: flt, Value: v},
	}
}

func cat(parts ...[]history.Event) []history.Event {
	var out []history.Event
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func errEv(e history.Event, msg string) history.Event { e.Error = msg; return e }

// TestTrustChecks: progress, symmetry, lease and fencing both ways, each
// on histories that must fail and on near misses that must pass.
func TestTrustChecks(t *testing.T) {
	// p0 holds token 10 from 1ms to its release at 1s.
	hold0 := []history.Event{ev(0, 0, inv, acq, 0), ev(msec(1), 0, ok, acq, 10), ev(sec(1), 0, inv, rel, 0), ev(sec(1)+msec(1), 0, ok, rel, 0)}
	// p1 holds token 20 from 2s to 3s.
	hold1 := []history.Event{ev(msec(1500), 1, inv, acq, 0), ev(sec(2), 1, ok, acq, 20), ev(sec(3), 1, inv, rel, 0), ev(sec(3)+msec(1), 1, ok, rel, 0)}
	tests := []struct {
		name   string
		check  func([]history.Event, Options) Result
		events []history.Event
		want   verdict.Verdict
		says   string
	}{
		{"progress: nobody granted", CheckProgress, []history.Event{ev(0, 0, inv, acq, 0), errEv(ev(msec(5), 0, info, acq, 0), "deadline exceeded"),
			ev(msec(10), 1, inv, acq, 0), errEv(ev(msec(15), 1, fail, acq, 0), "permission denied")},
			verdict.Fail, "0 acquires granted, 1 failed and 1 of unknown outcome"},
		{"progress: most acquires unknown", CheckProgress, cat(hold0, []history.Event{
			ev(sec(2), 1, inv, acq, 0), errEv(ev(sec(2)+1, 1, info, acq, 0), "lease not found"),
			ev(sec(3), 1, inv, acq, 0), errEv(ev(sec(3)+1, 1, info, acq, 0), "lease not found"),
			ev(sec(4), 1, inv, acq, 0), errEv(ev(sec(4)+1, 1, info, acq, 0), "lease not found")}),
			verdict.Fail, "first errors: lease not found"},
		{"progress: try-lock failures and cancelled waits are not a lack of progress", CheckProgress, cat(hold0, []history.Event{
			ev(msec(2), 1, inv, acq, 0), ev(msec(3), 1, fail, acq, 0), ev(msec(4), 1, inv, acq, 0), ev(msec(5), 1, fail, acq, 0),
			ev(msec(6), 2, inv, acq, 0), errEv(ev(msec(7), 2, fail, acq, 0), "context canceled")}),
			verdict.Pass, ""},
		{"symmetry: the holder's key deleted by someone else", CheckSymmetry, cat(hold0[:2], []history.Event{deleted(msec(500), 10, history.CauseDelete)}, hold0[2:]),
			verdict.Fail, "process 0's lock key (token 10"},
		{"symmetry: deleted by its own release", CheckSymmetry, cat(hold0, []history.Event{deleted(sec(1)+msec(1), 10, history.CauseDelete)}),
			verdict.Pass, ""},
		{"symmetry: deleted by its lease's expiry is the lease check's", CheckSymmetry, cat(hold0[:2], []history.Event{deleted(msec(500), 10, history.CauseLease)}, hold0[2:]),
			verdict.Pass, ""},
		{"symmetry: a release by a process that never acquired", CheckSymmetry, cat(hold0[:2],
			[]history.Event{ev(msec(500), 1, inv, rel, 0), ev(msec(501), 1, ok, rel, 0)}, hold0[2:]),
			verdict.Fail, "process 1 released lock \"l\" at 500ms (line 3) but held no grant of it"},
		{"symmetry: a release by a process whose acquire failed", CheckSymmetry, cat(hold0[:2],
			[]history.Event{ev(msec(2), 1, inv, acq, 0), ev(msec(3), 1, fail, acq, 0), ev(msec(500), 1, inv, rel, 0)}, hold0[2:]),
			verdict.Fail, "process 1 released lock \"l\" at 500ms (line 5) but held no grant of it"},
		{"symmetry: a second release of one grant", CheckSymmetry, cat(hold0,
			[]history.Event{ev(sec(2), 0, inv, rel, 0), ev(sec(2)+1, 0, ok, rel, 0)}),
			verdict.Fail, "process 0 released lock \"l\" at 2s (line 5) but held no grant of it: it released it at 1s (line 3)"},
		{"symmetry: a release after an acquire of unknown outcome", CheckSymmetry, []history.Event{
			ev(0, 0, inv, acq, 0), errEv(ev(msec(5), 0, info, acq, 0), "deadline exceeded"), ev(msec(6), 0, inv, rel, 0), ev(msec(7), 0, ok, rel, 0)},
			verdict.Pass, ""},
		{"symmetry: a release cutting its own acquire short", CheckSymmetry, []history.Event{
			ev(0, 0, inv, acq, 0), ev(msec(6), 0, inv, rel, 0), ev(msec(7), 0, ok, rel, 0)},
			verdict.Pass, ""},
		{"symmetry: a retried release after one of unknown outcome", CheckSymmetry, cat(hold0[:3],
			[]history.Event{errEv(ev(sec(1)+1, 0, info, rel, 0), "timeout"), ev(sec(2), 0, inv, rel, 0), ev(sec(2)+1, 0, ok, rel, 0)}),
			verdict.Pass, ""},
		{"symmetry: late-unlock, the holder releases the grant whose lease it lost", CheckSymmetry, cat(hold0[:2],
			[]history.Event{proc(msec(500), 0, ok, history.FLeaseLost), ev(msec(600), 0, inv, rel, 0), ev(msec(601), 0, ok, rel, 0)}),
			verdict.Pass, ""},
		{"symmetry: a crashed holder's release", CheckSymmetry, cat(hold0[:2],
			[]history.Event{proc(msec(500), 0, info, history.FCrash), ev(msec(600), 0, inv, rel, 0)}),
			verdict.Pass, ""},
		{"fencing: grant tokens decrease without a resource", CheckFencing, cat(
			[]history.Event{ev(0, 0, inv, acq, 0), ev(msec(1), 0, ok, acq, 5), ev(msec(2), 0, inv, rel, 0)},
			[]history.Event{ev(msec(3), 1, inv, acq, 0), ev(msec(4), 1, ok, acq, 3), ev(msec(5), 1, inv, rel, 0)}),
			verdict.Fail, "lock \"l\" granted token 3 to process 1 at 4ms (line 5) after token 5 to process 0 at 1ms (line 2)"},
		{"fencing: a token granted twice", CheckFencing, cat(hold0,
			[]history.Event{ev(sec(2), 1, inv, acq, 0), ev(sec(2)+1, 1, ok, acq, 10)}),
			verdict.Fail, "granted token 10 to process 1"},
		{"fencing: increasing grant tokens", CheckFencing, cat(hold0, hold1), verdict.Pass, ""},
		{"fencing: grants without tokens are skipped", CheckFencing, cat(hold0,
			[]history.Event{ev(sec(2), 1, inv, acq, 0), ev(sec(2)+1, 1, ok, acq, 0), ev(sec(3), 2, inv, acq, 0), ev(sec(3)+1, 2, ok, acq, 0)}),
			verdict.Pass, ""},
		{"fencing: an acquire of unknown outcome is no grant", CheckFencing, cat(hold1,
			[]history.Event{ev(sec(4), 0, inv, acq, 0), ev(sec(4)+1, 0, info, acq, 10)}),
			verdict.Pass, ""},
		{"fencing: tokens of different locks are apart", CheckFencing, cat(hold1, []history.Event{
			{Time: sec(4), Process: 0, Type: inv, F: acq, Lock: "other"}, {Time: sec(4) + 1, Process: 0, Type: ok, F: acq, Lock: "other", Token: 3}}),
			verdict.Pass, ""},
		{"lease: lost with no fault", CheckLease, cat(hold0[:2], []history.Event{proc(msec(500), 0, ok, history.FLeaseLost)}),
			verdict.Fail, "process 0 lost its lease at 500ms"},
		{"lease: expired under its holder, unnoticed", CheckLease, cat(hold0[:2], []history.Event{deleted(msec(500), 10, history.CauseLease)}, hold0[2:]),
			verdict.Fail, "process 0's lease expired at 500ms while it held the lock (token 10)"},
		{"lease: lost while isolated", CheckLease, cat(hold0[:2], clientFault(msec(100), sec(3), "isolate-client", 0),
			[]history.Event{deleted(msec(1100), 10, history.CauseLease), proc(sec(2), 0, ok, history.FLeaseLost)}),
			verdict.Pass, ""},
		{"lease: a fault on another client explains nothing", CheckLease, cat(hold0[:2], clientFault(msec(100), sec(3), "isolate-client", 1),
			[]history.Event{proc(sec(2), 0, ok, history.FLeaseLost)}),
			verdict.Fail, "process 0 lost its lease"},
		{"fencing: the rightful holder's write rejected", CheckFencing, cat(hold0[:2],
			[]history.Event{w(msec(10), 0, inv, 10, 1), w(msec(11), 0, fail, 10, 1)}, hold0[2:]),
			verdict.Fail, "refused the rightful holder"},
		{"fencing: a stale holder's write rejected", CheckFencing, cat(hold0[:2], hold1[:2],
			[]history.Event{w(sec(2)+msec(10), 0, inv, 10, 1), w(sec(2)+msec(11), 0, fail, 10, 1)}),
			verdict.Pass, ""},
		{"fencing: rejected after the harness saw the key expire", CheckFencing, cat(hold0[:2],
			[]history.Event{deleted(msec(5), 10, history.CauseLease), w(msec(10), 0, inv, 10, 1), w(msec(11), 0, fail, 10, 1)}, hold0[2:]),
			verdict.Pass, ""},
	}
	// A holder crash with the leader crashing too: the new leader extends
	// the dead holder's lease, so the lock may stay held (free in the
	// history: its holder crashed) for r + the bound; alone, a client crash
	// excuses r. Bound 2.5 s, r 3.5 s, each window widened by the fault-free
	// bound 100ms; the lock moves on 3.65 s after.
	crashed := cat([]history.Event{ev(0, 0, inv, acq, 0), ev(msec(1), 0, ok, acq, 10), ev(msec(500), 1, inv, acq, 0)},
		clientFault(sec(1), sec(6), "crash-client", 0), []history.Event{proc(sec(1), 0, info, history.FCrash)})
	memberCrash := []history.Event{
		{Time: sec(1), Process: history.NemesisProcess, Type: inv, F: flt, Value: history.FaultValue(history.Fault{Fault: "crash-member", Target: "leader", Resolved: "member:0"})},
		{Time: sec(4) + msec(630), Process: history.NemesisProcess, Type: ok, F: flt, Value: history.FaultValue(history.Fault{Fault: "crash-member", Target: "leader", Resolved: "member:0"})},
	}
	granted := []history.Event{ev(sec(4)+msec(650), 1, ok, acq, 11)}
	bound := Options{LivenessBound: 2500 * time.Millisecond, QuietBound: 100 * time.Millisecond}
	for _, tc := range []struct {
		name   string
		events []history.Event
		want   verdict.Verdict
	}{
		{"holder and leader crash together", cat(crashed, memberCrash, granted), verdict.Pass},
		{"holder crash alone, the same wait", cat(crashed, granted), verdict.Fail},
	} {
		t.Run("liveness: "+tc.name, func(t *testing.T) {
			if res := CheckLiveness(tc.events, bound); res.Verdict != tc.want {
				t.Errorf("verdict %s, want %s: %+v", res.Verdict, tc.want, res.Violations)
			}
		})
	}
	// Waits cancelled and asked again on a free lock that never moves: the
	// clock does not restart with each retry; after a long lull it does.
	retry := func(gap int64) []history.Event {
		es := []history.Event{ev(0, 0, inv, acq, 0), ev(msec(1), 0, ok, acq, 10), ev(msec(5), 1, inv, acq, 0),
			ev(msec(10), 0, inv, rel, 0), ev(msec(11), 0, ok, rel, 0)}
		at := msec(5)
		for i := 0; i < 3; i++ {
			at += msec(900)
			es = append(es, errEv(ev(at, 1, fail, acq, 0), "lock not acquired: context canceled"))
			at += gap
			es = append(es, ev(at, 1, inv, acq, 0))
		}
		return es
	}
	short := Options{LivenessBound: 1500 * time.Millisecond, QuietBound: 1500 * time.Millisecond}
	for _, tc := range []struct {
		name string
		gap  int64
		want verdict.Verdict
	}{
		{"retries 20ms apart on a lock that never moves", msec(20), verdict.Fail},
		{"retries after lulls longer than the bound", sec(2), verdict.Pass},
	} {
		t.Run("liveness: "+tc.name, func(t *testing.T) {
			if res := CheckLiveness(retry(tc.gap), short); res.Verdict != tc.want {
				t.Errorf("verdict %s, want %s: %+v", res.Verdict, tc.want, res.Violations)
			}
		})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.check(tc.events, Options{})
			if res.Verdict != tc.want {
				t.Errorf("verdict %s, want %s: %+v", res.Verdict, tc.want, res.Violations)
			}
			if tc.says != "" && (len(res.Violations) == 0 || !strings.Contains(res.Violations[0].Message, tc.says)) {
				t.Errorf("violations %+v do not say %q", res.Violations, tc.says)
			}
		})
	}
}
