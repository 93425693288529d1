package check

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// ev builds a history event tersely for literal histories.
func ev(t int64, p int, typ history.Type, f history.Function, token int64) history.Event {
	return history.Event{Time: t, Process: int32(p), Type: typ, F: f, Lock: "l", Token: token}
}

const (
	inv  = history.Invoke
	ok   = history.OK
	info = history.Info
	fail = history.Fail
	acq  = history.FAcquire
	rel  = history.FRelease
)

func TestExclusion(t *testing.T) {
	tests := []struct {
		name    string
		events  []history.Event
		verdict verdict.Verdict
		// pairs lists the (process, process) of each expected violation.
		pairs [][2]int
		lines [][]int
	}{
		{
			name: "sequential holders",
			events: []history.Event{
				ev(0, 0, inv, acq, 0), ev(1, 1, inv, acq, 0),
				ev(2, 0, ok, acq, 10), ev(5, 0, inv, rel, 0), ev(6, 0, ok, rel, 0),
				ev(7, 1, ok, acq, 11), ev(9, 1, inv, rel, 0), ev(10, 1, ok, rel, 0),
			},
			verdict: verdict.Pass,
		},
		{
			name: "release invoked at t, next grant at t+1",
			events: []history.Event{
				ev(0, 0, inv, acq, 0), ev(1, 0, ok, acq, 10), ev(1, 1, inv, acq, 0),
				ev(5, 0, inv, rel, 0), ev(6, 1, ok, acq, 11), ev(7, 0, ok, rel, 0),
			},
			verdict: verdict.Pass,
		},
		{
			name: "release invoked at t, next grant at t",
			events: []history.Event{
				ev(0, 0, inv, acq, 0), ev(1, 0, ok, acq, 10), ev(1, 1, inv, acq, 0),
				ev(5, 0, inv, rel, 0), ev(5, 1, ok, acq, 11),
			},
			verdict: verdict.Pass,
		},
		{
			name: "two overlapping holders",
			events: []history.Event{
				ev(0, 0, inv, acq, 0), ev(1, 0, ok, acq, 10), ev(2, 1, inv, acq, 0),
				ev(3, 1, ok, acq, 11), ev(5, 0, inv, rel, 0), ev(6, 1, inv, rel, 0),
			},
			verdict: verdict.Fail,
			pairs:   [][2]int{{0, 1}},
			lines:   [][]int{{2, 4}},
		},
		{
			name: "holder never releases, second holder later",
			events: []history.Event{
				ev(0, 0, inv, acq, 0), ev(1, 0, ok, acq, 10),
				ev(100, 1, inv, acq, 0), ev(200, 1, ok, acq, 11),
			},
			verdict: verdict.Fail,
			pairs:   [][2]int{{0, 1}},
			lines:   [][]int{{2, 4}},
		},
		{
			name: "info acquire overlapping a holder is not certain",
			events: []history.Event{
				ev(0, 0, inv, acq, 0), ev(1, 1, inv, acq, 0), ev(2, 0, ok, acq, 10),
				ev(3, 1, info, acq, 0), ev(5, 0, inv, rel, 0), ev(6, 0, ok, rel, 0),
			},
			verdict: verdict.Pass,
		},
		{
			name: "failed acquire holds nothing",
			events: []history.Event{
				ev(0, 0, inv, acq, 0), ev(1, 0, ok, acq, 10), ev(2, 1, inv, acq, 0),
				ev(3, 1, fail, acq, 0), ev(5, 0, inv, rel, 0),
			},
			verdict: verdict.Pass,
		},
		{
			name: "crash ends the crashed holder's interval",
			events: []history.Event{
				ev(0, 0, inv, acq, 0), ev(1, 0, ok, acq, 10), ev(2, 1, inv, acq, 0),
				{Time: 3, Process: 0, Type: info, F: history.FCrash},
				ev(4, 1, ok, acq, 11), ev(5, 1, inv, rel, 0),
			},
			verdict: verdict.Pass,
		},
		{
			name: "crash of another process does not end the interval",
			events: []history.Event{
				ev(0, 0, inv, acq, 0), ev(1, 0, ok, acq, 10), ev(2, 1, inv, acq, 0),
				{Time: 3, Process: 2, Type: info, F: history.FCrash},
				ev(4, 1, ok, acq, 11), ev(5, 1, inv, rel, 0),
			},
			verdict: verdict.Fail,
			pairs:   [][2]int{{0, 1}},
			lines:   [][]int{{2, 5}},
		},
		{
			name: "lease-lost ends the interval",
			events: []history.Event{
				ev(0, 0, inv, acq, 0), ev(1, 0, ok, acq, 10),
				ev(3, 0, ok, history.FLeaseLost, 0),
				ev(4, 1, inv, acq, 0), ev(5, 1, ok, acq, 11),
			},
			verdict: verdict.Pass,
		},
		{
			name: "different locks never conflict",
			events: []history.Event{
				ev(0, 0, inv, acq, 0), ev(1, 0, ok, acq, 10),
				{Time: 2, Process: 1, Type: inv, F: acq, Lock: "other"},
				{Time: 3, Process: 1, Type: ok, F: acq, Lock: "other", Token: 11},
			},
			verdict: verdict.Pass,
		},
		{
			name: "unsorted hand-written history is sorted by time",
			events: []history.Event{
				ev(6, 1, ok, acq, 11), ev(0, 0, inv, acq, 0), ev(1, 0, ok, acq, 10),
				ev(2, 1, inv, acq, 0), ev(5, 0, inv, rel, 0),
			},
			verdict: verdict.Pass,
		},
		{
			// docs/design.md §3: lock is optional. A completion takes its
			// invoke's lock; a release without one releases the lock the
			// process last asked for.
			name: "lock on the acquire invoke only",
			events: []history.Event{
				ev(0, 0, inv, acq, 0), nl(ev(1, 0, ok, acq, 10)), nl(ev(2, 0, inv, rel, 0)), nl(ev(3, 0, ok, rel, 0)),
				ev(4, 1, inv, acq, 0), nl(ev(5, 1, ok, acq, 11)), nl(ev(6, 1, inv, rel, 0)), nl(ev(7, 1, ok, rel, 0)),
			},
			verdict: verdict.Pass,
		},
		{
			name: "lock on the invokes only",
			events: []history.Event{
				ev(0, 0, inv, acq, 0), nl(ev(1, 0, ok, acq, 10)), ev(2, 0, inv, rel, 0), nl(ev(3, 0, ok, rel, 0)),
				ev(4, 1, inv, acq, 0), nl(ev(5, 1, ok, acq, 11)), ev(6, 1, inv, rel, 0), nl(ev(7, 1, ok, rel, 0)),
			},
			verdict: verdict.Pass,
		},
		{
			name: "lock on the acquire invoke only, overlapping holders",
			events: []history.Event{
				ev(0, 0, inv, acq, 0), nl(ev(1, 0, ok, acq, 10)), ev(2, 1, inv, acq, 0),
				nl(ev(3, 1, ok, acq, 11)), nl(ev(5, 0, inv, rel, 0)), nl(ev(6, 1, inv, rel, 0)),
			},
			verdict: verdict.Fail,
			pairs:   [][2]int{{0, 1}},
			lines:   [][]int{{2, 4}},
		},
		{
			name: "a release without a lock releases the lock last acquired",
			events: []history.Event{
				{Time: 0, Process: 0, Type: inv, F: acq, Lock: "other"},
				{Time: 1, Process: 0, Type: ok, F: acq, Lock: "other", Token: 9},
				{Time: 2, Process: 0, Type: inv, F: rel, Lock: "other"},
				ev(3, 0, inv, acq, 0), ev(4, 0, ok, acq, 10), nl(ev(5, 0, inv, rel, 0)),
				ev(6, 1, inv, acq, 0), ev(7, 1, ok, acq, 11),
			},
			verdict: verdict.Pass,
		},
		{
			name: "three at once give three pairs",
			events: []history.Event{
				ev(0, 0, ok, acq, 1), ev(1, 1, ok, acq, 2), ev(2, 2, ok, acq, 3),
			},
			verdict: verdict.Fail,
			pairs:   [][2]int{{0, 1}, {0, 2}, {1, 2}},
			lines:   [][]int{{1, 2}, {1, 3}, {2, 3}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := CheckExclusion(tc.events, Options{})
			if r.Verdict != tc.verdict {
				t.Fatalf("verdict = %s, want %s; %+v", r.Verdict, tc.verdict, r)
			}
			var pairs [][2]int
			var lines [][]int
			for _, v := range r.Violations {
				if len(v.Holders) != 2 {
					t.Fatalf("violation names %d holders, want 2: %+v", len(v.Holders), v)
				}
				pairs = append(pairs, [2]int{v.Holders[0].Process, v.Holders[1].Process})
				lines = append(lines, v.Lines)
			}
			if !reflect.DeepEqual(pairs, tc.pairs) {
				t.Errorf("violating pairs = %v, want %v", pairs, tc.pairs)
			}
			if !reflect.DeepEqual(lines, tc.lines) {
				t.Errorf("violation lines = %v, want %v", lines, tc.lines)
			}
			if r.Count != len(tc.pairs) {
				t.Errorf("count = %d, want %d", r.Count, len(tc.pairs))
			}
		})
	}
}

// nl is e without its lock name.
func nl(e history.Event) history.Event {
	e.Lock = ""
	return e
}

func TestExclusionViolationDetail(t *testing.T) {
	events := []history.Event{
		ev(0, 0, inv, acq, 0), ev(1, 0, ok, acq, 10), ev(2, 1, inv, acq, 0),
		ev(3, 1, ok, acq, 11), ev(5, 0, inv, rel, 0), ev(6, 1, inv, rel, 0),
	}
	r := Check(events, Options{})
	if r.Verdict != verdict.Fail {
		t.Fatalf("verdict %s, want fail", r.Verdict)
	}
	v := r.Violations()[0]
	want := []Holder{
		{Process: 0, From: 1, To: 5, Token: 10, FromLine: 2, ToLine: 5},
		{Process: 1, From: 3, To: 6, Token: 11, FromLine: 4, ToLine: 6},
	}
	if !reflect.DeepEqual(v.Holders, want) {
		t.Errorf("holders = %+v, want %+v", v.Holders, want)
	}
}

func TestWorst(t *testing.T) {
	for _, tc := range []struct {
		in   []verdict.Verdict
		want verdict.Verdict
	}{
		{nil, verdict.Pass},
		{[]verdict.Verdict{verdict.Pass, verdict.Pass}, verdict.Pass},
		{[]verdict.Verdict{verdict.Pass, verdict.Unknown}, verdict.Unknown},
		{[]verdict.Verdict{verdict.Unknown, verdict.Fail, verdict.Pass}, verdict.Fail},
	} {
		if got := verdict.Worst(tc.in...); got != tc.want {
			t.Errorf("Worst(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestExclusionNamesAGrantOfAGoneKey: an overlap in which one holder's key
// was deleted before its acquire returned (etcd's Campaign trusting a key
// its lease took away) says so, naming that holder; without the harness's
// before_grant event the message does not.
func TestExclusionNamesAGrantOfAGoneKey(t *testing.T) {
	base := []history.Event{
		ev(0, 0, inv, acq, 0), ev(1, 0, ok, acq, 10), ev(2, 1, inv, acq, 0),
		ev(3, 1, ok, acq, 11), ev(5, 0, inv, rel, 0), ev(6, 1, inv, rel, 0),
	}
	goneAt := history.Event{Time: 4, Process: history.NemesisProcess, Type: ok, F: history.FKeyDeleted, Lock: "l", Token: 11,
		Value: history.DeletionValue(history.KeyDeletion{Revision: 9, Cause: history.CauseLease, BeforeGrant: true})}
	afterGrant := goneAt
	afterGrant.Value = history.DeletionValue(history.KeyDeletion{Revision: 12, Cause: history.CauseLease})
	const said = "process 1's key (token 11) was deleted by its lease's end at revision 9, before its acquire returned"
	for _, tc := range []struct {
		name   string
		events []history.Event
		says   bool
	}{
		{"no key-deleted event", base, false},
		{"deleted after the grant", append(slices.Clone(base[:4]), afterGrant, base[4], base[5]), false},
		{"deleted before the grant returned", append(slices.Clone(base[:4]), goneAt, base[4], base[5]), true},
	} {
		r := CheckExclusion(tc.events, Options{})
		if r.Verdict != verdict.Fail || len(r.Violations) == 0 {
			t.Fatalf("%s: verdict %s, want fail", tc.name, r.Verdict)
		}
		if got := strings.Contains(r.Violations[0].Message, said); got != tc.says {
			t.Errorf("%s: message %q: says the key was gone %v, want %v", tc.name, r.Violations[0].Message, got, tc.says)
		}
	}
}
