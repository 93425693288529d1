package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func TestReadValid(t *testing.T) {
	in := `{"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}

  {"time":5,"process":0,"type":"ok","f":"acquire","lock":"l","token":12,"key":"l/1","lease":"7f"}  
{"time":6,"process":-1,"type":"invoke","f":"fault","value":{"fault":"kill","target":"leader"}}
{"time":7,"process":2,"type":"ok","f":"rpcs","value":31,"extra":"ignored"}
{"time":8,"process":2,"type":"info","f":"write","value":null,"error":"timeout"}
`
	got, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{Time: 0, Process: 0, Type: Invoke, F: FAcquire, Lock: "l"},
		{Time: 5, Process: 0, Type: OK, F: FAcquire, Lock: "l", Token: 12, Key: "l/1", Lease: "7f"},
		{Time: 6, Process: NemesisProcess, Type: Invoke, F: FFault, Value: json.RawMessage(`{"fault":"kill","target":"leader"}`)},
		{Time: 7, Process: 2, Type: OK, F: FRPCs, Value: json.RawMessage(`31`)},
		{Time: 8, Process: 2, Type: Info, F: FWrite, Error: "timeout"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestReadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		line     int
		msg      string
	}{
		{"not JSON", "{\"time\":0,\"process\":0,\"type\":\"ok\",\"f\":\"read\"}\nnope\n", 2, "not a JSON event"},
		{"missing time", `{"process":0,"type":"ok","f":"acquire"}`, 1, `missing "time"`},
		{"missing process", `{"time":0,"type":"ok","f":"acquire"}`, 1, `missing "process"`},
		{"missing type", `{"time":0,"process":0,"f":"acquire"}`, 1, `missing "type"`},
		{"missing f", `{"time":0,"process":0,"type":"ok"}`, 1, `missing "f"`},
		{"empty f", `{"time":0,"process":0,"type":"ok","f":""}`, 1, `missing "f"`},
		{"bad type", `{"time":0,"process":0,"type":"done","f":"acquire"}`, 1, `type "done"`},
		{"negative time", `{"time":-1,"process":0,"type":"ok","f":"acquire"}`, 1, "negative time"},
		{"process below -1", `{"time":0,"process":-2,"type":"ok","f":"acquire"}`, 1, "process -2"},
		{"float time", `{"time":1.5,"process":0,"type":"ok","f":"acquire"}`, 1,
			`"time" must be an integer ≥ 0 (nanoseconds since the run's start), got number 1.5`},
		{"string time", `{"time":"1","process":0,"type":"ok","f":"acquire"}`, 1,
			`"time" must be an integer ≥ 0 (nanoseconds since the run's start), got string`},
		{"string process", `{"time":1,"process":"a","type":"ok","f":"acquire"}`, 1,
			`"process" must be an integer from -1 to 2147483647 (the client id, -1 for the nemesis), got string`},
		{"process past int32", `{"time":1,"process":2147483648,"type":"ok","f":"acquire"}`, 1,
			`"process" must be an integer from -1 to 2147483647 (the client id, -1 for the nemesis), got number 2147483648`},
		{"number f", `{"time":1,"process":0,"type":"ok","f":3}`, 1, `"f" must be a string, one of acquire, release,`},
		{"object lock", `{"time":1,"process":0,"type":"ok","f":"acquire","lock":{}}`, 1, `"lock" must be a string (the lock's name), got object`},
		{"array line", `[1]`, 1, "not a JSON event: want an object with time, process, type and f, got array"},
		{"misspelt f", "{\"time\":0,\"process\":0,\"type\":\"invoke\",\"f\":\"acquire\"}\n{\"time\":1,\"process\":0,\"type\":\"ok\",\"f\":\"aquire\"}", 2,
			`f "aquire" is not one of acquire, release, read, write, crash, pause, resume, lease-lost, wakeup, fault, rpcs, key-deleted, clock, lease-op, key-op`},
		{"unknown f, slow path", `{"time":0,"process":0,"type":"ok","f":"acquire\u0021"}`, 1, `f "acquire!" is not one of acquire,`},
		{"misspelt type", `{"time":0,"process":0,"type":"okay","f":"acquire"}`, 1, `type "okay" is not one of invoke, ok, fail, info`},
		{"line after blank lines", "\n\n{}\n", 3, `missing "time"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.in))
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v, want a *LineError", err)
			}
			if le.Line != tc.line || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v (line %d), want line %d and %q", err, le.Line, tc.line, tc.msg)
			}
		})
	}
}

func TestReadEmpty(t *testing.T) {
	for _, in := range []string{"", "\n  \n\t\n"} {
		if _, err := Read(strings.NewReader(in)); !errors.Is(err, ErrEmpty) {
			t.Errorf("Read(%q) = %v, want ErrEmpty", in, err)
		}
	}
}

func TestReadLineTooLong(t *testing.T) {
	in := `{"time":0,"process":0,"type":"ok","f":"acquire"}` + "\n" +
		`{"time":0,"process":0,"type":"ok","f":"acquire","error":"` + strings.Repeat("x", maxLine) + `"}` + "\n"
	_, err := Read(strings.NewReader(in))
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 {
		t.Fatalf("err = %v, want a line 2 error", err)
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	events := []Event{
		{Time: 0, Process: 0, Type: Invoke, F: FAcquire, Lock: "l"},
		{Time: 10, Process: 0, Type: OK, F: FAcquire, Lock: "l", Token: 1 << 40, Key: "l/a", Lease: "694d"},
		{Time: 11, Process: 0, Type: Invoke, F: FWrite, Lock: "l", Token: 1 << 40, Value: IntValue(-3)},
		{Time: 12, Process: 0, Type: Fail, F: FWrite, Lock: "l", Error: "stale token: <rev> & \"quotes\""},
		{Time: 13, Process: NemesisProcess, Type: Info, F: FFault, Value: FaultValue(Fault{Fault: "pause", Target: "holder", Resolved: "client-0", ForNS: 5e9})},
	}
	var buf bytes.Buffer
	if err := Write(&buf, events); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(buf.Bytes(), []byte("\n")); n != len(events) {
		t.Errorf("%d lines for %d events", n, len(events))
	}
	got, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, events) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, events)
	}
	var f Fault
	if err := json.Unmarshal(got[4].Value, &f); err != nil || f.ForNS != 5e9 || f.Resolved != "client-0" {
		t.Errorf("fault value %s → %+v, %v", got[4].Value, f, err)
	}
}

// TestReadFile: a written history reads back from a file, and errors name
// the file. (Writing files atomically is rundir.WriteFile's, tested there.)
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "history.jsonl")
	events := []Event{{Time: 1, Process: 0, Type: OK, F: FWakeup}}
	var buf bytes.Buffer
	if err := Write(&buf, events); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil || !reflect.DeepEqual(got, events) {
		t.Fatalf("ReadFile = %+v, %v", got, err)
	}
	if _, err := ReadFile(filepath.Join(dir, "nope.jsonl")); err == nil {
		t.Error("ReadFile of a missing file succeeded")
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{}\n"), 0o644)
	if _, err := ReadFile(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("ReadFile error %v does not name the file", err)
	}
}

func TestParseInt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"", 0, false}, {"7", 7, true}, {"-7", -7, true}, {"3.0", 3, true}, {"1e3", 1000, true},
		{"3.5", 0, false}, {`"7"`, 0, false}, {"{}", 0, false},
		// Not covered: ParseInt("null") answers (0, true); Read turns a null
		// value into none, so decoded histories never reach it.
	} {
		n, ok := ParseInt(json.RawMessage(tc.in))
		if n != tc.want || ok != tc.ok {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", tc.in, n, ok, tc.want, tc.ok)
		}
	}
	if n, ok := ParseInt(IntValue(-42)); n != -42 || !ok {
		t.Errorf("IntValue round trip: %d %v", n, ok)
	}
}

func TestRecorderConcurrentAppendsStayOrdered(t *testing.T) {
	r := NewRecorder(0)
	var wg sync.WaitGroup
	for p := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				if _, err := r.Append(Event{Process: int32(p), Type: OK, F: FWakeup}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	evs := r.Events()
	if len(evs) != 4000 || r.Len() != 4000 || r.Full() {
		t.Fatalf("len %d / %d, full %v", len(evs), r.Len(), r.Full())
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Time < evs[i-1].Time {
			t.Fatalf("event %d at %d before event %d at %d", i, evs[i].Time, i-1, evs[i-1].Time)
		}
	}
	evs[0].F = FClock // a copy
	if r.Events()[0].F != FWakeup {
		t.Error("Events shares the recorder's slice")
	}
}

func TestRecorderLimit(t *testing.T) {
	r := NewRecorder(2)
	for i := range 2 {
		if _, err := r.Append(Event{Process: int32(i), Type: OK, F: FWakeup}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Append(Event{}); !errors.Is(err, ErrFull) {
		t.Errorf("third append: %v, want ErrFull", err)
	}
	if _, err := r.Append(Event{}); err != nil {
		t.Errorf("fourth append: %v, want silence", err)
	}
	if !r.Full() || r.Len() != 2 {
		t.Errorf("full %v len %d", r.Full(), r.Len())
	}
	d := NewDiscardRecorder()
	if _, err := d.Append(Event{}); err != nil || d.Len() != 0 {
		t.Errorf("discard recorder kept %d: %v", d.Len(), err)
	}
	if d.Now() < 0 || d.Start().IsZero() {
		t.Error("discard recorder has no clock")
	}
}

// readBench is a history of n lines as the recorder writes them.
func readBench(n int) []byte {
	var b bytes.Buffer
	b.Grow(n * 100)
	kinds := []string{
		`{"time":%d,"process":%d,"type":"invoke","f":"acquire","lock":"bench"}`,
		`{"time":%d,"process":%d,"type":"ok","f":"acquire","lock":"bench","token":%d,"key":"bench/694d8c1a","lease":"694d8c1a0f3e2b01"}`,
		`{"time":%d,"process":%d,"type":"invoke","f":"write","lock":"bench","token":%d,"value":%d}`,
		`{"time":%d,"process":%d,"type":"ok","f":"write","lock":"bench"}`,
		`{"time":%d,"process":%d,"type":"invoke","f":"release","lock":"bench"}`,
		`{"time":%d,"process":%d,"type":"ok","f":"release","lock":"bench"}`,
	}
	for i := range n {
		k := kinds[i%len(kinds)]
		switch strings.Count(k, "%d") {
		case 2:
			fmt.Fprintf(&b, k, int64(i)*25_000, i%32)
		case 3:
			fmt.Fprintf(&b, k, int64(i)*25_000, i%32, 1000+i/6)
		default:
			fmt.Fprintf(&b, k, int64(i)*25_000, i%32, 1000+i/6, i/6)
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// BenchmarkRead decodes 1,000,000 lines:
//
//	go test -run '^$' -bench BenchmarkRead -benchmem ./history
func BenchmarkRead(b *testing.B) {
	data := readBench(1_000_000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		evs, err := Read(bytes.NewReader(data))
		if err != nil || len(evs) != 1_000_000 {
			b.Fatalf("%d events, %v", len(evs), err)
		}
	}
}
