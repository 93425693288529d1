package history

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// readAtCases are inputs readAt must read exactly as Read does: events, or
// the same error on the same line.
var readAtCases = map[string]string{
	"bench":              string(readBench(3000)),
	"no final newline":   strings.TrimSuffix(string(readBench(500)), "\n"),
	"blank lines":        "\n\n" + strings.ReplaceAll(string(readBench(400)), "}\n{", "}\n  \n\r\n{") + "\n\n",
	"bad line late":      string(readBench(2000)) + `{"time":1,"process":0,"type":"ok","f":"aquire"}` + "\n" + string(readBench(50)),
	"two bad lines":      string(readBench(700)) + "{}\n" + string(readBench(900)) + "[1]\n",
	"slow path lines":    strings.ReplaceAll(string(readBench(300)), `"lock":"bench"`, `"lock":"b\u00e9nch","Extra":[1,2]`),
	"several ranges":     string(readBench(30_000)),
	"ranges, bad line":   string(readBench(25_000)) + "{}\n" + string(readBench(5000)),
	"ranges, long line":  string(readBench(12_000)) + lineOf(maxLine) + "\n" + string(readBench(12_000)),
	"ranges, near long":  string(readBench(12_000)) + lineOf(maxLine-1) + "\n" + lineOf(maxLine/2+3) + "\n" + string(readBench(12_000)),
	"ranges, no newline": strings.TrimSuffix(string(readBench(30_000)), "\n"),
	"empty":              "",
	"only blanks":        "\n \t\n\n",
	"long line":          string(readBench(300)) + `{"time":0,"process":0,"type":"ok","f":"acquire","error":"` + strings.Repeat("x", maxLine) + `"}` + "\n" + string(readBench(10)),
	"long last line":     string(readBench(30)) + strings.Repeat(" ", maxLine),
	"longest line":       string(readBench(30)) + lineOf(maxLine-1) + "\n" + lineOf(maxLine) + "\n",
	"longest last line":  string(readBench(30)) + lineOf(maxLine-1),
	"bad before long":    "{}\n" + strings.Repeat("y", maxLine+5),
	"value of every kind": `{"time":1,"process":-1,"type":"info","f":"fault","value":{"fault":"kill","for_ns":5}}
{"time":2,"process":0,"type":"ok","f":"read","value":"a\"b"}
{"time":3,"process":0,"type":"ok","f":"read","value":[1,{"x":null}]}
{"time":4,"process":0,"type":"ok","f":"read","value":null}
{"time":5,"process":0,"type":"ok","f":"read","value":-1.5e3}
`,
}

// lineOf is an event line of exactly n bytes.
func lineOf(n int) string {
	const pre, post = `{"time":0,"process":0,"type":"ok","f":"acquire","error":"`, `"}`
	return pre + strings.Repeat("x", n-len(pre)-len(post)) + post
}

// TestReadAtMatchesRead: the parallel file reader gives Read's events and
// errors, at block sizes that cut the input into many blocks (and cut a
// block beside every kind of line, through indexLines), at sizes from
// maxLine up (ranges counted side by side, indexRanges), and the one
// ReadFile uses.
func TestReadAtMatchesRead(t *testing.T) {
	for name, in := range readAtCases {
		want, wantErr := Read(strings.NewReader(in))
		for _, bs := range []int{1, 97, 4096, maxLine, maxLine + 7, blockSize} {
			got, err := readAt(strings.NewReader(in), int64(len(in)), bs)
			if !sameError(err, wantErr) {
				t.Errorf("%s, blocks of %d: err %v, want %v", name, bs, err, wantErr)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, blocks of %d: %d events, want %d (or they differ)", name, bs, len(got), len(want))
			}
		}
	}
}

// sameError: both nil, or the same message and, for a LineError, line.
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	var la, lb *LineError
	if errors.As(a, &la) != errors.As(b, &lb) || la != nil && la.Line != lb.Line {
		return false
	}
	return a.Error() == b.Error() && errors.Is(a, ErrEmpty) == errors.Is(b, ErrEmpty)
}

// TestReadFileMatchesRead reads a file through ReadFile (readAt) and the
// same bytes through Read.
func TestReadFileMatchesRead(t *testing.T) {
	data := readBench(20_000)
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Read(bytes.NewReader(data))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadFile: %d events, Read: %d (%v), or they differ", len(got), len(want), err)
	}
}

// TestReadAtChangedFile: a file whose lines moved after the first pass is
// an error, not a half-decoded history.
func TestReadAtChangedFile(t *testing.T) {
	data := readBench(100)
	r := &changingReader{data: data}
	if _, err := readAt(r, int64(len(data)), 512); !errors.Is(err, errChanged) {
		t.Fatalf("err = %v, want %v", err, errChanged)
	}
}

// changingReader serves data to the first pass (Read through a
// SectionReader's ReadAt from offset 0 upwards) and, from the first read
// that goes back, the same lines shifted by one byte.
// ReadAt may be called from several goroutines at once, as io.ReaderAt
// allows.
type changingReader struct {
	mu      sync.Mutex
	data    []byte
	last    int64
	shifted bool
}

func (c *changingReader) ReadAt(p []byte, off int64) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if off < c.last {
		c.shifted = true
	}
	c.last = off
	d := c.data
	if c.shifted {
		d = append([]byte(" "), c.data...)
	}
	if off >= int64(len(d)) {
		return 0, io.EOF
	}
	n := copy(p, d[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// TestKnownNames: the switches the fast path names types and functions
// with know exactly the contract's names.
func TestKnownNames(t *testing.T) {
	for ty := Invoke; ty <= Info; ty++ {
		if got, ok := typeNamed([]byte(ty.String())); !ok || got != ty {
			t.Errorf("typeNamed(%q) = %v, %v", ty, got, ok)
		}
	}
	for f := FAcquire; f <= FKeyOp; f++ {
		if got, ok := functionNamed([]byte(f.String())); !ok || got != f {
			t.Errorf("functionNamed(%q) = %v, %v", f, got, ok)
		}
	}
	if len(typeNames) != int(Info)+1 || len(functionNames) != int(FKeyOp)+1 {
		t.Errorf("%d type names for %d types, %d function names for %d functions",
			len(typeNames)-1, Info, len(functionNames)-1, FKeyOp)
	}
	for _, s := range []string{"", "Invoke", "aquire", "ok ", "acquires"} {
		if _, ok := typeNamed([]byte(s)); ok {
			t.Errorf("typeNamed(%q) known", s)
		}
		if _, ok := functionNamed([]byte(s)); ok {
			t.Errorf("functionNamed(%q) known", s)
		}
	}
}

// TestDecoderValuesDoNotOverlap: values cut from one arena stay apart
// when one of them is appended to.
func TestDecoderValuesDoNotOverlap(t *testing.T) {
	var d decoder
	a := d.value([]byte("12"))
	b := d.value([]byte("34"))
	a = append(a, '9')
	if string(b) != "34" || string(a) != "129" {
		t.Fatalf("a = %s, b = %s", a, b)
	}
}

// BenchmarkReadAt decodes BenchmarkRead's 1,000,000 lines as ReadFile
// does, on every core:
//
//	go test -run '^$' -bench 'BenchmarkReadAt$' -benchmem ./history
func BenchmarkReadAt(b *testing.B) {
	data := readBench(1_000_000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		evs, err := readAt(bytes.NewReader(data), int64(len(data)), blockSize)
		if err != nil || len(evs) != 1_000_000 {
			b.Fatalf("%d events, %v", len(evs), err)
		}
	}
}

// TestIndexRanges: the side-by-side count takes a history of ordinary
// lines, in as many blocks as ranges, and leaves to indexLines any that
// may hold a line too long.
func TestIndexRanges(t *testing.T) {
	for name, wantOK := range map[string]bool{"several ranges": true, "ranges, bad line": true,
		"ranges, long line": false, "ranges, near long": false, "long last line": false} {
		in := readAtCases[name]
		ix, ok := indexRanges(strings.NewReader(in), int64(len(in)), maxLine)
		if ok != wantOK {
			t.Errorf("%s: ok = %v, want %v", name, ok, wantOK)
			continue
		}
		if !ok {
			continue
		}
		seq, err := indexLines(strings.NewReader(in), int64(len(in)), maxLine)
		if err != nil || ix.lines != seq.lines || len(ix.blocks) != (len(in)+maxLine-1)/maxLine {
			t.Errorf("%s: %d lines in %d blocks; indexLines: %d lines (%v)", name, ix.lines, len(ix.blocks), seq.lines, err)
		}
	}
}

// FuzzReadAtEquivalence: for any input, readAt (both first passes) gives
// what Read gives, events or error. Its coverage varies with how the
// decoders are scheduled, so the fuzzer stops now and then to minimize an
// input that looked new:
//
//	go test -run '^$' -fuzz FuzzReadAtEquivalence -fuzztime 60s -parallel 1 ./history
func FuzzReadAtEquivalence(f *testing.F) {
	f.Add(readBench(6))
	f.Add([]byte("\n{}\n" + readAtCases["value of every kind"]))
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := Read(bytes.NewReader(data))
		for _, bs := range []int{3, maxLine} {
			got, err := readAt(bytes.NewReader(data), int64(len(data)), bs)
			if !sameError(err, wantErr) || !reflect.DeepEqual(got, want) {
				t.Fatalf("blocks of %d: %d events, %v; Read: %d events, %v", bs, len(got), err, len(want), wantErr)
			}
		}
	})
}
