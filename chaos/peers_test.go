package chaos

import (
	"context"
	"time"
)

// recordingWorld's Peers note each call, as its other parts do.

func (w *recordingWorld) ShapePeers(i int, delay, jitter time.Duration, drop float64) error {
	return w.note("ShapePeers %d %v %v %g", i, delay, jitter, drop)
}

func (w *recordingWorld) ReplaceMember(_ context.Context, i int) error {
	return w.note("ReplaceMember %d", i)
}

func (w *recordingWorld) CutReplication(cut bool) error {
	return w.note("CutReplication %v", cut)
}

func (w *recordingWorld) CatchUpBySnapshot(_ context.Context, i int) error {
	return w.note("CatchUpBySnapshot %d", i)
}

func (w *recordingWorld) JumpClock(i int, by time.Duration) error {
	return w.note("JumpClock %d %v", i, by)
}

func (w *recordingWorld) DelayAcquireReplies(i int, d time.Duration) error {
	return w.note("DelayAcquireReplies %d %v", i, d)
}

func (w *recordingWorld) AcquireRepliesDelayed(i int) (int, error) {
	return 1, w.note("AcquireRepliesDelayed %d", i)
}
