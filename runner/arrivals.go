package runner

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/scenarios"
)

// Open-loop load (scenarios.Workload.Rate): acquisitions arrive on a
// schedule, whatever the lock's latency, and the clients are the pool that
// serves them. A free client takes the next arrival in order, waits for
// its intended start if it is still ahead, and asks for the lock; when no
// client is free an arrival waits for one, and that wait is part of its
// latency, because the acquire's invoke records the intended start
// (history.Intended) and the summary measures from it. A closed-loop
// client asks again as soon as it released, so a slow lock slows its own
// offered load and its latency hides the queue (coordinated omission).

// arrivalsStream is the PCG stream of the arrival schedule: apart from
// every client's (seed, id<<16|generation), so the schedule and the
// clients' back-off draws never share numbers.
const arrivalsStream = 0x6172726976616c73 // "arrivals"

// arrivals is an open-loop schedule: the intended starts of the run's
// acquisitions, handed out in order. It is a pure function of the rate,
// the process and the seed: the same seed gives the same schedule.
type arrivals struct {
	mu sync.Mutex
	// gap is the mean time between arrivals in ns (1e9 / rate).
	gap     float64
	poisson bool
	rng     *rand.Rand
	// k counts the arrivals handed out; next is the intended start of the
	// next one (Poisson: the running sum of the gaps drawn).
	k    int64
	next float64
}

// newArrivals is w's schedule under seed, nil for a closed-loop workload.
func newArrivals(w scenarios.Workload, seed int64) *arrivals {
	if !w.OpenLoop() {
		return nil
	}
	a := &arrivals{gap: 1e9 / w.Rate.PerS(), poisson: w.ArrivalKind() == scenarios.ArrivalsPoisson,
		rng: rand.New(rand.NewPCG(uint64(seed), arrivalsStream))}
	if a.poisson {
		a.next = a.rng.ExpFloat64() * a.gap
	}
	return a
}

// take hands out the next arrival's intended start, in ns since the run's
// start. Uniform arrivals are k × gap (computed, not summed, so that a
// long run does not drift); Poisson ones are separated by exponential
// gaps of mean gap.
func (a *arrivals) take() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.k++
	if !a.poisson {
		return int64(float64(a.k-1) * a.gap)
	}
	t := a.next
	a.next += a.rng.ExpFloat64() * a.gap
	return int64(t)
}

// schedule is the first n intended starts of w's schedule under seed: what
// a run hands out, for tests and for the open-loop arithmetic of callers
// that simulate a lock.
func schedule(w scenarios.Workload, seed int64, n int) []int64 {
	a := newArrivals(w, seed)
	if a == nil {
		return nil
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = a.take()
	}
	return out
}

// Schedule is schedule, exported for the harness's and the tests' pure
// open-loop arithmetic.
func Schedule(w scenarios.Workload, seed int64, n int) []int64 { return schedule(w, seed, n) }

// arrive is where a client of an open-loop run waits for its next
// arrival: it takes one, sleeps until its intended start if that is still
// ahead, and returns the Value its acquire invoke carries
// (history.IntendedValue). A closed-loop run returns at once with no
// value. ok is false when the run ends first, or the arrival falls after
// the run's duration (none is due then).
func (r *runner) arrive(ctx context.Context) (value json.RawMessage, ok bool) {
	if r.arrivals == nil {
		return nil, ctx.Err() == nil
	}
	t := r.arrivals.take()
	if t >= int64(r.cfg.Scenario.Duration.D()) {
		<-ctx.Done() // the run's clock ends its workers
		return nil, false
	}
	if !Sleep(ctx, time.Duration(t-r.rec.Now())) {
		return nil, false
	}
	return history.IntendedValue(t), true
}
