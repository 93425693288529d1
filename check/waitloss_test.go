package check

import (
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// waiterGone is the harness's key-deleted event for waiter p's queue key,
// gone with its lease (cause) at t.
func waiterGone(t int64, p int, cause string) history.Event {
	return history.Event{Time: t, Process: history.NemesisProcess, Type: ok, F: history.FKeyDeleted, Lock: "l",
		Value: history.DeletionValue(history.KeyDeletion{Revision: 500, Cause: cause, Waiter: &p})}
}

// TestWaitingAfterLeaseLoss: the lease check's figures for a waiter whose
// lease ended while it waited (etcd #19597), never a violation.
func TestWaitingAfterLeaseLoss(t *testing.T) {
	// p0 holds from 1ms to its release at 3s; p1 waits from 100ms, cut
	// off from 200ms to 2.5s (explained); its key goes with its lease at 1.2s.
	base := cat([]history.Event{
		ev(0, 0, inv, acq, 0), ev(msec(1), 0, ok, acq, 10), ev(msec(100), 1, inv, acq, 0),
	}, clientFault(msec(200), msec(2500), "isolate-client", 1), []history.Event{
		ev(sec(3), 0, inv, rel, 10), ev(sec(3)+msec(1), 0, ok, rel, 10),
	})
	with := func(more ...history.Event) []history.Event { return cat(base, more) }
	absent := []string{"waiter_lease_losses", "waiting_after_lease_loss_ms_max", "waiting_after_lease_loss_ms_p50"}
	runCases(t, verdict.Lease, CheckLease, []checkCase{
		{
			name: "no waiter lost its lease", events: with(ev(sec(3)+msec(2), 1, ok, acq, 11)),
			verdict: verdict.Pass, absent: absent, metrics: map[string]float64{"losses": 0},
		},
		{
			name:    "waits on until its predecessor releases (the bug)",
			events:  with(waiterGone(msec(1200), 1, history.CauseLease), errEv(ev(sec(3)+msec(5), 1, fail, acq, 0), "session expired")),
			verdict: verdict.Pass,
			metrics: map[string]float64{"waiter_lease_losses": 1, "waiting_after_lease_loss_ms_max": 1805, "waiting_after_lease_loss_ms_p50": 1805, "losses": 0},
		},
		{
			name:    "returns as soon as it hears",
			events:  with(waiterGone(msec(1200), 1, history.CauseLease), errEv(ev(msec(1250), 1, fail, acq, 0), "lease lost")),
			verdict: verdict.Pass, metrics: map[string]float64{"waiter_lease_losses": 1, "waiting_after_lease_loss_ms_max": 50},
		},
		{
			name:    "returned before the harness recorded it: 0",
			events:  with(errEv(ev(msec(1150), 1, fail, acq, 0), "lease lost"), waiterGone(msec(1200), 1, history.CauseLease)),
			verdict: verdict.Pass, metrics: map[string]float64{"waiting_after_lease_loss_ms_max": 0},
		},
		{
			name:    "still waiting at the end",
			events:  with(waiterGone(msec(1200), 1, history.CauseLease), ev(sec(4), 0, inv, acq, 0)),
			verdict: verdict.Pass, metrics: map[string]float64{"waiting_after_lease_loss_ms_max": 2800},
		},
		{
			name: "paused time is not counted",
			events: with(waiterGone(msec(1200), 1, history.CauseLease), proc(sec(2), 1, ok, history.FPause), proc(msec(2500), 1, ok, history.FResume),
				errEv(ev(sec(3), 1, fail, acq, 0), "session expired")),
			verdict: verdict.Pass, metrics: map[string]float64{"waiting_after_lease_loss_ms_max": 1300},
		},
		{
			name:    "a waiter's key deleted with its lease alive is not a loss",
			events:  with(waiterGone(msec(1200), 1, history.CauseDelete), ev(sec(3)+msec(2), 1, ok, acq, 11)),
			verdict: verdict.Pass, absent: absent,
		},
		{
			name: "two waiters: p50 and max",
			events: with(ev(msec(150), 2, inv, acq, 0), waiterGone(msec(1200), 1, history.CauseLease), waiterGone(msec(1300), 2, history.CauseLease),
				errEv(ev(msec(1400), 2, fail, acq, 0), "lease lost"), errEv(ev(sec(3)+msec(200), 1, fail, acq, 0), "session expired")),
			verdict: verdict.Pass, metrics: map[string]float64{"waiter_lease_losses": 2, "waiting_after_lease_loss_ms_max": 2000},
		},
	})
}
