package history

import (
	"io"
	"testing"
)

// benchEvent is a typical grant event, as a lock client records it.
var benchEvent = Event{Process: 3, Type: OK, F: FAcquire, Lock: "lock", Token: 412, Key: "/lockbench/run/lock/0123456789abcdef", Lease: "694d7c4b2e1a0f07"}

// BenchmarkRecorderAppend is the cost of recording one event while every
// core appends (the recorder is shared by a run's clients); compare with
// BenchmarkRecorderAppendDiscard, what a run pays with recording off:
//
//	go test -run '^$' -bench BenchmarkRecorderAppend -benchmem ./history
func BenchmarkRecorderAppend(b *testing.B) {
	r := NewRecorder(0)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for i := 1; pb.Next(); i++ {
			if _, err := r.Append(benchEvent); err != nil {
				b.Error(err)
				return
			}
			// Stay far below DefaultMaxEvents however long the run.
			if i%(1<<16) == 0 {
				r.mu.Lock()
				if len(r.events) >= 1_000_000 {
					r.events = r.events[:0]
				}
				r.mu.Unlock()
			}
		}
	})
}

// BenchmarkRecorderAppendDiscard is Append on a discarding recorder.
func BenchmarkRecorderAppendDiscard(b *testing.B) {
	r := NewDiscardRecorder()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Append(benchEvent)
		}
	})
}

// BenchmarkWrite encodes 1,000,000 events as JSON Lines (what writing a
// run folder costs after the run).
func BenchmarkWrite(b *testing.B) {
	evs := make([]Event, 1_000_000)
	for i := range evs {
		e := benchEvent
		e.Time, e.Process, e.Token = int64(i)*25_000, int32(i%32), int64(1000+i)
		evs[i] = e
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := Write(io.Discard, evs); err != nil {
			b.Fatal(err)
		}
	}
}
