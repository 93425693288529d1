package check

import (
	"math/rand/v2"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// benchHistory is a realistic history of about n events: 32 clients taking
// turns on one lock with the counter workload, a wake-up per handoff, a
// fault every 2,000 grants, and waiters that give up now and then.
func benchHistory(n int) []history.Event {
	rng := rand.New(rand.NewPCG(1, 2))
	evs, _ := genHistory(rng, genConfig{procs: 32, grants: n / 8, counter: true, faultEvery: 2000, giveUp: 0.02, keys: true})
	return evs
}

// BenchmarkCheck1M runs every check over 1,000,000 events:
//
//	go test -run '^$' -bench 'BenchmarkCheck1M$' -benchmem ./check
func BenchmarkCheck1M(b *testing.B) {
	evs := benchHistory(1_000_000)
	if len(evs) < 1_000_000 {
		b.Fatalf("generated %d events", len(evs))
	}
	evs = evs[:1_000_000]
	if r := Check(evs, Options{}); r.Verdict == verdict.Fail {
		b.Fatalf("bench history fails: %+v", r.Violations())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		Check(evs, Options{})
	}
}

// BenchmarkCheckScaling shows time and memory growing linearly with the
// history.
func BenchmarkCheckScaling(b *testing.B) {
	for _, n := range []int{125_000, 250_000, 500_000, 1_000_000} {
		evs := benchHistory(n)
		b.Run(itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				Check(evs, Options{})
			}
		})
	}
}

// BenchmarkCheckUnsorted1M is BenchmarkCheck1M on a history whose events
// are out of time order, so that Check sorts.
func BenchmarkCheckUnsorted1M(b *testing.B) {
	evs := benchHistory(1_000_000)[:1_000_000]
	evs[0], evs[len(evs)-1] = evs[len(evs)-1], evs[0]
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		Check(evs, Options{})
	}
}

func itoa(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmtInt(n/1_000_000) + "M"
	case n >= 1000 && n%1000 == 0:
		return fmtInt(n/1000) + "k"
	}
	return fmtInt(n)
}

func fmtInt(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return fmtInt(n/10) + string(rune('0'+n%10))
}
