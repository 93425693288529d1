// Package wholefile reads the files lockbench reads whole (scenarios,
// summary.json, suite.json, config.json, bench.json, history.jsonl) only
// when they are regular files within a size limit per kind, and says
// otherwise up front.
//
// Why: a path the user gives may be a named pipe with no writer (opening
// it blocks, and a signal cannot unblock the read), or /dev/zero (read
// without end until memory runs out). Stat before open, open without
// blocking, and read at most the limit: such a path is refused at once
// with a message naming it, what it is and the limit. A leaf (standard
// library only) so that scenarios, history, rundir and report can all
// use it.
package wholefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// The limits, per kind of file, far above what lockbench writes so that
// no real file is refused, and low enough that a wrong path cannot take
// the machine's memory.
const (
	// ScenarioLimit bounds a scenario file (the built-ins are < 2 KiB).
	ScenarioLimit = 1 << 20 // 1 MiB
	// JSONLimit bounds summary.json, suite.json, config.json and
	// bench.json (a summary keeps at most 64 samples per latency; a suite
	// of thousands of cells is a few MiB).
	JSONLimit = 256 << 20 // 256 MiB
	// HistoryLimit bounds history.jsonl: a run records at most
	// history.DefaultMaxEvents (10 million) events of ~100-200 bytes.
	HistoryLimit = 4 << 30 // 4 GiB
)

// Error is a file refused before it was read: not a regular file, or
// over its kind's limit. The CLI takes it as bad input (exit 2).
type Error struct {
	Kind  string // "scenario", "summary.json", ...
	Path  string
	What  string // what the file is instead, e.g. "a named pipe (FIFO)"
	Limit int64
}

// Error names the path, what it is and what is valid.
func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: %s; a %s must be a regular file of at most %s", e.Kind, e.Path, e.What, e.Kind, Size(e.Limit))
}

// missing is Check's error for a path with nothing there: it names the
// file by its kind, without the system call that found it missing, and
// unwraps to the *fs.PathError.
type missing struct {
	kind, path string
	err        error
}

func (e *missing) Error() string { return fmt.Sprintf("%s %s: no such file", e.kind, e.path) }
func (e *missing) Unwrap() error { return e.err }

// Check refuses path unless it is a regular file (symbolic links
// followed) of at most limit bytes; kind names it in the message. For
// readers that stream the file themselves. A path that cannot be stat'd
// returns the *fs.PathError (wrapped, for a missing one, in a message
// that names the file by its kind).
func Check(path, kind string, limit int64) error {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &missing{kind: kind, path: path, err: err}
	}
	if err != nil {
		return err
	}
	return check(st, path, kind, limit)
}

func check(st fs.FileInfo, path, kind string, limit int64) error {
	if what := notRegular(st.Mode()); what != "" {
		return &Error{Kind: kind, Path: path, What: what + ", not a regular file", Limit: limit}
	}
	if st.Size() > limit {
		return &Error{Kind: kind, Path: path, What: fmt.Sprintf("%d bytes, over the limit", st.Size()), Limit: limit}
	}
	return nil
}

// Open is Check, then opens path without blocking (O_NONBLOCK: were it
// swapped for a FIFO after the check, the open does not wait for a
// writer) and checks the opened file again. The caller reads at most
// limit bytes (Read does) and closes it.
func Open(path, kind string, limit int64) (*os.File, error) {
	if err := Check(path, kind, limit); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil {
		err = check(st, path, kind, limit)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Read reads path whole, as os.ReadFile does, once Open has accepted it;
// a file that grows past limit while read is refused too.
func Read(path, kind string, limit int64) ([]byte, error) {
	f, err := Open(path, kind, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, &Error{Kind: kind, Path: path, What: "over the limit (it grew while read)", Limit: limit}
	}
	return b, nil
}

// IsRefused reports whether err is a file refused by Check, Open or Read.
func IsRefused(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// notRegular says what a non-regular file is, or "" for a regular one.
func notRegular(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return ""
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file (mode " + m.String() + ")"
}

// Size prints n bytes for a message: "1 MiB", "2.5 MiB", "300 B".
func Size(n int64) string {
	const k = 1024
	switch {
	case n >= k*k*k:
		return trim(float64(n)/(k*k*k)) + " GiB"
	case n >= k*k:
		return trim(float64(n)/(k*k)) + " MiB"
	case n >= k:
		return trim(float64(n)/k) + " KiB"
	}
	return fmt.Sprintf("%d B", n)
}

func trim(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%.1f", f)
}
