package check

import (
	"strings"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// TestOverlapCause: each exclusion violation says why it happened, from
// the key deletions and releases in the history, one literal history per
// cause; and says nothing where the history shows no cause.
func TestOverlapCause(t *testing.T) {
	// p0 holds token 10 from 1ms; p1 waits from 2ms and is granted token
	// 12 at 1s while p0 still holds (released at 2s).
	holds := func(more ...history.Event) []history.Event {
		return cat([]history.Event{
			ev(0, 0, inv, acq, 0), ev(msec(1), 0, ok, acq, 10),
			ev(msec(2), 1, inv, acq, 0),
			ev(sec(1), 1, ok, acq, 12), ev(sec(2), 0, inv, rel, 0), ev(sec(2)+1, 0, ok, rel, 0),
			ev(sec(3), 1, inv, rel, 0), ev(sec(3)+1, 1, ok, rel, 0),
		}, more)
	}
	crashedOwner := 2
	ownerGone := history.Event{Time: sec(1) - msec(3), Process: history.NemesisProcess, Type: ok, F: history.FKeyDeleted, Lock: "l",
		Value: history.DeletionValue(history.KeyDeletion{Revision: 40, Cause: history.CauseLease, Owner: &crashedOwner})}
	cases := []struct {
		name   string
		events []history.Event
		want   []string // substrings of the cause; none: no cause
	}{
		{"the holder's lease expired", holds(deleted(sec(1)-msec(2), 10, history.CauseLease)),
			[]string{"process 0's key (token 10) was deleted by its lease's end at revision 110", "2ms before process 1's grant", "not told in time"}},
		// (A revoke-lease fault's overlap is excused, so not listed.)
		{"the holder's key, recorded after the grant", holds(deleted(sec(1)+msec(4), 10, history.CauseLease)),
			[]string{"process 0's key (token 10) was deleted by its lease's end", "recorded 4ms after process 1's grant"}},
		{"deleted by a non-holder", holds(deleted(sec(1)-msec(1), 10, history.CauseDelete)),
			[]string{"process 0's key (token 10) was deleted at revision 110", "by a client while its lease was alive — not its holder's release — 1ms before process 1's grant"}},
		{"a crashed waiter's key expired", holds(proc(msec(5), 2, info, history.FCrash), ownerGone),
			[]string{"process 1 was granted 3ms after process 2's queue key was deleted by its lease's end at revision 40", "it crashed at 5ms", "while process 0's key (token 10) still stood: it took the lock on that deletion"}},
		{"a waiter's lease ended while it waited", holds(waiterGone(sec(1)-msec(7), 3, history.CauseLease)),
			[]string{"process 1 was granted 7ms after process 3's queue key was deleted", "its lease ended while it waited"}},
		{"a waiter ahead gave up", holds(ev(msec(3), 3, inv, acq, 0), errEv(ev(sec(1)-msec(1), 3, fail, acq, 0), "context deadline exceeded")),
			[]string{"process 1 was granted 1ms after process 3 gave up waiting at 999ms", "deleting its queue key"}},
		{"the latest of two: a release after an expiry", holds(waiterGone(sec(1)-msec(300), 3, history.CauseLease),
			ev(msec(3), 4, inv, acq, 0), ev(msec(500), 4, ok, acq, 11), ev(sec(1)-msec(2), 4, inv, rel, 0), ev(sec(1)-msec(1), 4, ok, rel, 0)),
			[]string{"process 1 was granted 2ms after process 4 released its key (token 11) at 998ms"}},
		{"nothing recorded explains it", holds(), nil},
		{"a deletion too long before the grant", holds(waiterGone(msec(400), 3, history.CauseLease)), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := Check(tc.events, Options{}).Checks[verdict.Exclusion]
			if res.Verdict != verdict.Fail || len(res.Violations) == 0 {
				t.Fatalf("exclusion %s with %d violations, want the overlap", res.Verdict, len(res.Violations))
			}
			var got string
			for _, v := range res.Violations {
				if v.Holders[1].Process == 1 {
					got = v.Cause
				}
			}
			if len(tc.want) == 0 && got != "" {
				t.Errorf("cause %q, want none", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("cause %q\nlacks %q", got, w)
				}
			}
		})
	}
}
