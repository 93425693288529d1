package rediscluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/internal/owned"
)

// errNotRunning is returned when a process that is not running is asked
// to stop.
var errNotRunning = errors.New("not running")

// reapWait bounds the wait for a killed process's exit.
const reapWait = 5 * time.Second

// process is one redis-server or redis-sentinel of the deployment, in
// its own process group, owned (package owned) while it runs.
type process struct {
	name, bin, dir string
	port           int
	args           []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   <-chan struct{}
	paused bool
}

// start starts the process; its output goes to its folder's stdout.log.
func (p *process) start() error {
	if p.running() {
		// Its cmd would be replaced, and Close would not kill it.
		panic(fmt.Sprintf("start %s: already running", p.name))
	}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	out, err := os.OpenFile(p.dir+"/stdout.log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = out, out
	done, err := owned.Start(cmd, out)
	if err != nil {
		out.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.mu.Lock()
	p.cmd, p.done, p.paused = cmd, done, false
	p.mu.Unlock()
	return nil
}

// running reports whether the process has been started and not reaped.
func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL to the process's group (and SIGCONT, should it be
// paused) and waits until it is reaped.
func (p *process) kill() error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd, p.paused = nil, false
	p.mu.Unlock()
	if cmd == nil {
		return errNotRunning
	}
	if err := owned.Kill(cmd, done, reapWait); err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	return nil
}

// signal freezes (SIGSTOP) or wakes (SIGCONT) the process's group.
func (p *process) signal(stop bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("%s: %w", p.name, errNotRunning)
	}
	if p.paused == stop {
		return nil
	}
	sig := syscall.SIGCONT
	if stop {
		sig = syscall.SIGSTOP
	}
	if err := owned.SignalGroup(p.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	p.paused = stop
	return nil
}
