package check

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json from the checker's output")

// savedVerdicts is what each saved history must give, check by check (all
// others pass). The golden files hold the full reports.
var savedVerdicts = map[string]map[string]verdict.Verdict{
	// queue-naive takes the lock on its predecessor's delete while an
	// older holder remains: two overlaps.
	"queue-naive-overlap": {verdict.Exclusion: verdict.Fail},
	// A holder paused past its lease writes with its old token after the
	// next holder: the plain counter accepts it (stale write, lost update).
	"counter-pause-stale-write": {verdict.Resource: verdict.Fail, verdict.Fencing: verdict.Fail},
	// The same run with counter-fenced: the stale write is rejected.
	"counter-fenced-pause": {},
	// A waiter misses its predecessor's delete: the lock is free for 8s.
	"queue-missed-watch-stall": {verdict.Liveness: verdict.Fail},
	// Every waiter wakes on every handoff: figures only.
	"txn-watch-herd": {},
	// Only contract fields, written by hand.
	"handwritten-contract-only": {},
	// Merged from two workers whose clocks agree within 4.1 ms: process
	// 1's grant lands 2.5 ms inside process 0's hold, which their
	// clocks cannot tell from a handoff.
	"two-workers-clock-uncertain": {verdict.Exclusion: verdict.Unknown},
	// etcd #20273 (examples/etcd-20273.yaml, queue, seed 1): the holder
	// crashed at 1s, the leadership moved at 2s, and the new leader gave
	// the dead lease a full TTL again: its key went 0.48s past the bound.
	"queue-etcd-20273-expiry": {verdict.Expiry: verdict.Fail},
	// etcd PR #21126 (examples/etcd-21126.yaml, keepalive-requireleader,
	// seed 1): told its lease was lost at a leader loss, the client went
	// on renewing it, so its dropped lock's key stayed to the end (expiry),
	// under a live lease after the client was done (orphans), and the
	// waiters starved (liveness).
	"keepalive-requireleader-21126": {verdict.Expiry: verdict.Fail, verdict.Orphans: verdict.Fail, verdict.Liveness: verdict.Fail},
}

func TestSavedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no saved histories: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		t.Run(name, func(t *testing.T) {
			want, known := savedVerdicts[name]
			if !known {
				t.Fatalf("%s has no entry in savedVerdicts", f)
			}
			evs, err := history.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			r := Check(evs, Options{})
			for _, n := range verdict.CheckNames {
				v := want[n]
				if v == "" {
					v = verdict.Pass
				}
				if got := r.Checks[n].Verdict; got != v {
					t.Errorf("%s = %s, want %s: %+v", n, got, v, r.Checks[n])
				}
			}
			if !reflect.DeepEqual(r.Report, Check(stripDiagnostics(evs), Options{}).Report) {
				t.Errorf("report changes without key/lease fields")
			}
			got, err := json.MarshalIndent(r, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			wantJSON, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./check -run TestSavedHistories -update)", err)
			}
			if !bytes.Equal(got, wantJSON) {
				t.Errorf("report differs from %s (go test ./check -run TestSavedHistories -update to accept):\n%s", golden, got)
			}
		})
	}
}

// A history written by hand with only the contract fields checks exactly
// like the same history as the recorder writes it, with diagnostics.
func TestHandWrittenContractOnly(t *testing.T) {
	hand := `{"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}
{"time":1,"process":0,"type":"ok","f":"acquire","lock":"l","token":7}
{"time":2,"process":1,"type":"invoke","f":"acquire","lock":"l"}
{"time":3,"process":1,"type":"ok","f":"acquire","lock":"l","token":8}
{"time":4,"process":0,"type":"invoke","f":"write","lock":"l","token":7,"value":1}
{"time":5,"process":0,"type":"ok","f":"write","lock":"l"}
{"time":6,"process":-1,"type":"ok","f":"read","value":1}
`
	recorded := `{"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}
{"time":1,"process":0,"type":"ok","f":"acquire","lock":"l","token":7,"key":"l/694d8c1a","lease":"694d8c1a0f3e2b01"}
{"time":2,"process":1,"type":"invoke","f":"acquire","lock":"l"}
{"time":3,"process":1,"type":"ok","f":"acquire","lock":"l","token":8,"key":"l/694d8c1b","lease":"694d8c1a0f3e2b02"}
{"time":4,"process":0,"type":"invoke","f":"write","lock":"l","token":7,"value":1}
{"time":5,"process":0,"type":"ok","f":"write","lock":"l"}
{"time":6,"process":-1,"type":"ok","f":"read","value":1}
`
	a, err := history.Read(strings.NewReader(hand))
	if err != nil {
		t.Fatal(err)
	}
	b, err := history.Read(strings.NewReader(recorded))
	if err != nil {
		t.Fatal(err)
	}
	ra, rb := Check(a, Options{}).Report, Check(b, Options{}).Report
	if !reflect.DeepEqual(ra, rb) {
		t.Errorf("hand-written %+v\nrecorded %+v", ra, rb)
	}
	if ra.Checks[verdict.Exclusion].Verdict != verdict.Fail || ra.Checks[verdict.Fencing].Verdict != verdict.Fail || ra.Checks[verdict.Resource].Verdict != verdict.Pass {
		t.Errorf("verdicts: %+v", ra.Checks)
	}
}
