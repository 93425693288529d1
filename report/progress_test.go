package report

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newFake() *fakeClock                { return &fakeClock{t: time.Unix(1e9, 0)} }
func progressWith(w *bytes.Buffer, term, quiet bool, c *fakeClock) *Progress {
	p := NewProgress(w, term, quiet)
	p.now = c.now
	return p
}

func TestProgressTerminal(t *testing.T) {
	var b bytes.Buffer
	c := newFake()
	p := progressWith(&b, true, false, c)
	p.Update("1/3 long status")
	c.add(10 * time.Millisecond)
	p.Update("2/3 held back") // within TerminalRefresh
	c.add(TerminalRefresh)
	p.Update("3/3")
	p.Done()
	p.Update("after done")
	want := "\r1/3 long status\x1b[K\r3/3\x1b[K\n"
	if b.String() != want {
		t.Errorf("terminal output %q, want %q", b.String(), want)
	}
}

func TestProgressLog(t *testing.T) {
	var b bytes.Buffer
	c := newFake()
	p := progressWith(&b, false, false, c)
	for i := range 12 { // one update a second for 12s
		p.Update("t=" + string(rune('a'+i)))
		c.add(time.Second)
	}
	p.Done()
	p.Done()
	// a at 0s, f at 5s, k at 10s; l (the last) held back, written by Done.
	want := "t=a\nt=f\nt=k\nt=l\n"
	if b.String() != want {
		t.Errorf("log output %q, want %q", b.String(), want)
	}
	if strings.Contains(b.String(), "\r") {
		t.Error("carriage return in a log")
	}
}

func TestProgressQuietAndNil(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, true, true)
	p.Update("x")
	p.Done()
	var np *Progress
	np.Update("x")
	np.Done()
	if b.Len() != 0 {
		t.Errorf("quiet progress wrote %q", b.String())
	}
}

func TestProgressConcurrent(t *testing.T) {
	var b bytes.Buffer
	var mu sync.Mutex
	p := NewProgress(lockedWriter{&b, &mu}, false, false)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				p.Update(strings.Repeat("x", i))
			}
		}()
	}
	wg.Wait()
	p.Done()
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestIsTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) || IsTerminal(nil) {
		t.Error("a file is a terminal")
	}
}
