package check

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// randomConfig draws a small random sequential schedule.
func randomConfig(rng *rand.Rand, inject string) genConfig {
	procs := 1 + rng.IntN(8)
	if inject == "overlap" {
		procs++ // someone to overlap with
	}
	return genConfig{
		procs:      procs,
		grants:     6 + rng.IntN(200),
		counter:    inject == "lost" || inject == "token" || rng.IntN(2) == 0,
		wakeAll:    rng.IntN(2) == 0,
		faultEvery: rng.IntN(20),
		giveUp:     rng.Float64() * 0.3,
		keys:       rng.IntN(2) == 0,
		inject:     inject,
	}
}

const propertyRuns = 300

// Histories of random sequential schedules are always clean.
func TestPropertySequentialIsClean(t *testing.T) {
	for seed := range uint64(propertyRuns) {
		rng := rand.New(rand.NewPCG(seed, 7))
		cfg := randomConfig(rng, "")
		evs, _ := genHistory(rng, cfg)
		r := Check(evs, Options{})
		if r.Verdict != verdict.Pass {
			t.Fatalf("seed %d (%+v): verdict %s: %+v", seed, cfg, r.Verdict, r.Checks)
		}
	}
}

// One injected overlap, lost update or token regression is always caught,
// by the check it concerns, and by no other. A grant with a lower token
// is two facts fencing judges: the grant itself, and the write it makes.
func TestPropertyInjectedFaultIsCaught(t *testing.T) {
	for _, tc := range []struct {
		inject, check string
		line          bool // the injected line is among a violation's lines
		count         int
	}{
		{"overlap", verdict.Exclusion, true, 1},
		{"lost", verdict.Resource, false, 1},
		{"token", verdict.Fencing, true, 2},
	} {
		t.Run(tc.inject, func(t *testing.T) {
			for seed := range uint64(propertyRuns) {
				rng := rand.New(rand.NewPCG(seed, 11))
				cfg := randomConfig(rng, tc.inject)
				evs, line := genHistory(rng, cfg)
				if line == 0 {
					t.Fatalf("seed %d: nothing injected", seed)
				}
				r := Check(evs, Options{})
				for _, n := range verdict.CheckNames {
					want := verdict.Pass
					if n == tc.check {
						want = verdict.Fail
					}
					if got := r.Checks[n].Verdict; got != want {
						t.Fatalf("seed %d (%+v), injected at line %d: %s = %s, want %s: %+v", seed, cfg, line, n, got, want, r.Checks[n])
					}
				}
				res := r.Checks[tc.check]
				if res.Count != tc.count {
					t.Errorf("seed %d: %d violations, want %d: %+v", seed, res.Count, tc.count, res.Violations)
				}
				if tc.line && !slices.ContainsFunc(res.Violations, func(v Violation) bool { return slices.Contains(v.Lines, line) }) {
					t.Errorf("seed %d: violations %+v miss the injected line %d", seed, res.Violations, line)
				}
				if tc.inject == "lost" && res.Metrics["lost_updates"] != 1 {
					t.Errorf("seed %d: lost_updates = %v, want 1", seed, res.Metrics["lost_updates"])
				}
			}
		})
	}
}

// Line order does not matter, only times: a shuffled history (distinct
// times) gets the same verdicts and figures.
func TestPropertyLineOrderIrrelevant(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 13))
		inject := []string{"", "overlap", "lost", "token"}[seed%4]
		evs, _ := genHistory(rng, randomConfig(rng, inject))
		shuffled := slices.Clone(evs)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		a, b := Check(evs, Options{}), Check(shuffled, Options{})
		for _, n := range verdict.CheckNames {
			if a.Checks[n].Verdict != b.Checks[n].Verdict || a.Checks[n].Count != b.Checks[n].Count ||
				!reflect.DeepEqual(a.Checks[n].Metrics, b.Checks[n].Metrics) {
				t.Fatalf("seed %d: %s differs after shuffling:\n%+v\n%+v", seed, n, a.Checks[n], b.Checks[n])
			}
		}
	}
}

// The checker reads only contract fields: without key and lease, the
// report is the same.
func TestPropertyContractFieldsOnly(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 17))
		cfg := randomConfig(rng, []string{"", "overlap", "lost", "token"}[seed%4])
		cfg.keys = true
		evs, _ := genHistory(rng, cfg)
		if !reflect.DeepEqual(Check(evs, Options{}).Report, Check(stripDiagnostics(evs), Options{}).Report) {
			t.Fatalf("seed %d: report depends on key/lease", seed)
		}
	}
}

func stripDiagnostics(evs []history.Event) []history.Event {
	out := slices.Clone(evs)
	for i := range out {
		out[i].Key, out[i].Lease = "", ""
	}
	return out
}
