package owned

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// ErrNotRunning is a Server's error when it is asked to stop, pause or
// resume while it does not run.
var ErrNotRunning = errors.New("not running")

// reapWait bounds the wait for a killed server's exit.
const reapWait = 5 * time.Second

// Server is one server process of a deployment lockbench starts (a
// ZooKeeper member, a redis-server): started as an owned child (Start),
// its output appended to a log, frozen and woken as a group, killed and
// reaped. It may be started again once killed. Safe for concurrent use.
type Server struct {
	// Name names it in errors ("zookeeper member 0 (myid 1)").
	Name string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   <-chan struct{}
	paused bool
}

// Start starts cmd (not yet started) as the server, its standard output
// and error appended to the file log.
func (s *Server) Start(cmd *exec.Cmd, log string) error {
	if s.Running() {
		return fmt.Errorf("start %s: already running", s.Name)
	}
	out, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	done, err := Start(cmd, out)
	if err != nil {
		out.Close()
		return fmt.Errorf("start %s: %w", s.Name, err)
	}
	s.mu.Lock()
	s.cmd, s.done, s.paused = cmd, done, false
	s.mu.Unlock()
	return nil
}

// Running reports whether the server has been started and not reaped (a
// paused one runs).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil && !closed(s.done)
}

// Paused reports whether the server runs and is stopped by Signal.
func (s *Server) Paused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil && s.paused
}

// Pid is the server's process id, 0 when it was not started.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Exited says how the server ended, if it did since its start (not by
// Kill): "exit status 1", or "" while it runs.
func (s *Server) Exited() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || !closed(s.done) {
		return ""
	}
	return s.cmd.ProcessState.String()
}

// Kill sends SIGKILL to the server's group (and SIGCONT, should it be
// paused) and waits until it is reaped; ErrNotRunning when it was not
// started or already killed.
func (s *Server) Kill() error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd, s.paused = nil, false
	s.mu.Unlock()
	if cmd == nil {
		return ErrNotRunning
	}
	if err := Kill(cmd, done, reapWait); err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	return nil
}

// Signal freezes (stop: SIGSTOP) or wakes (SIGCONT) the server's group.
func (s *Server) Signal(stop bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return fmt.Errorf("%s: %w", s.Name, ErrNotRunning)
	}
	if s.paused == stop {
		return nil
	}
	sig := syscall.SIGCONT
	if stop {
		sig = syscall.SIGSTOP
	}
	if err := SignalGroup(s.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	s.paused = stop
	return nil
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
