package check

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// Builders for the expiry and orphans checks' literal histories: every
// lease is process 0's unless said, every key on lock "l".

// leaseAt is a lease-op event at t: op on lease of owner, with ttl and
// the send time of its request.
func leaseAt(t int64, op string, owner int, lease string, ttl, sent int64) history.Event {
	return history.Event{Time: t, Process: history.NemesisProcess, Type: ok, F: history.FLeaseOp,
		Value: history.LeaseOpValue(history.LeaseOp{Op: op, Owner: owner, Lease: lease, TTLNS: ttl, SentNS: sent})}
}

// keyAt is a key-op event at t: a create (created 0) at revision rev, or
// the delete at rev of the key created at revision created.
func keyAt(t int64, op string, owner int, lease string, rev, created int64) history.Event {
	return history.Event{Time: t, Process: history.NemesisProcess, Type: ok, F: history.FKeyOp, Lock: "l",
		Value: history.KeyOpValue(history.KeyOp{Op: op, Owner: owner, Lease: lease, Revision: rev, Created: created})}
}

// leaseDeletion is a key-deleted event at t: a holder's key (token) of
// lease deleted with cause.
func leaseDeletion(t int64, token int64, lease, cause string) history.Event {
	return history.Event{Time: t, Process: history.NemesisProcess, Type: ok, F: history.FKeyDeleted, Lock: "l", Token: token,
		Value: history.DeletionValue(history.KeyDeletion{Revision: token + 100, Cause: cause, Lease: lease})}
}

// keyCase is a literal history and what a check must say of it: its
// verdict, its violations' count, the first one's lines and words, and
// whether it judged anything.
type keyCase struct {
	name      string
	events    []history.Event
	verdict   verdict.Verdict
	count     int
	lines     []int  // the first violation's lines
	says      string // words the first violation's message has
	notJudged bool
	metrics   map[string]float64
}

func runKeyCases(t *testing.T, name string, fn func([]history.Event, Options) Result, cases []keyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := fn(tc.events, Options{})
			if res.Verdict != tc.verdict || res.Count != tc.count || res.NotJudged != tc.notJudged {
				t.Errorf("%s with %d violations (not judged %v, note %q), want %s with %d (not judged %v)",
					res.Verdict, res.Count, res.NotJudged, res.Note, tc.verdict, tc.count, tc.notJudged)
			}
			if tc.count > 0 && len(res.Violations) > 0 {
				v := res.Violations[0]
				if !slices.Equal(v.Lines, tc.lines) || !strings.Contains(v.Message, tc.says) || v.Check != name {
					t.Errorf("violation %s on lines %v: %q; want lines %v and %q", v.Check, v.Lines, v.Message, tc.lines, tc.says)
				}
			}
			for k, want := range tc.metrics {
				if got, ok := res.Metrics[k]; !ok || got != want {
					t.Errorf("metric %s = %v (set %v), want %v", k, got, ok, want)
				}
			}
			if all := Check(tc.events, Options{}).Checks[name]; all.Verdict != res.Verdict || all.Count != res.Count {
				t.Errorf("inside Check: %s with %d, alone %s with %d", all.Verdict, all.Count, res.Verdict, res.Count)
			}
		})
	}
}
