package suite

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/rundir"
)

// mergeAllocLimit is the most a merge of one fuzzed folder may allocate:
// a count or size read from a file must not size anything (2e9 workers
// once drove a merge out of memory).
const mergeAllocLimit = 1 << 30

// The folders cli's merge tests use: two shards of one suite, and the
// four workers of one run.
var (
	fuzzShards  = filepath.Join("..", "cli", "testdata", "merge")
	fuzzWorkers = filepath.Join("..", "cli", "testdata", "workers")
)

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// FuzzMergeShards merges shard 1 of a real sharded suite with a shard 2
// whose suite.json is the fuzzer's: LoadShards and WriteMerged refuse it
// with an error or write a merged folder, never panic, and stay under
// mergeAllocLimit.
func FuzzMergeShards(f *testing.F) {
	for _, s := range []string{"shard2of2", "shard2of3", "shard2of2-overlapping"} {
		f.Add(readFile(f, filepath.Join(fuzzShards, s, rundir.SuiteFile)))
	}
	f.Add([]byte(`{"cells":[],"matrix":{"id":"m"},"shard":{"index":2,"count":2000000000}}`))
	one := filepath.Join(fuzzShards, "shard1of2")
	f.Fuzz(func(t *testing.T, suite []byte) {
		dir := t.TempDir()
		two := filepath.Join(dir, "two")
		writeFile(t, filepath.Join(two, rundir.SuiteFile), suite)
		n := allocated(func() {
			if shards, err := LoadShards([]string{one, two}); err == nil {
				WriteMerged(filepath.Join(dir, "out"), shards) // harness.Refused or written: either is fine
			}
		})
		if n > mergeAllocLimit {
			t.Fatalf("merging %q allocated %d MB", suite, n>>20)
		}
	})
}

// FuzzMergeWorkers merges workers 1, 3 and 4 of a real run with a worker
// 2 whose config.json, history.jsonl and probes.jsonl are the fuzzer's:
// LoadWorkers and WriteMergedRun refuse or merge, never panic, and stay
// under mergeAllocLimit.
func FuzzMergeWorkers(f *testing.F) {
	w2 := func(name string) []byte { return readFile(f, filepath.Join(fuzzWorkers, "w2", name)) }
	cfg, hist, prb := w2(rundir.ConfigFile), w2(rundir.HistoryFile), w2(rundir.ProbesFile)
	f.Add(cfg, hist, prb)
	f.Add(cfg, []byte{}, prb)
	f.Add(cfg, hist, []byte(`{"sent":-9223372036854775808,"received":9223372036854775807,"revision":1}`+"\n"))
	f.Fuzz(func(t *testing.T, cfg, hist, prb []byte) {
		two := filepath.Join(t.TempDir(), "w2")
		writeFile(t, filepath.Join(two, rundir.ConfigFile), cfg)
		writeFile(t, filepath.Join(two, rundir.HistoryFile), hist)
		writeFile(t, filepath.Join(two, rundir.SummaryFile), []byte("{}"))
		writeFile(t, filepath.Join(two, rundir.ProbesFile), prb)
		dirs := []string{filepath.Join(fuzzWorkers, "w1"), two, filepath.Join(fuzzWorkers, "w3"), filepath.Join(fuzzWorkers, "w4")}
		n := allocated(func() {
			if ws, err := harness.LoadWorkers(dirs); err == nil {
				harness.WriteMergedRun(t.TempDir(), ws) // harness.Refused or written: either is fine
			}
		})
		if n > mergeAllocLimit {
			t.Fatalf("merging config %q, %d history bytes, probes %q allocated %d MB", cfg, len(hist), prb, n>>20)
		}
	})
}

func readFile(f *testing.F, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
