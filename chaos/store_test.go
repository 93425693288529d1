package chaos

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// recordingWorld's Store notes each call, as its other parts do.

func (w *recordingWorld) Compact(_ context.Context, physical bool) error {
	return w.note("Compact %v", physical)
}

func (w *recordingWorld) Defragment(_ context.Context, i int) error {
	return w.note("Defragment %d", i)
}

func (w *recordingWorld) MoveLeader(_ context.Context, i int) error {
	return w.note("MoveLeader %d", i)
}

// compactingWorld is a World whose only working part is Compact, which
// counts its calls and fails while fail is set.
type compactingWorld struct {
	World
	mu       sync.Mutex
	calls    int
	physical bool
	fail     error
	first    chan struct{} // closed at the first call
}

func (w *compactingWorld) Compact(_ context.Context, physical bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.calls == 0 {
		close(w.first)
	}
	w.calls++
	w.physical = w.physical || physical
	return w.fail
}

// TestCompactLoop: compact-loop compacts (logically) until it is undone
// and not after; its undo fails only when no compaction succeeded.
func TestCompactLoop(t *testing.T) {
	f, err := Lookup("compact-loop")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fail    error
		undoErr bool
	}{{nil, false}, {errors.New("no leader"), true}} {
		w := &compactingWorld{fail: tc.fail, first: make(chan struct{})}
		undo, err := f.Inject(context.Background(), w, -1, time.Millisecond)
		if err != nil || undo == nil {
			t.Fatalf("inject: %v, undo %v", err, undo != nil)
		}
		<-w.first
		if err := undo(context.Background()); (err != nil) != tc.undoErr {
			t.Errorf("fail %v: undo error %v, want one: %v", tc.fail, err, tc.undoErr)
		}
		w.mu.Lock()
		n := w.calls
		w.mu.Unlock()
		time.Sleep(5 * time.Millisecond) // a loop still running would call again
		w.mu.Lock()
		if w.calls != n || w.physical {
			t.Errorf("after undo: %d calls then %d; physical %v", n, w.calls, w.physical)
		}
		w.mu.Unlock()
	}
	if _, err := ParseTarget("leader", f); err == nil {
		t.Error("compact-loop accepted a member target")
	}
}
