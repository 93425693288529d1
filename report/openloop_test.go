package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
)

// acquireHistory is one process acquiring and releasing in turn: each
// acquire invoked at inv[i] ms (with intended start at[i] ms, or none when
// < 0) and granted 4 ms later.
func acquireHistory(inv, at []int64) []history.Event {
	const ms = int64(time.Millisecond)
	var ev []history.Event
	for i := range inv {
		e := history.Event{Time: inv[i] * ms, Process: 0, Type: history.Invoke, F: history.FAcquire, Lock: "lock"}
		if at[i] >= 0 {
			e.Value = history.IntendedValue(at[i] * ms)
		}
		g := (inv[i] + 4) * ms
		ev = append(ev, e,
			history.Event{Time: g, Process: 0, Type: history.OK, F: history.FAcquire, Lock: "lock", Token: int64(i + 1)},
			history.Event{Time: g, Process: 0, Type: history.Invoke, F: history.FRelease, Lock: "lock"},
			history.Event{Time: g, Process: 0, Type: history.OK, F: history.FRelease, Lock: "lock"})
	}
	return ev
}

func TestSummaryReadsIntendedStarts(t *testing.T) {
	tests := []struct {
		name              string
		inv, at           []int64
		acquireMax        float64 // ms
		open              bool
		queuedMax         float64
		earlyP50, lateP50 float64
	}{
		{"closed loop", []int64{0, 10, 20, 30}, []int64{-1, -1, -1, -1}, 4, false, 0, 0, 0},
		{"open loop, on time", []int64{0, 10, 20, 30}, []int64{0, 10, 20, 30}, 4, true, 0.001, 4, 4},
		// Each arrival waited for the one client: 0, 5, 10, 15 ms.
		{"open loop, queued", []int64{0, 10, 20, 30}, []int64{0, 5, 10, 15}, 19, true, 15, 4, 14},
		// An intended start after the invoke is no start: the invoke counts.
		{"intended after the call", []int64{0, 10}, []int64{0, 12}, 4, true, 0.001, 4, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := check.Check(acquireHistory(tt.inv, tt.at), check.Options{})
			s := Summarize(RunInfo{Scenario: "x", Clients: 1, Elapsed: 40 * time.Millisecond}, c)
			if got := s.LatencyMS[LatAcquire].Max; !approx(got, tt.acquireMax) {
				t.Errorf("acquire max %v ms, want %v", got, tt.acquireMax)
			}
			if (s.OpenLoop != nil) != tt.open {
				t.Fatalf("open_loop %+v, want present: %v", s.OpenLoop, tt.open)
			}
			if s.Series == nil || len(s.Series.Acquire) == 0 {
				t.Fatal("no acquire series")
			}
			var seriesMax float64
			for _, iv := range s.Series.Acquire {
				seriesMax = max(seriesMax, iv.Max)
			}
			if !approx(seriesMax, tt.acquireMax) {
				t.Errorf("acquire series max %v ms, want the summary's %v", seriesMax, tt.acquireMax)
			}
			if !tt.open {
				return
			}
			o := s.OpenLoop
			if !approx(o.QueuedMS.Max, tt.queuedMax) || !approx(o.ServiceMS.Max, 4) || !approx(o.EarlyP50MS, tt.earlyP50) || !approx(o.LateP50MS, tt.lateP50) {
				t.Errorf("open_loop queued max %v service max %v early %v late %v; want %v, 4, %v, %v",
					o.QueuedMS.Max, o.ServiceMS.Max, o.EarlyP50MS, o.LateP50MS, tt.queuedMax, tt.earlyP50, tt.lateP50)
			}
			var out bytes.Buffer
			if err := LatencyTable(&out, s); err != nil || !strings.Contains(out.String(), "open loop: acquire counts from each arrival's intended start") {
				t.Errorf("latency table %v:\n%s", err, out.String())
			}
		})
	}
}

// approx is a ≈ b at the histograms' resolution (3 significant digits).
func approx(a, b float64) bool { return a >= b && a <= b*1.002+1e-9 }
