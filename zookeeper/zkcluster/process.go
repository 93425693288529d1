package zkcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/internal/owned"
)

// errNotRunning is returned when a member that is not running is asked
// to stop, pause or resume.
var errNotRunning = errors.New("not running")

// reapWait bounds the wait for a killed member's exit.
const reapWait = 5 * time.Second

// LogFile is the name of a member's log in its folder: the JVM's
// standard output and error, where ZooKeeper logs (slf4j-simple writes
// to standard error). Each start of the member appends to it after a
// line beginning with logStartMark.
const LogFile = "zookeeper.log"

// logStartMark begins the line written before each start of a member,
// so that its log's tail is read from its last start only.
const logStartMark = "=== lockbench: "

// logTailLines is how many of a member's last log lines an error quotes.
const logTailLines = 20

// member is one ZooKeeper server of the ensemble: a JVM running
// QuorumPeerMain in its own process group, owned (package owned) while
// it runs.
type member struct {
	index                                int
	dir                                  string // the member's folder: zoo.cfg, data/, its log
	clientPort, quorumPort, electionPort int
	java                                 string
	args                                 []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   <-chan struct{}
	paused bool
}

// id is the member's ZooKeeper server id (myid): its index + 1.
func (m *member) id() int { return m.index + 1 }

func (m *member) String() string {
	return fmt.Sprintf("zookeeper member %d (myid %d)", m.index, m.id())
}

func (m *member) logPath() string { return filepath.Join(m.dir, LogFile) }

// start starts the member's JVM, its output appended to its log.
func (m *member) start() error {
	if m.running() {
		return fmt.Errorf("start %s: already running", m)
	}
	out, err := os.OpenFile(m.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("%s: %w", m, err)
	}
	fmt.Fprintf(out, "%sstarting %s at %s: %s %s\n", logStartMark, m, time.Now().Format(time.RFC3339Nano), m.java, strings.Join(m.args, " "))
	cmd := exec.Command(m.java, m.args...)
	cmd.Dir = m.dir
	cmd.Stdout, cmd.Stderr = out, out
	done, err := owned.Start(cmd, out)
	if err != nil {
		out.Close()
		return fmt.Errorf("start %s: %w", m, err)
	}
	m.mu.Lock()
	m.cmd, m.done, m.paused = cmd, done, false
	m.mu.Unlock()
	return nil
}

// running reports whether the member's JVM has been started and not
// reaped (a paused one runs).
func (m *member) running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// isPaused reports whether the member is running and stopped by Pause.
func (m *member) isPaused() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cmd != nil && m.paused
}

// pid is the JVM's process id, 0 when it is not running.
func (m *member) pid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// exited says how the member's JVM ended, if it did since its start
// (not by kill): "exit status 1", or "" while it runs.
func (m *member) exited() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return ""
	}
	select {
	case <-m.done:
		return m.cmd.ProcessState.String()
	default:
		return ""
	}
}

// kill sends SIGKILL to the member's group (and SIGCONT, should it be
// paused) and waits until it is reaped.
func (m *member) kill() error {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.cmd, m.paused = nil, false
	m.mu.Unlock()
	if cmd == nil {
		return errNotRunning
	}
	if err := owned.Kill(cmd, done, reapWait); err != nil {
		return fmt.Errorf("%s: %w", m, err)
	}
	return nil
}

// signal freezes (SIGSTOP) or wakes (SIGCONT) the member's group.
func (m *member) signal(stop bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return fmt.Errorf("%s: %w", m, errNotRunning)
	}
	if m.paused == stop {
		return nil
	}
	sig := syscall.SIGCONT
	if stop {
		sig = syscall.SIGSTOP
	}
	if err := owned.SignalGroup(m.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("%s: %w", m, err)
	}
	m.paused = stop
	return nil
}

// logTail is the member's last log lines since its last start, for an
// error message: "last lines of PATH:\n  …", or "" when there are none.
func (m *member) logTail() string {
	lines := tailLines(m.logPath(), logTailLines)
	if len(lines) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "last lines of %s:", m.logPath())
	for _, l := range lines {
		if len(l) > 400 {
			l = l[:400] + "…"
		}
		b.WriteString("\n    " + l)
	}
	return b.String()
}

// tailLines returns up to n last lines of the file at path after its
// last line beginning with logStartMark, reading at most its last 64 KB.
func tailLines(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	const most = 64 << 10
	if info, err := f.Stat(); err == nil && info.Size() > most {
		f.Seek(info.Size()-most, io.SeekStart)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil
	}
	nb := append([]byte("\n"), b...) // the first line may be a mark
	if i := bytes.LastIndex(nb, []byte("\n"+logStartMark)); i >= 0 {
		rest := nb[i+1:]
		if j := bytes.IndexByte(rest, '\n'); j >= 0 {
			b = rest[j+1:] // after the mark's own line
		} else {
			b = nil
		}
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}
