// Package report turns a checked history into figures people read: latency
// distributions (HdrHistogram), summary.json and tables.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
)

// Latency is a distribution in milliseconds.
type Latency struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

// Summary is summary.json: the run's identity, its figures and the
// checker's verdict.
type Summary struct {
	RunID          string                  `json:"run_id"`
	Lock           string                  `json:"lock"`
	Scenario       string                  `json:"scenario"`
	Clients        int                     `json:"clients"`
	Seed           int64                   `json:"seed"`
	DurationS      float64                 `json:"duration_s"`
	Events         int                     `json:"events"`
	Acquisitions   int                     `json:"acquisitions"`
	ThroughputPerS float64                 `json:"throughput_per_s"`
	LatencyMS      map[string]Latency      `json:"latency_ms"`
	Violations     []check.Violation       `json:"violations"`
	Checks         map[string]check.Result `json:"checks"`
	Verdict        check.Verdict           `json:"verdict"`
	// Interrupted is set when a signal ended the run early; the figures
	// cover the part that ran.
	Interrupted bool `json:"interrupted,omitempty"`
	// Stopped says why the run stopped early, when not interrupted.
	Stopped string `json:"stopped,omitempty"`
}

// Run identifies a run for Summarize; the rest comes from the history.
type Run struct {
	ID, Lock, Scenario string
	Clients            int
	Seed               int64
	// Elapsed is how long clients ran; 0 means "from the history's span".
	Elapsed     time.Duration
	Interrupted bool
	Stopped     string
}

// Summarize computes the figures of a run from its history and check
// report. It reads nothing but its arguments.
func Summarize(run Run, events []history.Event, rep check.Report) Summary {
	acquire := newHist()
	pending := map[int]int64{} // process → acquire invoke time
	acquisitions := 0
	var last int64
	for _, e := range events {
		if e.Time > last {
			last = e.Time
		}
		if e.F != history.FAcquire || e.Process < 0 {
			continue
		}
		switch e.Type {
		case history.Invoke:
			pending[e.Process] = e.Time
		case history.OK:
			acquisitions++
			if t0, ok := pending[e.Process]; ok {
				acquire.record(e.Time - t0)
			}
			delete(pending, e.Process)
		default:
			delete(pending, e.Process)
		}
	}
	elapsed := run.Elapsed
	if elapsed == 0 {
		elapsed = time.Duration(last)
	}
	s := Summary{
		RunID: run.ID, Lock: run.Lock, Scenario: run.Scenario, Clients: run.Clients, Seed: run.Seed,
		DurationS:    elapsed.Seconds(),
		Events:       len(events),
		Acquisitions: acquisitions,
		LatencyMS:    map[string]Latency{"acquire": acquire.latency()},
		Violations:   rep.Violations(),
		Checks:       rep.Checks,
		Verdict:      rep.Verdict,
		Interrupted:  run.Interrupted,
		Stopped:      run.Stopped,
	}
	if s.Violations == nil {
		s.Violations = []check.Violation{}
	}
	if elapsed > 0 {
		s.ThroughputPerS = float64(acquisitions) / elapsed.Seconds()
	}
	return s
}

// hist records nanosecond durations at microsecond resolution, 3
// significant digits, up to an hour.
type hist struct{ h *hdrhistogram.Histogram }

func newHist() hist { return hist{hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)} }

func (h hist) record(ns int64) {
	us := min(max(ns/int64(time.Microsecond), 1), h.h.HighestTrackableValue())
	_ = h.h.RecordValue(us) // in range by construction
}

func (h hist) latency() Latency {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	if h.h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		Count: h.h.TotalCount(),
		P50:   ms(h.h.ValueAtQuantile(50)),
		P90:   ms(h.h.ValueAtQuantile(90)),
		P99:   ms(h.h.ValueAtQuantile(99)),
		P999:  ms(h.h.ValueAtQuantile(99.9)),
		Max:   ms(h.h.Max()),
	}
}

// WriteJSON writes v as indented JSON to path, atomically.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
