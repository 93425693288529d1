package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/report"
)

// The sweep brackets a lock's capacity: every rate at or below it is
// sustained, every rate above is not. It must end within its probe budget
// with a saturation rate ≤ the capacity and within the resolution of it.
func TestSweepFindsSaturation(t *testing.T) {
	for _, capacity := range []float64{0.5, 3, 19, 20, 21, 137, 410, 999, 5000} {
		sw := newSweep()
		var probed []float64
		for rate, done := sw.cur, false; !done; {
			probed = append(probed, rate)
			rate, done = sw.observe(rate <= capacity)
		}
		sat := sw.lo
		switch {
		case capacity < SweepMinRate:
			if sat != 0 {
				t.Errorf("capacity %v below the minimum rate: saturation %v, want none (probed %v)", capacity, sat, probed)
			}
		case sat > capacity || sat < capacity/(1+SweepResolution)-1e-9:
			t.Errorf("capacity %v: saturation %v, want within %.0f %% below it (probed %v)", capacity, sat, 100*SweepResolution, probed)
		}
		if len(probed) > SweepMaxProbes {
			t.Errorf("capacity %v: %d probes, budget %d", capacity, len(probed), SweepMaxProbes)
		}
	}
}

func TestSustained(t *testing.T) {
	tests := []struct {
		name string
		p    report.RatePoint
		want bool
	}{
		{"kept up", report.RatePoint{OfferedPerS: 100, AchievedPerS: 99, EarlyP50MS: 12, LateP50MS: 14}, true},
		{"5 % short", report.RatePoint{OfferedPerS: 100, AchievedPerS: 94.9, EarlyP50MS: 12, LateP50MS: 12}, false},
		{"queue grew", report.RatePoint{OfferedPerS: 100, AchievedPerS: 97, EarlyP50MS: 80, LateP50MS: 240}, false},
		{"a stall is not growth", report.RatePoint{OfferedPerS: 100, AchievedPerS: 99, EarlyP50MS: 3, LateP50MS: 4, AcquireMS: report.Latency{P99: 120}}, true},
		{"ms noise is not growth", report.RatePoint{OfferedPerS: 100, AchievedPerS: 100, EarlyP50MS: 2, LateP50MS: 13}, true},
		{"error", report.RatePoint{OfferedPerS: 100, AchievedPerS: 100, Error: "x"}, false},
	}
	for _, tt := range tests {
		if got := sustained(tt.p, 0); got != tt.want {
			t.Errorf("%s: sustained %v, want %v", tt.name, got, tt.want)
		}
	}
}

// The achieved rate counts the whole intervals within the run's clock, not
// the wind-down after it.
// In a sweep a run also stays below the knee: its median within
// KneeFactor × the light-load one (+ slack).
func TestSustainedKnee(t *testing.T) {
	p := report.RatePoint{OfferedPerS: 70, AchievedPerS: 69, EarlyP50MS: 200, LateP50MS: 210, AcquireMS: report.Latency{P50: 206}}
	if !sustained(p, 0) {
		t.Error("a standing queue that keeps up is sustained without a reference")
	}
	if sustained(p, 4.7) {
		t.Error("a median of 206 ms against a light-load 4.7 ms is sustained")
	}
	p.AcquireMS.P50 = 20
	if !sustained(p, 4.7) {
		t.Error("a median of 20 ms against 4.7 ms (bound 24.1) is not sustained")
	}
}

func TestAchievedRate(t *testing.T) {
	s := report.Summary{Acquisitions: 45, DurationS: 2.2,
		Series: &report.TimeSeries{IntervalS: 0.5, Grants: []int{10, 10, 10, 10, 5}}}
	if got := achievedRate(s, 2*time.Second); got != 20 {
		t.Errorf("achieved %v/s, want 20 (40 grants in the four intervals of 2 s)", got)
	}
	if got := achievedRate(report.Summary{Acquisitions: 30, DurationS: 3}, 2*time.Second); got != 10 {
		t.Errorf("without a series: %v/s, want acquisitions ÷ duration = 10", got)
	}
}

func TestOpenSpecValidate(t *testing.T) {
	base := BenchSpec{Locks: []string{"queue"}, Clients: []int{8}, Duration: time.Second, FloorDuration: time.Second,
		TargetLock: "queue", TargetClients: 8, Dir: t.TempDir()}
	tests := []struct {
		open    OpenSpec
		clients []int
		want    string
	}{
		{OpenSpec{RatePerS: 100}, nil, ""},
		{OpenSpec{Sweep: true, Arrivals: "poisson"}, nil, ""},
		{OpenSpec{RatePerS: 0}, nil, "must be > 0"},
		{OpenSpec{RatePerS: 2e6}, nil, "≤ 1000000"},
		{OpenSpec{RatePerS: 5, Sweep: true}, nil, "not both"},
		{OpenSpec{RatePerS: 5}, []int{2, 8}, "one client count"},
		{OpenSpec{RatePerS: 5, Arrivals: "bursty"}, nil, "uniform, poisson"},
	}
	for _, tt := range tests {
		s := base
		o := tt.open
		s.Open = &o
		if tt.clients != nil {
			s.Clients = tt.clients
		}
		err := s.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v", o, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v: error %v, want one naming %q", o, err, tt.want)
		}
	}
}
