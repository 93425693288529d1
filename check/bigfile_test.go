package check

import (
	"flag"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// The flags of TestWriteBigHistory. A test, not a program, so that the
// generator the benchmarks use (genHistory) stays test code, out of the
// binary.
var (
	bigOut    = flag.String("big-out", "", "TestWriteBigHistory: write a generated history to this file")
	bigEvents = flag.Int("big-events", 10_000_000, "TestWriteBigHistory: how many events")
	bigProcs  = flag.Int("big-procs", 32, "TestWriteBigHistory: how many client processes")
)

// TestWriteBigHistory writes a realistic history of -big-events events for
// measuring `lockbench check` end to end (docs/checker.md "Speed"): the
// benchmarks' shape (benchHistory: the counter workload, a wake-up per
// handoff, a fault every 2,000 grants, waiters that give up now and then,
// the diagnostic key and lease of each grant). It skips unless -big-out is given:
//
//	go test -run TestWriteBigHistory -count=1 ./check -args -big-out /tmp/h10m.jsonl -big-events 10000000
func TestWriteBigHistory(t *testing.T) {
	if *bigOut == "" {
		t.Skip("no -big-out: nothing to write")
	}
	if *bigEvents < 1000 || *bigProcs < 2 {
		t.Fatalf("-big-events %d, -big-procs %d: want ≥ 1000 events and ≥ 2 processes", *bigEvents, *bigProcs)
	}
	evs := bigHistory(*bigEvents, *bigProcs)
	f, err := os.Create(*bigOut)
	if err != nil {
		t.Fatal(err)
	}
	if err := history.Write(f, evs); err != nil {
		f.Close()
		t.Fatalf("write %s: %v", *bigOut, err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close %s: %v", *bigOut, err)
	}
	if r := Check(evs, Options{}); r.Verdict == verdict.Fail {
		t.Fatalf("the generated history fails: %+v", r.Violations()[:1])
	}
	t.Logf("%s: %d events, %d processes", *bigOut, len(evs), *bigProcs)
}

// bigHistory is benchHistory's shape with procs clients and at least n
// events (about 9 per grant; n plus a few thousand), ending as a run ends:
// pending acquires cancelled, each client's rpcs, the counter's last read.
func bigHistory(n, procs int) []history.Event {
	c := genConfig{procs: procs, grants: n / 9, counter: true, faultEvery: 2000, giveUp: 0.02, keys: true}
	for {
		evs, _ := genHistory(rand.New(rand.NewPCG(1, 2)), c)
		if len(evs) >= n {
			return evs
		}
		c.grants += (n-len(evs))/9 + 1
	}
}
