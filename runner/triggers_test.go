package runner

import (
	"testing"
	"time"

	"github.com/lockbench/lockbench/chaos"
)

// positions is where the clients stand, as a step timed to a call sees
// it: client 2 holds, 0 and 1 wait.
type positions struct{}

func (positions) Members() int          { return 3 }
func (positions) Leader() int           { return 1 }
func (positions) RunningMembers() []int { return []int{0, 1, 2} }
func (positions) Clients() int          { return 4 }
func (positions) Holder() int           { return 2 }
func (positions) Waiters() []int        { return []int{0, 1} }

// TestTriggersStrikeOnceAtTheirCall checks which call strikes a step
// timed to one: none before its at, none of another call, for a client
// fault only a call of the client its target names, for a member fault
// any client's; and each step once.
func TestTriggersStrikeOnceAtTheirCall(t *testing.T) {
	fault := func(name string) chaos.Fault {
		f, err := chaos.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	steps := []chaos.PlannedStep{
		{Step: chaos.Step{At: 0, Fault: fault("crash-member")}},                                                                                      // the clock's
		{Step: chaos.Step{At: time.Second, Fault: fault("isolate-client"), Target: chaos.Target{Kind: chaos.THolder}, On: chaos.OnRelease}},          // the holder's release
		{Step: chaos.Step{At: time.Second, Fault: fault("partition-member"), Target: chaos.Target{Kind: chaos.TLeader}, On: chaos.OnRelease}},        // any release
		{Step: chaos.Step{At: 2 * time.Second, Fault: fault("delay-answers"), Target: chaos.Target{Kind: chaos.TClient, N: 3}, On: chaos.OnAcquire}}, // client 3's acquire
	}
	timed, tr := newTriggers(steps)
	if len(timed) != 1 || len(tr.armed) != 3 || cap(tr.struck) != 3 {
		t.Fatalf("%d timed, %d armed (room for %d struck), want 1, 3, 3", len(timed), len(tr.armed), cap(tr.struck))
	}
	calls := []struct {
		client int
		call   string
		now    time.Duration
		want   string // the fault struck, "" for none
	}{
		{2, chaos.OnRelease, 500 * time.Millisecond, ""},      // before its at
		{2, chaos.OnAcquire, time.Second, ""},                 // not a release
		{1, chaos.OnRelease, time.Second, "partition-member"}, // not the holder: only the member fault
		{1, chaos.OnRelease, time.Second, ""},                 // struck once
		{2, chaos.OnRelease, time.Second, "isolate-client"},   // the holder's release
		{3, chaos.OnAcquire, time.Second, ""},                 // before its at
		{0, chaos.OnAcquire, 3 * time.Second, ""},             // another client
		{3, chaos.OnAcquire, 3 * time.Second, "delay-answers"},
	}
	for i, c := range calls {
		st, ok := tr.take(positions{}, c.client, c.call, c.now)
		got := ""
		if ok {
			got = st.Fault.Name()
			tr.busy.Done()
		}
		if got != c.want {
			t.Errorf("call %d (%s by client %d at %s): struck %q, want %q", i, c.call, c.client, c.now, got, c.want)
		}
	}
	tr.close()
	if _, ok := tr.take(positions{}, 2, chaos.OnRelease, time.Hour); ok || len(tr.armed) != 0 {
		t.Errorf("a closed trigger set struck, or kept %d armed", len(tr.armed))
	}
}
