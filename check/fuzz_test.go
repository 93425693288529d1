package check

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// checkInvariants holds for every report, whatever the input.
func checkInvariants(t *testing.T, evs []history.Event, opts Options, r Report) {
	t.Helper()
	o := opts.WithDefaults()
	vs := make([]verdict.Verdict, 0, len(verdict.CheckNames))
	for _, n := range verdict.CheckNames {
		c, ok := r.Checks[n]
		if !ok {
			t.Fatalf("check %q missing", n)
		}
		switch c.Verdict {
		case verdict.Pass, verdict.Unknown, verdict.Fail:
		default:
			t.Fatalf("%s: verdict %q", n, c.Verdict)
		}
		if c.Count < len(c.Violations) || len(c.Violations) > o.MaxViolations {
			t.Fatalf("%s: count %d, %d listed (max %d)", n, c.Count, len(c.Violations), o.MaxViolations)
		}
		if (c.Count > 0) != (c.Verdict == verdict.Fail) {
			t.Fatalf("%s: count %d with verdict %s", n, c.Count, c.Verdict)
		}
		for _, v := range c.Violations {
			if v.Check != n || v.Message == "" {
				t.Fatalf("%s: violation %+v", n, v)
			}
			for _, l := range v.Lines {
				if l < 1 || l > len(evs) {
					t.Fatalf("%s: line %d outside 1..%d", n, l, len(evs))
				}
			}
		}
		vs = append(vs, c.Verdict)
	}
	if r.Verdict != verdict.Worst(vs...) {
		t.Fatalf("report verdict %s, checks %v", r.Verdict, vs)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatalf("report does not marshal: %v", err)
	}
}

// FuzzCheck feeds any bytes through the decoder to the checker: no input
// may make it panic or break a report's invariants.
//
//	go test -run '^$' -fuzz FuzzCheck$ ./check
func FuzzCheck(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"time":0,"process":0,"type":"ok","f":"acquire","lock":"l","token":1}
{"time":0,"process":1,"type":"info","f":"acquire","lock":"l"}
{"time":1,"process":-1,"type":"ok","f":"read","value":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, err := history.Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		opts := Options{MaxViolations: 3, LivenessBound: 5}
		checkInvariants(t, evs, opts, Check(evs, opts).Report)
	})
}

var (
	fuzzTypes = []history.Type{history.Invoke, history.OK, history.Fail, history.Info, 0, 99} // 0 and 99: no type
	fuzzFs    = []history.Function{history.FAcquire, history.FRelease, history.FRead, history.FWrite, history.FCrash,
		history.FPause, history.FResume, history.FLeaseLost, history.FWakeup, history.FFault, FRPCs, 0, 99}
	fuzzLocks  = []string{"", "a", "b"}
	fuzzValues = [][]byte{nil, []byte("0"), []byte("1"), []byte("2"), []byte("-5"), []byte(`"s"`), []byte(`{"fault":"kill"}`), []byte("1e300")}
)

// FuzzCheckEvents builds events straight from bytes, past the decoder's
// validation (negative times, any process, unknown types, out of order,
// equal times), so that Check itself is shown never to panic on any
// []history.Event.
//
//	go test -run '^$' -fuzz FuzzCheckEvents ./check
func FuzzCheckEvents(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 1, 5, 0, 1, 0, 1, 0, 1, 0, 0, 0, 2, 1, 1, 1, 0, 1, 6, 0, 2, 2, 0, 0, 2, 1, 2, 1})
	f.Add(bytes.Repeat([]byte{3, 2, 1, 0, 1, 9, 1, 0, 250, 3, 3, 1, 0, 0, 7, 6}, 8))
	f.Fuzz(func(t *testing.T, data []byte) {
		var evs []history.Event
		tm := int64(0)
		for len(data) >= 8 {
			b := data[:8]
			data = data[8:]
			tm += int64(int8(b[0]))
			evs = append(evs, history.Event{
				Time:    tm,
				Process: int32(int(int8(b[1])) % 6),
				Type:    fuzzTypes[int(b[2])%len(fuzzTypes)],
				F:       fuzzFs[int(b[3])%len(fuzzFs)],
				Lock:    fuzzLocks[int(b[4])%len(fuzzLocks)],
				Token:   int64(int8(b[5])),
				Value:   fuzzValues[int(b[6])%len(fuzzValues)],
				Error:   []string{"", "stale token"}[b[7]&1],
			})
		}
		opts := Options{MaxViolations: 2, LivenessBound: 3, StarvationMin: 4, StarvationGrants: 1}
		r := Check(evs, opts).Report
		checkInvariants(t, evs, opts, r)
		Intervals(evs)
	})
}
