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
	"time"

	"github.com/lockbench/lockbench/internal/owned"
)

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
	// Server is its JVM while it runs.
	owned.Server
}

// id is the member's ZooKeeper server id (myid): its index + 1.
func (m *member) id() int { return m.index + 1 }

func (m *member) String() string {
	return fmt.Sprintf("zookeeper member %d (myid %d)", m.index, m.id())
}

func (m *member) logPath() string { return filepath.Join(m.dir, LogFile) }

// start starts the member's JVM, its output appended to its log after a
// line that marks the start.
func (m *member) start() error {
	if m.Running() {
		return fmt.Errorf("start %s: already running", m)
	}
	mark := fmt.Sprintf("%sstarting %s at %s: %s %s\n", logStartMark, m, time.Now().Format(time.RFC3339Nano), m.java, strings.Join(m.args, " "))
	if err := appendFile(m.logPath(), mark); err != nil {
		return fmt.Errorf("%s: %w", m, err)
	}
	cmd := exec.Command(m.java, m.args...)
	cmd.Dir = m.dir
	return m.Server.Start(cmd, m.logPath())
}

// appendFile appends text to the file at path, created if missing.
func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	return errors.Join(err, f.Close())
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
