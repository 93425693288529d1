package chaos

import (
	"context"
	"testing"
)

// waitingWorld is a World whose only working part is its waiters.
type waitingWorld struct {
	World
	waiting, cancelled int
}

func (w *waitingWorld) CancelWaiting() int {
	n := w.waiting
	w.cancelled += n
	w.waiting = 0
	return n
}

// TestCancelWaiters: the fault cancels every waiter at once, has nothing
// to undo, says so when nobody waited, and takes no target.
func TestCancelWaiters(t *testing.T) {
	f, err := Lookup("cancel-waiters")
	if err != nil {
		t.Fatal(err)
	}
	w := &waitingWorld{waiting: 3}
	undo, err := f.Inject(context.Background(), w, -1, 0)
	if err != nil || undo != nil || w.cancelled != 3 {
		t.Fatalf("inject: err %v, undo %v, cancelled %d", err, undo != nil, w.cancelled)
	}
	if _, err := f.Inject(context.Background(), w, -1, 0); err == nil {
		t.Error("no client waiting, and no error")
	}
	if _, err := ParseTarget("holder", f); err == nil {
		t.Error("cancel-waiters accepted a client target")
	}
	if _, err := ParseTarget("", f); err != nil {
		t.Error(err)
	}
}
