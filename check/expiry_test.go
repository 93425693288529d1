package check

import (
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// kept is process 0's lease "a" (TTL 2s), granted at 10ms and renewed by
// a request sent at 1s and answered at 1.01s (lines 1–2), with its key on
// lock l created at 20ms (line 3) while it held (lines 4–5): the server
// promised the lease until 3s at least (the renewal's send + the TTL),
// and it may have kept it until 3.01s (its answer + the TTL).
func kept(more ...history.Event) []history.Event {
	return append([]history.Event{
		leaseAt(msec(10), history.LeaseGrant, 0, "a", sec(2), 0),
		leaseAt(sec(1)+msec(10), history.LeaseRenew, 0, "a", sec(2), sec(1)),
		keyAt(msec(20), history.KeyCreate, 0, "a", 7, 0),
		ev(msec(5), 0, inv, acq, 0), ev(msec(25), 0, ok, acq, 7),
	}, more...)
}

// others is process 1's lease "b" (TTL 2s) renewed every 500ms until to,
// each answered 2ms after its send: the members answering, so that
// nothing after kept's renewals is a stall.
func others(to int64) []history.Event {
	var out []history.Event
	for t := msec(500); t <= to; t += msec(500) {
		out = append(out, leaseAt(t+msec(2), history.LeaseRenew, 1, "b", sec(2), t))
	}
	return out
}

// keptAmong is kept, with more, among others' renewals until to.
func keptAmong(to int64, more ...history.Event) []history.Event {
	return append(kept(more...), others(to)...)
}

// The late bound of kept's key once abandoned after 1.01s: its last
// renewal's answer (1.01s) + TTL (2s) + election (500ms) + slack (1s) =
// 4.51s.

func TestExpiry(t *testing.T) {
	crash := ev(sec(1)+msec(500), 0, ok, history.FCrash, 0)
	runKeyCases(t, verdict.Expiry, CheckExpiry, []keyCase{
		{name: "a key expired before a TTL after the last renewal's send fails (etcd #15247)",
			events:  kept(leaseDeletion(sec(1)+msec(500), 7, "a", history.CauseLease)),
			verdict: verdict.Fail, count: 1, lines: []int{2, 6}, says: "1.5s before the TTL (2s) from its last renewal answered",
			metrics: map[string]float64{"early_expiries": 1}},
		{name: "a key expired a TTL after the last renewal's send passes",
			events:  kept(leaseDeletion(sec(3)+msec(20), 7, "a", history.CauseLease)),
			verdict: verdict.Pass, metrics: map[string]float64{"early_expiries": 0}},
		{name: "an expiry within the slack of the promise passes",
			events:  kept(leaseDeletion(sec(2)+msec(950), 7, "a", history.CauseLease)),
			verdict: verdict.Pass},
		{name: "a key deleted by a client (its lease alive) is not an expiry",
			events:  kept(leaseDeletion(sec(1)+msec(500), 7, "a", history.CauseDelete)),
			verdict: verdict.Pass, notJudged: true},
		{name: "a lease its client revoked may end at once",
			events: kept(leaseAt(sec(1)+msec(400), history.LeaseRevoke, 0, "a", 0, 0),
				leaseDeletion(sec(1)+msec(500), 7, "a", history.CauseLease)),
			verdict: verdict.Pass, notJudged: true},
		{name: "a lease an operator revoked may end at once",
			events: kept(namedFault(sec(1)+msec(400), inv, "revoke-lease", "client:0"),
				leaseDeletion(sec(1)+msec(500), 7, "a", history.CauseLease), namedFault(sec(1)+msec(600), ok, "revoke-lease", "client:0")),
			verdict: verdict.Pass, notJudged: true},
		{name: "a crashed client's key outliving TTL + election + slack fails",
			events:  keptAmong(sec(6), crash, keyAt(sec(5), history.KeyDelete, 0, "a", 30, 7)),
			verdict: verdict.Fail, count: 1, lines: []int{2, 3, 6, 7}, says: "was deleted only at 5s, past 4.51s",
			metrics: map[string]float64{"abandoned_keys": 1, "late_keys": 1, "key_outlived_lease_ms_max": 1990}},
		{name: "a crashed client's key removed within the bound passes",
			events:  keptAmong(sec(6), crash, keyAt(sec(4)+msec(400), history.KeyDelete, 0, "a", 30, 7)),
			verdict: verdict.Pass, metrics: map[string]float64{"abandoned_keys": 1, "late_keys": 0}},
		{name: "a client told its lease was lost that renews it on keeps its key (etcd PR #21126) fails",
			events: keptAmong(sec(8), ev(sec(1)+msec(500), 0, ok, history.FLeaseLost, 0),
				leaseAt(sec(2)+msec(10), history.LeaseRenew, 0, "a", sec(2), sec(2)),
				leaseAt(sec(3)+msec(10), history.LeaseRenew, 0, "a", sec(2), sec(3)),
				leaseAt(sec(8), history.LeaseRenew, 0, "a", sec(2), sec(8)-msec(5))),
			verdict: verdict.Fail, count: 1, lines: []int{2, 3, 6}, says: "was still there when the history ended, past 4.51s"},
		{name: "a leader change after the crash that renews the lease (etcd #20273) fails",
			events: keptAmong(sec(6), crash, namedFault(sec(2), inv, "move-leader", "follower"), namedFault(sec(2), ok, "move-leader", "follower"),
				keyAt(sec(5)+msec(500), history.KeyDelete, 0, "a", 30, 7)),
			verdict: verdict.Fail, count: 1, lines: []int{2, 3, 6, 9}, says: "past 4.51s"},
		{name: "no leader when the TTL runs out: due when one is back",
			events: keptAmong(sec(7), crash, namedFault(sec(2)+msec(900), inv, "crash-member", "leader"), namedFault(sec(6), ok, "crash-member", "leader"),
				keyAt(sec(5)+msec(300), history.KeyDelete, 0, "a", 30, 7)),
			verdict: verdict.Pass, metrics: map[string]float64{"late_keys": 0}},
		{name: "no renewal of any lease answered after the crash: the members may have committed nothing (a stall)",
			events:  append(kept(crash, keyAt(sec(5), history.KeyDelete, 0, "a", 30, 7)), others(sec(1))...),
			verdict: verdict.Pass, metrics: map[string]float64{"abandoned_keys": 1, "late_keys": 0}},
		{name: "a renewal answered later than the request deadline marks a stall",
			events: keptAmong(sec(7), crash, leaseAt(sec(5), history.LeaseRenew, 1, "b", sec(2), sec(3)),
				keyAt(sec(5)+msec(500), history.KeyDelete, 0, "a", 30, 7)),
			verdict: verdict.Pass, metrics: map[string]float64{"abandoned_keys": 1, "late_keys": 0}},
		{name: "a key the history ends with before its bound is not judged",
			events:  kept(crash, ev(sec(4), 1, inv, acq, 0)),
			verdict: verdict.Pass, notJudged: true},
		{name: "a history without lease-op events is not judged",
			events:  []history.Event{ev(0, 0, inv, acq, 0), ev(msec(1), 0, ok, acq, 7), leaseDeletion(sec(1), 7, "a", history.CauseLease)},
			verdict: verdict.Pass, notJudged: true},
	})
}
