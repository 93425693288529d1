package chaos

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// repliesWorld records what the reply faults asked of a client's relays.
type repliesWorld struct {
	World
	armed map[int]int
	lost  int
	fail  error
}

func (w *repliesWorld) LoseCreateReplies(i, n int) error {
	if w.fail != nil {
		return w.fail
	}
	w.armed[i] = n
	return nil
}

func (w *repliesWorld) KeepCreateReplies(i int) (int, error) {
	delete(w.armed, i)
	return w.lost, nil
}

// TestReplyFaults: lose-create-reply arms the client for one reply,
// lose-create-replies for every one; the undo disarms, and fails when
// no reply was lost meanwhile, so the history says the fault did not
// strike; an arming that fails fails the step.
func TestReplyFaults(t *testing.T) {
	for _, c := range []struct {
		fault   string
		arm     int
		lost    int
		undoErr string
	}{
		{"lose-create-reply", 1, 1, ""},
		{"lose-create-reply", 1, 0, "client 2 made no create while armed"},
		{"lose-create-replies", -1, 3, ""},
		{"lose-create-replies", -1, 0, "no reply was lost"},
	} {
		f, err := Lookup(c.fault)
		if err != nil {
			t.Fatal(err)
		}
		w := &repliesWorld{armed: map[int]int{}, lost: c.lost}
		undo, err := f.Inject(context.Background(), w, 2, 0)
		if err != nil || undo == nil {
			t.Fatalf("%s: %v (undo %v)", c.fault, err, undo != nil)
		}
		if got, ok := w.armed[2]; !ok || got != c.arm {
			t.Errorf("%s: armed %d (%v), want %d", c.fault, got, ok, c.arm)
		}
		err = undo(context.Background())
		if _, still := w.armed[2]; still {
			t.Errorf("%s: still armed after the undo", c.fault)
		}
		if (err == nil) != (c.undoErr == "") || err != nil && !strings.Contains(err.Error(), c.undoErr) {
			t.Errorf("%s, %d lost: undo %v, want %q", c.fault, c.lost, err, c.undoErr)
		}
	}
	f, _ := Lookup("lose-create-reply")
	if _, err := f.Inject(context.Background(), &repliesWorld{fail: errors.New("no relays")}, 0, 0); err == nil {
		t.Error("an arming that failed did not fail the step")
	}
}
