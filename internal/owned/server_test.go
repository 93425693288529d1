package owned

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServer: a Server runs, is frozen and woken as a group, cannot be
// started twice, is killed and reaped, says how it exited when it ended
// by itself, and appends its output to its log across starts.
func TestServer(t *testing.T) {
	log := filepath.Join(t.TempDir(), "out.log")
	s := &Server{Name: "sleeper"}
	if err := s.Start(exec.Command("sh", "-c", "echo one; exec sleep 60"), log); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(log); len(b) > 0 {
			break
		}
	}
	if !s.Running() || s.Pid() == 0 {
		t.Fatalf("running %v, pid %d", s.Running(), s.Pid())
	}
	if err := s.Start(exec.Command("true"), log); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("a second start: %v", err)
	}
	if err := s.Signal(true); err != nil || !s.Paused() || !s.Running() {
		t.Errorf("stop: %v, paused %v, running %v", err, s.Paused(), s.Running())
	}
	if err := s.Signal(false); err != nil || s.Paused() {
		t.Errorf("cont: %v, paused %v", err, s.Paused())
	}
	if err := s.Kill(); err != nil || s.Running() {
		t.Errorf("kill: %v, running %v", err, s.Running())
	}
	if err := s.Kill(); !errors.Is(err, ErrNotRunning) {
		t.Errorf("a second kill: %v, want ErrNotRunning", err)
	}
	if err := s.Signal(true); !errors.Is(err, ErrNotRunning) {
		t.Errorf("stop after kill: %v, want ErrNotRunning", err)
	}
	if err := s.Start(exec.Command("sh", "-c", "echo two; exit 3"), log); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); s.Running() && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
	}
	if got := s.Exited(); got != "exit status 3" {
		t.Errorf("exited %q, want exit status 3", got)
	}
	if b, _ := os.ReadFile(log); string(b) != "one\ntwo\n" {
		t.Errorf("log %q, want both starts' output", b)
	}
}
