package history

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultMaxEvents bounds a recording so that a runaway run stops with a
// clear message instead of exhausting memory.
const DefaultMaxEvents = 10_000_000

// ErrFull is returned by Append once the recorder holds its maximum.
var ErrFull = errors.New("history: event limit reached")

// Recorder is a history under construction, shared by all clients of a run.
// Times come from one monotonic base taken at creation, and are read under
// the same lock that appends, so the slice is always in time order: the
// file is sorted without a sort, and a reader may trust line order.
type Recorder struct {
	start time.Time
	// skew is added to every time (SkewedRecorder): a clock that reads
	// ahead of the run's start, as another machine's may.
	skew time.Duration
	max  int
	off  bool

	mu     sync.Mutex
	events []Event
	full   bool
}

// NewRecorder starts the run's clock. max ≤ 0 means DefaultMaxEvents.
func NewRecorder(max int) *Recorder {
	if max <= 0 {
		max = DefaultMaxEvents
	}
	return &Recorder{start: time.Now(), max: max, events: make([]Event, 0, 1024)}
}

// NewSkewedRecorder is NewRecorder whose times all read skew (≥ 0) ahead
// while Start stays the true start: a worker whose history's clock is off
// by skew against the wall clock, to show that merging workers' histories
// (package clocks) does not rely on their wall clocks. Test-only.
func NewSkewedRecorder(limit int, skew time.Duration) *Recorder {
	r := NewRecorder(limit)
	r.skew = max(skew, 0)
	return r
}

// NewDiscardRecorder returns a recorder that keeps nothing; it exists to
// measure what recording costs a run.
func NewDiscardRecorder() *Recorder {
	r := NewRecorder(1)
	r.off = true
	return r
}

// Start is the wall-clock time the run's clock counts from.
func (r *Recorder) Start() time.Time { return r.start }

// Now is the current time on the run's clock.
func (r *Recorder) Now() int64 { return int64(time.Since(r.start) + r.skew) }

// Append stamps e with the current run time and adds it. It returns the
// stamped time, and ErrFull (once, then silently) when the limit is hit.
func (r *Recorder) Append(e Event) (int64, error) {
	if r.off {
		return r.Now(), nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Time = int64(time.Since(r.start) + r.skew)
	if len(r.events) >= r.max {
		if r.full {
			return e.Time, nil
		}
		r.full = true
		return e.Time, fmt.Errorf("%w (%d events)", ErrFull, r.max)
	}
	r.events = append(r.events, e)
	return e.Time, nil
}

// Full reports whether events have been dropped because of the limit.
func (r *Recorder) Full() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.full
}

// Len is the number of events recorded so far.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// Events returns a copy of the history so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}
