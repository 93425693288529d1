package report

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
)

// Progress intervals: a terminal line is redrawn at most every
// TerminalRefresh; a log (not a terminal) gets a line at most every
// LogInterval.
const (
	TerminalRefresh = 100 * time.Millisecond
	LogInterval     = 5 * time.Second
)

// Progress reports the status of a long run. On a terminal it keeps one
// line up to date with \r; elsewhere (a CI log, a file) it writes a plain
// line at most every LogInterval; when quiet it writes nothing. It is safe
// for concurrent use.
type Progress struct {
	w        io.Writer
	terminal bool
	quiet    bool
	now      func() time.Time

	mu       sync.Mutex
	last     time.Time // when a line was last written
	status   string    // the latest status
	shown    bool      // status has been written
	drawn    bool      // a terminal line is on screen
	finished bool
}

// NewProgress reports to w; isTerminal chooses the updating line (see
// IsTerminal); quiet silences it.
func NewProgress(w io.Writer, isTerminal bool, quiet bool) *Progress {
	return &Progress{w: w, terminal: isTerminal, quiet: quiet, now: time.Now}
}

// IsTerminal reports whether f is a terminal (a Cygwin/MSYS one included).
func IsTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	fd := f.Fd()
	return isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd)
}

// Update sets the current status, e.g. "queue × contention: 12s/30s, 4,210
// acquisitions". Whether it is written now depends on the rate limits.
func (p *Progress) Update(status string) {
	if p == nil || p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.status, p.shown = status, false
	t := p.now()
	every := LogInterval
	if p.terminal {
		every = TerminalRefresh
	}
	if !p.last.IsZero() && t.Sub(p.last) < every {
		return
	}
	p.write(t)
}

// Done ends the report: the latest status is written if it was held back,
// and a terminal line is ended with a newline. Later Updates are ignored.
func (p *Progress) Done() {
	if p == nil || p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.finished = true
	if !p.shown && p.status != "" {
		p.write(p.now())
	}
	if p.terminal && p.drawn {
		fmt.Fprint(p.w, "\n")
	}
}

// write shows the status; p.mu is held.
func (p *Progress) write(t time.Time) {
	p.last, p.shown = t, true
	if p.terminal {
		// \r to the line's start, the status, then erase what a longer
		// previous status left.
		fmt.Fprintf(p.w, "\r%s\x1b[K", p.status)
		p.drawn = true
		return
	}
	fmt.Fprintln(p.w, p.status)
}
