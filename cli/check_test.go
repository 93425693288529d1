package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// writeHistory writes lines as a history file in a test folder.
func writeHistory(t *testing.T, name string, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// stall20s is a history from another tool: process 1 waits 20 s on a free
// lock (1s → 21s), which lockbench's default fault-free bound (1s) calls
// a stall.
var stall20s = []string{
	`{"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}`,
	`{"time":1000000,"process":0,"type":"ok","f":"acquire","lock":"l","token":5}`,
	`{"time":500000000,"process":1,"type":"invoke","f":"acquire","lock":"l"}`,
	`{"time":1000000000,"process":0,"type":"invoke","f":"release","lock":"l"}`,
	`{"time":1001000000,"process":0,"type":"ok","f":"release","lock":"l"}`,
	`{"time":21000000000,"process":1,"type":"ok","f":"acquire","lock":"l","token":6}`,
	`{"time":21001000000,"process":1,"type":"invoke","f":"release","lock":"l"}`,
	`{"time":21002000000,"process":1,"type":"ok","f":"release","lock":"l"}`,
}

// untokened is a counter workload whose accepted write carries no token:
// fencing cannot decide (unknown), and nothing fails.
var untokened = []string{
	`{"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}`,
	`{"time":1,"process":0,"type":"ok","f":"acquire","lock":"l","token":5}`,
	`{"time":2,"process":0,"type":"invoke","f":"read","lock":"l"}`,
	`{"time":3,"process":0,"type":"ok","f":"read","lock":"l","value":0}`,
	`{"time":4,"process":0,"type":"invoke","f":"write","lock":"l","value":1}`,
	`{"time":5,"process":0,"type":"ok","f":"write","lock":"l"}`,
	`{"time":6,"process":0,"type":"invoke","f":"release","lock":"l"}`,
	`{"time":7,"process":0,"type":"ok","f":"release","lock":"l"}`,
	`{"time":8,"process":-1,"type":"ok","f":"read","value":1}`,
}

// toldLate is a holder cut off from 100ms to 3s whose key goes with its
// lease at 1.1s and that is told at 3s: a belief overrun of 1.9s.
var toldLate = []string{
	`{"time":0,"process":0,"type":"invoke","f":"acquire","lock":"l"}`,
	`{"time":1000000,"process":0,"type":"ok","f":"acquire","lock":"l","token":10}`,
	`{"time":100000000,"process":-1,"type":"invoke","f":"fault","value":{"fault":"isolate-client","target":"holder","resolved":"client:0"}}`,
	`{"time":1100000000,"process":-1,"type":"ok","f":"key-deleted","lock":"l","token":10,"value":{"revision":11,"cause":"lease"}}`,
	`{"time":2900000000,"process":-1,"type":"ok","f":"fault","value":{"fault":"isolate-client","target":"holder","resolved":"client:0"}}`,
	`{"time":3000000000,"process":0,"type":"ok","f":"lease-lost","lock":"l"}`,
}

// TestCheckOutcomes: check's exit status and output for histories and
// flags, one literal history per case.
func TestCheckOutcomes(t *testing.T) {
	stall := writeHistory(t, "stall.jsonl", stall20s...)
	unknown := writeHistory(t, "unknown.jsonl", untokened...)
	late := writeHistory(t, "late.jsonl", toldLate...)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string // substrings of stdout + stderr
	}{
		{"a 20s stall fails the default bound", []string{"check", stall}, ExitViolation,
			[]string{"liveness   fail", "the bound is 1s"}},
		{"the history's own bound", []string{"check", stall, "--liveness-bound", "25s"}, ExitPass,
			[]string{"verdict pass"}},
		{"a bound shorter than the stall", []string{"check", "--liveness-bound=19s", stall}, ExitViolation,
			[]string{"liveness   fail", "the bound is 19s"}},
		{"zero bound", []string{"check", stall, "--liveness-bound", "0"}, ExitUsage,
			[]string{"--liveness-bound 0s", "must be > 0"}},
		{"negative bound", []string{"check", stall, "--liveness-bound", "-1s"}, ExitUsage,
			[]string{"--liveness-bound -1s", "must be > 0"}},
		{"bound not a duration", []string{"check", stall, "--liveness-bound", "ten"}, ExitUsage,
			[]string{`invalid value "ten"`, "liveness-bound"}},
		{"a FIFO promise", []string{"check", stall, "--order", "fifo", "--liveness-bound", "25s"}, ExitPass,
			[]string{"verdict pass"}},
		{"an order that does not exist", []string{"check", stall, "--order", "lifo"}, ExitUsage,
			[]string{`--order: unknown order "lifo" (valid: fifo, none)`}},
		{"told 1.9s late: within the default overrun bound", []string{"check", late}, ExitPass,
			[]string{"verdict pass"}},
		{"told 1.9s late: past auto's at a 1s TTL", []string{"check", late, "--overrun-bound", "1.5s"}, ExitViolation,
			[]string{"lease      fail", "a belief overrun of 1.9s", "past the 1.5s its keepalive policy allows"}},
		{"zero overrun bound", []string{"check", late, "--overrun-bound", "0s"}, ExitUsage,
			[]string{"--overrun-bound 0s", "must be > 0"}},
		{"unknown verdict has its own status", []string{"check", unknown}, ExitUnknown,
			[]string{"verdict unknown", "fencing", "no accepted write carries a token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, stdout, stderr)
			}
			// Read the table's rows as words: "│ liveness │ fail │" is
			// "liveness fail".
			words := strings.Join(strings.Fields(strings.ReplaceAll(stdout+stderr, "│", " ")), " ")
			for _, w := range tc.want {
				if !strings.Contains(words, strings.Join(strings.Fields(w), " ")) {
					t.Errorf("output does not mention %q:\n%s%s", w, stdout, stderr)
				}
			}
		})
	}
}

// TestCheckJSONNamesItsHistory: --json adds the file and its event count
// to the report's keys.
func TestCheckJSONNamesItsHistory(t *testing.T) {
	p := writeHistory(t, "h.jsonl", stall20s...)
	code, stdout, _ := runCLI(t, "check", "--json", p)
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("exit %d, not JSON: %v\n%s", code, err, stdout)
	}
	for _, k := range []string{"file", "events", "verdict", "checks"} {
		if _, ok := got[k]; !ok {
			t.Errorf("no %q key in %s", k, stdout)
		}
	}
	if string(got["file"]) != `"`+p+`"` || string(got["events"]) != "8" || string(got["verdict"]) != `"fail"` {
		t.Errorf("file %s, events %s, verdict %s; want %q, 8, fail", got["file"], got["events"], got["verdict"], p)
	}
}

// TestCheckReadsStandardInput: "check -" reads the history from standard
// input, not from a file named "-".
func TestCheckReadsStandardInput(t *testing.T) {
	withStdin := func(t *testing.T, lines ...string) {
		t.Helper()
		f, err := os.Open(writeHistory(t, "in.jsonl", lines...))
		if err != nil {
			t.Fatal(err)
		}
		old := os.Stdin
		os.Stdin = f
		t.Cleanup(func() { os.Stdin = old; f.Close() })
	}
	t.Chdir(t.TempDir()) // no file named "-" here
	withStdin(t, stall20s...)
	code, stdout, stderr := runCLI(t, "check", "-", "--liveness-bound", "25s")
	if code != ExitPass || !strings.Contains(stdout, "standard input: 8 events, verdict pass") {
		t.Errorf("exit %d\n%s%s", code, stdout, stderr)
	}
	withStdin(t, stall20s...)
	code, stdout, _ = runCLI(t, "check", "--json", "-")
	if code != ExitViolation || !strings.Contains(stdout, `"file": "-"`) || !strings.Contains(stdout, `"events": 8`) {
		t.Errorf("--json: exit %d\n%s", code, stdout)
	}
	withStdin(t, `{"time":0,"process":0,"type":"ok","f":"aquire"}`)
	code, _, stderr = runCLI(t, "check", "-")
	if code != ExitUsage || !strings.Contains(stderr, "standard input: line 1") || !strings.Contains(stderr, `"aquire"`) {
		t.Errorf("bad standard input: exit %d, stderr %q", code, stderr)
	}
}

// TestCheckBigFileBadLine: a history of several of the reader's blocks
// (decoded side by side) with one bad line deep inside is refused with
// that line's number and exit 2, as the same bytes on standard input are
// (read line by line), and nothing is printed on standard output.
func TestCheckBigFileBadLine(t *testing.T) {
	lines := make([]string, 0, 120_002)
	for i := range 60_000 {
		lines = append(lines,
			fmt.Sprintf(`{"time":%d,"process":0,"type":"invoke","f":"acquire","lock":"l"}`, 2*i),
			fmt.Sprintf(`{"time":%d,"process":0,"type":"ok","f":"acquire","lock":"l","token":%d,"key":"l/%d","lease":"7f"}`, 2*i+1, i+1, i))
	}
	lines[100_001] = `{"time":200001,"process":0,"type":"ok","f":"aquire","lock":"l"}`
	p := writeHistory(t, "big.jsonl", lines...)
	if st, err := os.Stat(p); err != nil || st.Size() < 2*4<<20 {
		t.Fatalf("%v: %d bytes, want more than two blocks", err, st.Size())
	}
	code, stdout, stderr := runCLI(t, "check", p)
	if code != ExitUsage || stdout != "" || !strings.Contains(stderr, p+": line 100002: ") || !strings.Contains(stderr, `f "aquire" is not one of`) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old }()
	_, _, stdin := runCLI(t, "check", "-")
	if want := strings.Replace(stderr, p, "standard input", 1); stdin != want {
		t.Errorf("standard input: %q, want %q", stdin, want)
	}
}

// TestHoldCollectorPutsItBack: however holds overlap, the collector's
// setting is what it was once the last is let go.
func TestHoldCollectorPutsItBack(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT set: holdCollector leaves the collector alone")
	}
	p := writeHistory(t, "h.jsonl", stall20s...)
	percent := debug.SetGCPercent(77)
	defer debug.SetGCPercent(percent)
	a := holdCollector(p)
	b := holdCollector(p)
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("held: GC percent %d, want -1 (off)", got)
	}
	a()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("one hold left: GC percent %d, want -1 (off)", got)
	}
	b()
	if got := debug.SetGCPercent(77); got != 77 {
		t.Errorf("released: GC percent %d, want 77", got)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("released: memory limit %d, want none", got)
	}
}

// Standard input is held to a history file's limit.
func TestCappedStdin(t *testing.T) {
	c := &capped{ctx: context.Background(), r: strings.NewReader("0123456789"), left: 4}
	b, err := io.ReadAll(c)
	if string(b) != "0123" || err == nil || !strings.Contains(err.Error(), "a history is at most") {
		t.Errorf("read %q, %v: want 4 bytes, then the limit's error", b, err)
	}
}

// check - on a pipe that never ends stops at the first signal (it read on
// until the pipe closed), with the interrupted exit.
func TestCheckStdinStopsOnSignal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := io.WriteString(w, `{"time":1,"process":0,"type":"invoke","f":"acquire"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- checkCommand(ctx, &env{stdin: r, stdout: &stdout, stderr: &stderr}, []string{"-"}) }()
	time.Sleep(100 * time.Millisecond) // reading, the pipe open
	cancel()
	select {
	case err := <-done:
		if exitCode(err) != ExitInterrupted {
			t.Errorf("check - after the signal: %v (exit %d), want exit %d", err, exitCode(err), ExitInterrupted)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("check - read on after the signal")
	}
}
