package chaos

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// recordingWorld is a World of two members and two clients that notes
// every action a fault takes on it.
type recordingWorld struct {
	calls []string
}

func (w *recordingWorld) note(format string, args ...any) error {
	w.calls = append(w.calls, fmt.Sprintf(format, args...))
	return nil
}

func (w *recordingWorld) Members() int          { return 2 }
func (w *recordingWorld) Leader() int           { return 0 }
func (w *recordingWorld) RunningMembers() []int { return []int{0, 1} }
func (w *recordingWorld) CrashMember(i int) error {
	return w.note("CrashMember %d", i)
}
func (w *recordingWorld) RestartMember(_ context.Context, i int) error {
	return w.note("RestartMember %d", i)
}
func (w *recordingWorld) PartitionMember(i int) error { return w.note("PartitionMember %d", i) }
func (w *recordingWorld) HealMember(i int) error      { return w.note("HealMember %d", i) }
func (w *recordingWorld) PauseMember(i int) error     { return w.note("PauseMember %d", i) }
func (w *recordingWorld) ResumeMember(i int) error    { return w.note("ResumeMember %d", i) }
func (w *recordingWorld) Clients() int                { return 2 }
func (w *recordingWorld) Holder() int                 { return 1 }
func (w *recordingWorld) Waiters() []int              { return []int{0} }
func (w *recordingWorld) CrashClient(i int) error     { return w.note("CrashClient %d", i) }
func (w *recordingWorld) RestartClient(_ context.Context, i int) error {
	return w.note("RestartClient %d", i)
}
func (w *recordingWorld) PauseClient(i int) error  { return w.note("PauseClient %d", i) }
func (w *recordingWorld) ResumeClient(i int) error { return w.note("ResumeClient %d", i) }
func (w *recordingWorld) IsolateClient(i int, cut bool) error {
	return w.note("IsolateClient %d %v", i, cut)
}
func (w *recordingWorld) DelayClient(i int, d time.Duration) error {
	return w.note("DelayClient %d %v", i, d)
}

func (w *recordingWorld) DelayAnswers(i int, d time.Duration) error {
	return w.note("DelayAnswers %d %v", i, d)
}
func (w *recordingWorld) RevokeLease(_ context.Context, i int) error {
	return w.note("RevokeLease %d", i)
}
func (w *recordingWorld) CancelWaiting() int {
	w.note("CancelWaiting")
	return 1
}

// TestFaultActions: each fault does what its name says to its target, and
// its undo (if any) puts it back. The safety net for how faults reach the
// World.
func TestFaultActions(t *testing.T) {
	for _, tc := range []struct {
		fault  string
		arg    time.Duration
		inject string // calls, ';'-separated
		undo   string // "" when there is nothing to undo
	}{
		{"crash-member", 0, "CrashMember 1", "RestartMember 1"},
		{"restart-member", 0, "RestartMember 1", ""},
		{"partition-member", 0, "PartitionMember 1", "HealMember 1"},
		{"pause-member", 0, "PauseMember 1", "ResumeMember 1"},
		{"heal", 0, "HealMember 0;HealMember 1", ""},
		{"crash-client", 0, "CrashClient 1", "RestartClient 1"},
		{"pause-client", 0, "PauseClient 1", "ResumeClient 1"},
		{"isolate-client", 0, "IsolateClient 1 true", "IsolateClient 1 false"},
		{"delay-client", 0, "DelayClient 1 200ms", "DelayClient 1 0s"},
		{"delay-client", 50 * time.Millisecond, "DelayClient 1 50ms", "DelayClient 1 0s"},
		{"delay-answers", 0, "DelayAnswers 1 200ms", "DelayAnswers 1 0s"},
		{"delay-answers", 1500 * time.Millisecond, "DelayAnswers 1 1.5s", "DelayAnswers 1 0s"},
		{"cancel-waiters", 0, "CancelWaiting", ""},
		{"revoke-lease", 0, "RevokeLease 1", ""},
		{"compact", 0, "Compact true", ""},
		{"defrag", 0, "Defragment 1", ""},
		{"defrag-all", 0, "Defragment 0;Defragment 1", ""},
		{"move-leader", 0, "MoveLeader 1", ""},
		{"replace-member", 0, "ReplaceMember 1", ""},
		{"delay-peers", 0, "ShapePeers 1 100ms 50ms 0", "ShapePeers 1 0s 0s 0"},
		{"delay-peers", 40 * time.Millisecond, "ShapePeers 1 40ms 20ms 0", "ShapePeers 1 0s 0s 0"},
		{"drop-peers", 0, "ShapePeers 1 0s 0s 0.5", "ShapePeers 1 0s 0s 0"},
		{"snapshot-catchup", 0, "CatchUpBySnapshot 1", ""},
		{"cut-replication", 0, "CutReplication true", "CutReplication false"},
		{"restart-empty", 0, "CrashMember 1;RestartMember 1", ""},
		{"clock-jump", 30 * time.Second, "JumpClock 1 30s", "JumpClock 1 0s"},
		{"delay-acquire-replies", 400 * time.Millisecond, "DelayAcquireReplies 1 400ms", "AcquireRepliesDelayed 1;DelayAcquireReplies 1 0s"},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			f, err := Lookup(tc.fault)
			if err != nil {
				t.Fatal(err)
			}
			target := 1
			if f.Targets() == NoTarget {
				target = -1
			}
			w := &recordingWorld{}
			undo, err := f.Inject(context.Background(), w, target, tc.arg)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(w.calls, ";"); got != tc.inject {
				t.Errorf("inject: %q, want %q", got, tc.inject)
			}
			if (undo != nil) != (tc.undo != "") {
				t.Fatalf("undo %v, want %q", undo != nil, tc.undo)
			}
			if undo == nil {
				return
			}
			w.calls = nil
			if err := undo(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(w.calls, ";"); got != tc.undo {
				t.Errorf("undo: %q, want %q", got, tc.undo)
			}
		})
	}
}

// TestClockJumpNeedsAnAmount: a clock-jump by nothing is an error, not
// a fault that strikes and does nothing (a scenario refuses it first).
func TestClockJumpNeedsAnAmount(t *testing.T) {
	f, err := Lookup("clock-jump")
	if err != nil {
		t.Fatal(err)
	}
	w := &recordingWorld{}
	if _, err := f.Inject(context.Background(), w, 1, 0); err == nil || !strings.Contains(err.Error(), "must be >0") {
		t.Errorf("clock-jump by 0: %v, want an error", err)
	}
	if len(w.calls) != 0 {
		t.Errorf("clock-jump by 0 acted: %v", w.calls)
	}
}

// TestFaultWithoutWorld: a fault given no World says so instead of
// panicking.
func TestFaultWithoutWorld(t *testing.T) {
	f, err := Lookup("crash-member")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Inject(context.Background(), nil, 0, 0); err == nil {
		t.Error("crash-member injected into no world")
	}
}

// TestResolve: each target kind picks the member or client it names, and
// the draw picks among candidates.
func TestResolve(t *testing.T) {
	w := &recordingWorld{}
	for _, tc := range []struct {
		target Target
		class  TargetClass
		draw   uint64
		want   int
	}{
		{Target{Kind: TNone}, NoTarget, 0, -1},
		{Target{Kind: TLeader}, MemberTarget, 0, 0},
		{Target{Kind: TFollower}, MemberTarget, 5, 1},
		{Target{Kind: TMember, N: 1}, MemberTarget, 0, 1},
		{Target{Kind: THolder}, ClientTarget, 0, 1},
		{Target{Kind: TWaiter, N: 0}, ClientTarget, 0, 0},
		{Target{Kind: TClient, N: 1}, ClientTarget, 0, 1},
		{Target{Kind: TRandom}, ClientTarget, 3, 1},
		{Target{Kind: TRandom}, MemberTarget, 4, 0},
	} {
		got, err := Resolve(tc.target, tc.class, w, tc.draw)
		if err != nil || got != tc.want {
			t.Errorf("%v: %d, %v; want %d", tc.target, got, err, tc.want)
		}
	}
	for _, bad := range []Target{{Kind: TMember, N: 2}, {Kind: TWaiter, N: 1}, {Kind: TClient, N: 2}} {
		if _, err := Resolve(bad, ClientTarget, w, 0); err == nil {
			t.Errorf("%v resolved", bad)
		}
	}
	if !reflect.DeepEqual(w.calls, []string(nil)) {
		t.Errorf("resolving acted on the world: %v", w.calls)
	}
}
