package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
)

// scratch holds the folders the CLI made for etcd's data; the embedded
// clusters' data folders go inside them. They are removed on every way
// out, including a forced exit on a second signal (when cluster.Close
// never runs) and a panic.
type scratch struct {
	mu   sync.Mutex
	dirs []string
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
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dirs = append(s.dirs, dir)
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
	s.dirs = nil
}

// String lists the scratch folders, for messages.
func (s *scratch) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.dirs, ", ")
}

// onSignal cancels the work on the first SIGINT/SIGTERM, so that it stops
// cleanly (history written, cluster closed); on a second one it removes
// etcd's data (removeDataNow: every open cluster's data folder and the
// scratch folders) and exits at once through exit with ExitInterrupted.
// stop ends the watch.
func (e *env) onSignal(cancel context.CancelFunc, exit func(int)) (stop func()) {
	sigs := make(chan os.Signal, 2)
	done := make(chan struct{})
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go e.guard(exit, func() {
		select {
		case s := <-sigs:
			fmt.Fprintf(e.stderr, "lockbench: %s — finishing cleanly (signal again to exit at once)\n", s)
			cancel()
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			fmt.Fprintf(e.stderr, "lockbench: %s again — exiting now, removing etcd's data (%s)\n", s, e.scratch)
			e.removeDataNow()
			exit(ExitInterrupted)
		case <-done:
		}
	})
	return func() {
		signal.Stop(sigs)
		close(done)
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
