package harness

import (
	"cmp"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/lockbench/lockbench/clocks"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/rundir"
)

// BenchmarkMergeWorkers is lockbench merge of four workers × 250 clients,
// 1M events in all: loading the four folders, aligning their clocks,
// merging, checking and writing the merged run folder. It reports
// s/Mevents for the whole and merge-s/Mevents for the alignment and the
// merge alone (docs/scale.md's target: < 2 s per million events).
//
//	go test ./harness -run '^$' -bench MergeWorkers -benchtime 3x
func BenchmarkMergeWorkers(b *testing.B) {
	const workers, clients, holds = 4, 1000, 250_000
	dirs := writeSyntheticWorkers(b, workers, clients, holds)
	out := b.TempDir()
	var merge time.Duration
	events := 0
	for b.Loop() {
		ws, err := LoadWorkers(dirs)
		if err != nil {
			b.Fatal(err)
		}
		m, err := WriteMergedRun(out, ws)
		if err != nil {
			b.Fatal(err)
		}
		if v := m.Summary.Checks["exclusion"].Verdict; v != "pass" {
			b.Fatalf("synthetic run's exclusion %s: %v %s %v", v, m.Summary.Checks["exclusion"].Metrics, m.Summary.Checks["exclusion"].Note, offsetsOf(m.Clocks))
		}
		merge += m.Merge
		events = m.Events
		b.StopTimer()
		os.RemoveAll(m.Dir)
		b.StartTimer()
	}
	perM := float64(b.N) * float64(events) / 1e6
	b.ReportMetric(b.Elapsed().Seconds()/perM, "s/Mevents")
	b.ReportMetric(merge.Seconds()/perM, "merge-s/Mevents")
}

// writeSyntheticWorkers writes the run folders of workers that drove
// clients through holds one at a time, a hold of 200 µs every 1 ms of
// true time, each worker's clock skewed by 1 ms × its index, with a probe
// of every worker at once every 10 ms, each a 100 µs round trip committed
// at its middle (worker by worker, in an order that alternates).
func writeSyntheticWorkers(b *testing.B, workers, clients, holds int) []string {
	b.Helper()
	dir := b.TempDir()
	evs := make([][]history.Event, workers)
	type probe struct {
		w     int
		p     clocks.Probe
		trueT int64
	}
	var probes []probe
	skew := func(w int) int64 { return int64(w) * int64(time.Millisecond) }
	for i := range holds {
		t := int64(i+1) * int64(time.Millisecond)
		c := i % clients
		w := c % workers
		s := skew(w)
		tok := int64(i + 1)
		evs[w] = append(evs[w],
			history.Event{Time: t - 400_000 + s, Process: int32(c), Type: history.Invoke, F: history.FAcquire, Lock: "lock"},
			history.Event{Time: t + s, Process: int32(c), Type: history.OK, F: history.FAcquire, Lock: "lock", Token: tok},
			history.Event{Time: t + 200_000 + s, Process: int32(c), Type: history.Invoke, F: history.FRelease, Lock: "lock", Token: tok},
			history.Event{Time: t + 300_000 + s, Process: int32(c), Type: history.OK, F: history.FRelease, Lock: "lock", Token: tok})
	}
	span := int64(holds+2) * int64(time.Millisecond)
	for t, round := int64(0), int64(0); t < span; t, round = t+10*int64(time.Millisecond), round+1 {
		for w := range workers {
			at := int64(w) // the commit order alternates by round
			if round%2 == 1 {
				at = int64(workers - w)
			}
			probes = append(probes, probe{w: w, trueT: t + 50_000 + at, p: clocks.Probe{Sent: t + skew(w), Received: t + 100_000 + skew(w)}})
		}
	}
	slices.SortFunc(probes, func(x, y probe) int { return cmp.Compare(x.trueT, y.trueT) })
	byWorker := make([][]clocks.Probe, workers)
	for i, p := range probes {
		p.p.Revision = int64(i + 1)
		byWorker[p.w] = append(byWorker[p.w], p.p)
	}
	sc := []byte(`{"name":"synthetic","clients":1000,"duration":"250s","workload":{"kind":"hold"}}`)
	var dirs []string
	for w := range workers {
		slices.SortStableFunc(evs[w], func(x, y history.Event) int { return cmp.Compare(x.Time, y.Time) })
		cfg := rundir.Config{Run: rundir.Run{RunID: "synthetic-w" + string(rune('1'+w)), Lock: "queue", Seed: 1},
			Scenario: sc, Prefix: "/p/", Worker: &rundir.Worker{Index: w + 1, Count: workers}}
		d, err := rundir.Write(dir, cfg.RunID, rundir.JSONFile(rundir.ConfigFile, cfg),
			rundir.File{Name: rundir.HistoryFile, Render: func(out io.Writer) error { return history.Write(out, evs[w]) }},
			rundir.JSONFile(rundir.SummaryFile, map[string]any{"duration_s": 250}),
			rundir.File{Name: rundir.ProbesFile, Render: rundir.ProbesRender(byWorker[w])})
		if err != nil {
			b.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	return dirs
}

func offsetsOf(cs []history.ClockValue) (out []string) {
	for _, c := range cs {
		out = append(out, time.Duration(c.OffsetNS).String()+"±"+time.Duration(c.UncertaintyNS).String())
	}
	return out
}
