package clocks

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// simulate makes each worker's probes as a real run would: worker w's
// clock reads real time − theta[w]; each probe is sent at a random real
// time, takes effect at a random point of its round trip (1–rtt), and
// revisions follow the effects' real-time order.
func simulate(rng *rand.Rand, theta []time.Duration, probes int, rtt time.Duration) [][]Probe {
	type shot struct {
		w                    int
		sent, effect, answer int64
	}
	var all []shot
	for w := range theta {
		t := int64(rng.IntN(int(5 * time.Millisecond)))
		for range probes {
			trip := int64(time.Millisecond) + rng.Int64N(int64(rtt))
			effect := t + rng.Int64N(trip)
			all = append(all, shot{w, t, effect, t + trip})
			t += trip + rng.Int64N(int64(20*time.Millisecond)) // one probe at a time
		}
	}
	slices.SortFunc(all, func(a, b shot) int { return int(a.effect - b.effect) })
	out := make([][]Probe, len(theta))
	for i, s := range all {
		th := int64(theta[s.w])
		out[s.w] = append(out[s.w], Probe{Sent: s.sent - th, Received: s.answer - th, Revision: int64(100 + i)})
	}
	return out
}

// TestAlignContainsTheTrueOffsets: over many simulated runs (offsets of
// ±50 ms and ±500 ms, round trips up to 5 ms) every worker's interval
// holds its true offset, the estimate is within the uncertainty of it,
// and the uncertainty is no more than a round trip.
func TestAlignContainsTheTrueOffsets(t *testing.T) {
	theta := []time.Duration{0, 50 * time.Millisecond, -50 * time.Millisecond, 500 * time.Millisecond, -500 * time.Millisecond}
	const rtt = 5 * time.Millisecond
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		ws := simulate(rng, theta, 40, rtt)
		offs, err := Align(ws)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for w, o := range offs {
			// The worker's clock is real − θ: add θ to read real time,
			// which worker 0's clock reads (θ₀ = 0).
			if o.Lo > theta[w] || theta[w] > o.Hi {
				t.Fatalf("seed %d worker %d: true offset %s outside [%s, %s]", seed, w, theta[w], o.Lo, o.Hi)
			}
			if d := o.Offset - theta[w]; d > o.Uncertainty || -d > o.Uncertainty {
				t.Fatalf("seed %d worker %d: estimate %s, true %s, uncertainty %s", seed, w, o.Offset, theta[w], o.Uncertainty)
			}
			if o.Uncertainty > rtt+time.Millisecond {
				t.Fatalf("seed %d worker %d: uncertainty %s, more than a round trip", seed, w, o.Uncertainty)
			}
		}
	}
}

// TestAlignThroughOtherWorkers: worker 2's probes never interleave with
// worker 0's, only with worker 1's, which interleave with worker 0's: its
// offset is bounded through worker 1.
func TestAlignThroughOtherWorkers(t *testing.T) {
	ms := func(x int64) int64 { return x * int64(time.Millisecond) }
	ws := [][]Probe{
		{{Sent: ms(0), Received: ms(2), Revision: 1}, {Sent: ms(10), Received: ms(12), Revision: 4}},
		{{Sent: ms(4), Received: ms(6), Revision: 2}, {Sent: ms(20), Received: ms(22), Revision: 5}, {Sent: ms(24), Received: ms(26), Revision: 7}},
		{{Sent: ms(21), Received: ms(23), Revision: 6}, {Sent: ms(30), Received: ms(31), Revision: 8}, {Sent: ms(5), Received: ms(6), Revision: 3}},
	}
	offs, err := Align(ws)
	if err != nil {
		t.Fatal(err)
	}
	if o := offs[2]; o.Lo > o.Hi || o.Uncertainty <= 0 || o.Hi-o.Lo > 20*time.Millisecond {
		t.Errorf("worker 2: %+v, want a bounded interval", o)
	}
}

// TestAlignRefuses: a worker that never interleaves, contradicting
// bounds (a clock that jumped between probes) and a probe received
// before it was sent are errors that say so.
func TestAlignRefuses(t *testing.T) {
	ms := func(x int64) int64 { return x * int64(time.Millisecond) }
	tests := []struct {
		name    string
		workers [][]Probe
		want    string
	}{
		{"no overlap", [][]Probe{
			{{Sent: 0, Received: ms(1), Revision: 1}, {Sent: ms(2), Received: ms(3), Revision: 2}},
			{{Sent: ms(5), Received: ms(6), Revision: 3}},
		}, "do not interleave"},
		{"a jump", [][]Probe{
			// worker 1's second probe reads 100 ms later than the first
			// one's neighbours allow.
			{{Sent: 0, Received: ms(1), Revision: 1}, {Sent: ms(10), Received: ms(11), Revision: 3}, {Sent: ms(20), Received: ms(21), Revision: 5}},
			{{Sent: ms(4), Received: ms(6), Revision: 2}, {Sent: ms(114), Received: ms(116), Revision: 4}},
		}, "contradict"},
		{"backwards", [][]Probe{{{Sent: 5, Received: 4, Revision: 1}}}, "received (4) before it was sent (5)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Align(tt.workers)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
			if tt.name == "no overlap" && !errors.Is(err, ErrNoOverlap) {
				t.Errorf("err %v is not ErrNoOverlap", err)
			}
		})
	}
}

// FuzzAlign: whatever the probes, Align never panics, and an offset it
// returns is an interval around its estimate.
func FuzzAlign(f *testing.F) {
	f.Add(int64(0), int64(10), int64(3), int64(5), int64(1), int64(2))
	f.Fuzz(func(t *testing.T, s0, r0, s1, r1, rev0, rev1 int64) {
		offs, err := Align([][]Probe{{{Sent: s0, Received: r0, Revision: rev0}, {Sent: s0 + 1, Received: r0 + 1, Revision: rev0 + 2}},
			{{Sent: s1, Received: r1, Revision: rev1}}})
		if err != nil {
			return
		}
		for _, o := range offs {
			if o.Lo > o.Hi || o.Uncertainty < 0 {
				t.Fatalf("%+v", o)
			}
		}
	})
}
