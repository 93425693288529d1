package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/internal/owned"
)

// scratch holds the folders the CLI made for etcd's data; the embedded
// clusters' data folders go inside them. They are removed on every way
// out, including a forced exit on a second signal (when cluster.Close
// never runs) and a panic.
type scratch struct {
	mu   sync.Mutex
	dirs []string
	// claims hold each folder's owner lock (owned.Claim) until it goes,
	// so that another lockbench never takes a live CLI's folder, however
	// long it stays empty, for a dead one's.
	claims []*os.File
}

// scratchPrefix begins the name of every scratch folder.
const scratchPrefix = "lockbench-cli-"

// make creates a scratch folder under parent (os.TempDir when "") and
// returns it.
func (s *scratch) make(parent string) (string, error) {
	dir, err := os.MkdirTemp(parent, scratchPrefix)
	if err != nil {
		return "", fmt.Errorf("scratch folder for etcd's data: %w", err)
	}
	claim, err := owned.Claim(dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("scratch folder for etcd's data: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dirs = append(s.dirs, dir)
	s.claims = append(s.claims, claim)
	return dir, nil
}

// removeAll removes every scratch folder; it may run more than once and
// from two goroutines.
func (s *scratch) removeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.dirs {
		os.RemoveAll(d)
	}
	for _, c := range s.claims {
		c.Close()
	}
	s.dirs, s.claims = nil, nil
}

// String lists the scratch folders, for messages.
func (s *scratch) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.dirs, ", ")
}

// repeatWindow is how long after the first signal a repeat is still the
// same signal. GNU timeout (and other supervisors) signal both the child
// and its process group, so lockbench receives one SIGTERM twice,
// microseconds apart: read as "signal again", the pair would exit at
// once and lose the run's files. A person pressing Ctrl-C twice, or a
// supervisor escalating, is slower than this.
const repeatWindow = time.Second

// onSignal cancels the work on the first SIGINT/SIGTERM, so that it stops
// cleanly (history written, cluster closed); signals within repeatWindow
// of it are the same signal, delivered again, and ignored; a later one
// removes etcd's data (removeDataNow: every open cluster's data folder
// and the scratch folders) and exits at once through exit with
// ExitInterrupted. stop ends the watch.
func (e *env) onSignal(cancel context.CancelFunc, exit func(int)) (stop func()) {
	sigs := make(chan os.Signal, 4)
	done := make(chan struct{})
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go e.guard(exit, func() { e.watchSignals(sigs, done, time.Now, cancel, exit) })
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// watchSignals is onSignal's logic, with the signals and the clock given
// so that a test can drive it. It returns when done closes or after it
// has called exit.
func (e *env) watchSignals(sigs <-chan os.Signal, done <-chan struct{}, now func() time.Time, cancel context.CancelFunc, exit func(int)) {
	var first time.Time
	select {
	case s := <-sigs:
		first = now()
		fmt.Fprintf(e.stderr, "lockbench: %s — finishing cleanly (signal again, %s or more later, to exit at once)\n", s, repeatWindow)
		cancel()
	case <-done:
		return
	}
	for {
		select {
		case s := <-sigs:
			if now().Sub(first) < repeatWindow {
				continue // the first signal delivered again (e.g. to the process and its group)
			}
			fmt.Fprintf(e.stderr, "lockbench: %s again — exiting now, removing etcd's data (%s)\n", s, e.scratch)
			e.removeDataNow()
			exit(ExitInterrupted)
			return
		case <-done:
			return
		}
	}
}

// guard runs fn, a goroutine of the CLI's own: a panic in it is printed
// with its stack, the scratch folders are removed and the process exits
// with ExitPanic, rather than Go's default status 2 ("bad input").
func (e *env) guard(exit func(int), fn func()) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(e.stderr, "lockbench: %v\n", recovered(r))
			e.scratch.removeAll()
			exit(ExitPanic)
		}
	}()
	fn()
}
