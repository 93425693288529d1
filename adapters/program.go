// Package adapters runs lock clients written in other languages as
// processes: a Program makes Lockers (Factory for etcd, ZooKeeperFactory
// for ZooKeeper) that each start one process and drive it over JSON lines
// on its stdin and stdout (docs/adapters.md is the protocol). The
// programs that ship with lockbench are embedded here and registered as
// strategies on import.
//
// A process adapter keeps its own lease (Strategy.OwnLease): lockbench
// sees only what it answers, and judges that through the history like any
// strategy.
package adapters

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/zookeeper/zklocks"
)

// Program is how to start one adapter process.
type Program struct {
	// Name names the adapter in every error (e.g. "python-etcd3").
	Name string
	// Command is the program and its arguments, run with the environment
	// of docs/adapters.md added to lockbench's own.
	Command []string
	// Check, when set, is called once per Program before the first
	// process starts; its error (which should name what to install) fails
	// the Factory, so a missing runtime is reported at once instead of as
	// a process that dies on its first request.
	Check func(ctx context.Context) error
	// CloseWait bounds how long Close waits for the process to answer
	// close and exit before it kills it (default 2 s).
	CloseWait time.Duration
	// Ready says that the adapter prints {"event":"ready"} once it has
	// loaded its library and is about to read requests: a process then
	// counts as started only when it says so (within StartWait), so that
	// an interpreter's start-up is not measured as the first Lock's wait
	// (eight Node processes take seconds to start on two cores).
	Ready bool
	// StartWait bounds the wait for ready (default 30 s).
	StartWait time.Duration
	// Cancel says that the adapter takes {"op":"cancel"} while a lock is
	// in flight, and answers that lock as its library answers a cancelled
	// wait: a Lock whose context ends then cancels it instead of killing
	// the process, so the library's own clean-up runs (etcdctl deletes
	// its waiting key on Ctrl-C; a killed one leaves it to its TTL) and
	// the next Lock needs no new process.
	Cancel bool
	// Source, when set, is a file the process reads on descriptor 3
	// (/dev/fd/3): the source of a program run from source, as Java's
	// single-file launcher must read it from a file. It is written to a
	// temporary file that is unlinked before the process starts, so no
	// path of the process's (a crash, a kill, lockbench's own death)
	// leaves it behind.
	Source string

	checkOnce sync.Once
	checkErr  error
	clients   atomic.Int64
}

// Errors the driver wraps, so that callers and tests can tell a protocol
// failure from the adapter's own error.
var (
	// ErrProcess wraps every failure of the process itself: it could not
	// start, it exited, it wrote a line that is not the protocol, or it
	// did not answer before the context ended.
	ErrProcess = errors.New("adapter process failed")
)

// Factory is the etcdlocks.Factory of p: each Locker runs its own process,
// started by the Factory (and again by the first Lock after the process
// ended or was killed), given the client's etcd URLs.
func (p *Program) Factory() etcdlocks.Factory {
	return func(ctx context.Context, cli *clientv3.Client, opts etcdlocks.Options) (locks.Locker, error) {
		opts, err := opts.WithDefaults()
		if err != nil {
			return nil, err
		}
		return p.newLocker(ctx, cli.Endpoints(), opts.Key(), int(opts.TTL/time.Second))
	}
}

// ZooKeeperFactory is p as a strategy of the zookeeper backend: each
// Locker runs its own process, given the host:port addresses the
// client's session was opened to (its fault relays, when it has any) and
// the session timeout in whole seconds (rounded up, at least 1). The
// adapter opens its own session; the one the runner opened for the
// client (zklocks.Conn) stays unused by it.
func (p *Program) ZooKeeperFactory() locks.Factory {
	return func(ctx context.Context, conn locks.Conn, opts locks.Options) (locks.Locker, error) {
		c, ok := conn.(*zklocks.Conn)
		if !ok {
			return nil, fmt.Errorf("adapter %s: a ZooKeeper adapter needs a ZooKeeper session, not %s's", p.Name, conn.Backend())
		}
		opts, err := opts.WithDefaults()
		if err != nil {
			return nil, err
		}
		ttl := max(1, int((opts.TTL+time.Second-1)/time.Second))
		return p.newLocker(ctx, c.Servers, opts.Key(), ttl)
	}
}

// newLocker starts the process of one client with the environment of
// docs/adapters.md: endpoints, the lock's key and the TTL in seconds.
func (p *Program) newLocker(ctx context.Context, endpoints []string, key string, ttl int) (*Locker, error) {
	if len(p.Command) == 0 {
		return nil, fmt.Errorf("adapter %s: no command", p.Name)
	}
	if err := p.check(ctx); err != nil {
		return nil, fmt.Errorf("adapter %s: %w", p.Name, err)
	}
	id := strconv.FormatInt(p.clients.Add(1), 10)
	env := append(os.Environ(),
		"LOCKBENCH_ENDPOINTS="+strings.Join(endpoints, ","),
		"LOCKBENCH_LOCK="+key,
		"LOCKBENCH_TTL="+strconv.Itoa(ttl),
		"LOCKBENCH_CLIENT="+id,
	)
	l := &Locker{prog: p, client: id, env: env}
	// The process starts now, not on the first Lock, so that its
	// start-up (an interpreter's imports) does not count against that
	// Lock's deadline.
	if _, err := l.process(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// check runs p.Check once.
func (p *Program) check(ctx context.Context) error {
	if p.Check == nil {
		return nil
	}
	// Once for the Program: a caller's cancelled context must not be what
	// every later Factory is told.
	p.checkOnce.Do(func() { p.checkErr = p.Check(context.WithoutCancel(ctx)) })
	return p.checkErr
}

func (p *Program) startWait() time.Duration {
	if p.StartWait > 0 {
		return p.StartWait
	}
	return 30 * time.Second
}

func (p *Program) closeWait() time.Duration {
	if p.CloseWait > 0 {
		return p.CloseWait
	}
	return 2 * time.Second
}

// Locker is one client's adapter process. Lock, Unlock and Close come
// from one goroutine at a time (locks.Locker); Kill, Stop and Cont
// (locks.Process) may come from another, the runner's faults.
type Locker struct {
	prog   *Program
	client string
	env    []string

	mu     sync.Mutex
	proc   *process // nil after the process ended, until the next Lock
	held   *locks.Grant
	closed bool
}

var _ locks.Process = (*Locker)(nil)

// request is one line to the adapter.
type request struct {
	Op string `json:"op"`
	// TimeoutMS, on lock, is how long the adapter may wait: the Lock's
	// deadline less a margin, so that a certain "not acquired" can arrive
	// before the driver has to kill the process. Absent: wait until told.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// message is one line from the adapter: a reply or an event.
type message struct {
	Reply   string `json:"reply"`
	Event   string `json:"event"`
	Token   int64  `json:"token"`
	Key     string `json:"key"`
	Lease   string `json:"lease"`
	Outcome string `json:"outcome"`
	Error   string `json:"error"`

	// lost is the channel the reader made for a granted reply.
	lost chan struct{}
}

// Lock asks the process for the lock (locks.Locker). A context that ends
// before the answer kills the process: the request cannot be taken back,
// so the outcome is unknown and the next Lock starts afresh.
func (l *Locker) Lock(ctx context.Context) (*locks.Grant, error) {
	// Step 1: a context that has already ended sends nothing: certain.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: adapter %s (client %s): lock: %v", locks.ErrNotAcquired, l.prog.Name, l.client, err)
	}
	// Step 2: the process, started if there is none (a missing runtime
	// or a failed start is certain: nothing was asked of etcd).
	p, err := l.process(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", locks.ErrNotAcquired, err)
	}
	// Step 3: the request, with the deadline the adapter may wait until.
	req := request{Op: "lock"}
	// An adapter that takes cancel is told at the deadline itself.
	if d, ok := ctx.Deadline(); ok && !l.prog.Cancel {
		left := time.Until(d)
		left -= min(left/3, time.Second)
		if left <= 0 {
			return nil, fmt.Errorf("%w: adapter %s (client %s): lock: %v", locks.ErrNotAcquired, l.prog.Name, l.client, context.DeadlineExceeded)
		}
		req.TimeoutMS = max(1, left.Milliseconds())
	}
	m, err := l.roundTrip(ctx, p, req)
	if err != nil {
		return nil, err
	}
	switch m.Reply {
	case "granted":
		// Step 4: the grant, as the adapter reported it; Lost closes on
		// its "lost" event or when the process ends.
		lease, err := strconv.ParseInt(m.Lease, 16, 64)
		if err != nil || m.Key == "" {
			l.discard(p)
			return nil, l.fail(p, "lock", fmt.Errorf("granted without a key or a hex lease: %q, %q", m.Key, m.Lease))
		}
		g := &locks.Grant{Key: m.Key, Token: m.Token, Lease: lease, Lost: m.lost}
		l.mu.Lock()
		l.held = g
		l.mu.Unlock()
		return g, nil
	case "error":
		// Step 5: the adapter's own error, certain or not as it says.
		return nil, l.adapterError("lock", m)
	default:
		l.discard(p)
		return nil, l.fail(p, "lock", fmt.Errorf("reply %q to lock", m.Reply))
	}
}

// Unlock asks the process to release g (locks.Locker); the adapter is
// trusted to delete only its own key, which locktest's StaleUnlock checks.
func (l *Locker) Unlock(ctx context.Context, g *locks.Grant) error {
	l.mu.Lock()
	held, p := l.held, l.proc
	l.mu.Unlock()
	if held == nil || held.Key != g.Key || held.Token != g.Token {
		return fmt.Errorf("adapter %s (client %s): unlock %s@%d: not held by this client", l.prog.Name, l.client, g.Key, g.Token)
	}
	// Step 1: the grant lives in the process: one that ended took its
	// lease (and the key under it) with it, so there is nothing to ask.
	if p == nil {
		l.setHeld(nil)
		return fmt.Errorf("adapter %s (client %s): unlock %s: the process that held it has ended", l.prog.Name, l.client, g.Key)
	}
	// Step 2: the request; the adapter deletes only its own key.
	m, err := l.roundTrip(ctx, p, request{Op: "unlock"})
	l.setHeld(nil)
	if err != nil {
		return err
	}
	switch m.Reply {
	case "released":
		return nil
	case "error":
		return l.adapterError("unlock", m)
	default:
		l.discard(p)
		return l.fail(p, "unlock", fmt.Errorf("reply %q to unlock", m.Reply))
	}
}

// Close asks the process to end (it gives its lease up), waits a little
// for it to exit, then kills its process group and reaps it.
func (l *Locker) Close(ctx context.Context) error {
	l.mu.Lock()
	p := l.proc
	l.proc, l.held, l.closed = nil, nil, true
	l.mu.Unlock()
	if p == nil {
		return nil
	}
	// A process paused by a fault must run to answer.
	p.signal(syscall.SIGCONT)
	wctx, cancel := context.WithTimeout(ctx, l.prog.closeWait())
	defer cancel()
	m, err := l.roundTrip(wctx, p, request{Op: "close"})
	if err == nil && m.Reply == "closed" {
		// It said it closed: let it exit by itself, within the wait.
		select {
		case <-p.exited:
		case <-wctx.Done():
		}
	}
	p.kill()
	switch {
	case err != nil:
		return err
	case m.Reply == "error":
		return l.adapterError("close", m)
	case m.Reply != "closed":
		return l.fail(p, "close", fmt.Errorf("reply %q to close", m.Reply))
	}
	return nil
}

// Kill is a crash of the client (locks.Process): SIGKILL to the whole
// process group, then reaped. The next Lock starts a fresh process.
func (l *Locker) Kill() error {
	l.mu.Lock()
	p := l.proc
	l.proc, l.held = nil, nil
	l.mu.Unlock()
	if p != nil {
		p.kill()
	}
	return nil
}

// Stop freezes the process group (SIGSTOP), as a pause-client fault.
func (l *Locker) Stop() error { return l.signalGroup(syscall.SIGSTOP) }

// Cont thaws it (SIGCONT).
func (l *Locker) Cont() error { return l.signalGroup(syscall.SIGCONT) }

func (l *Locker) signalGroup(sig syscall.Signal) error {
	l.mu.Lock()
	p := l.proc
	l.mu.Unlock()
	if p == nil {
		return nil
	}
	if err := p.signal(sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("adapter %s (client %s): %s: %w", l.prog.Name, l.client, sig, err)
	}
	return nil
}

func (l *Locker) setHeld(g *locks.Grant) {
	l.mu.Lock()
	l.held = g
	l.mu.Unlock()
}

// process returns the running process, starting one if there is none
// (and, for a Ready program, waiting for it to say so).
func (l *Locker) process(ctx context.Context) (*process, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, fmt.Errorf("adapter %s (client %s): closed", l.prog.Name, l.client)
	}
	if l.proc != nil {
		select {
		case <-l.proc.exited:
			// It ended by itself since the last request: reap it, and
			// start afresh.
			l.proc.kill()
			l.proc, l.held = nil, nil
		default:
			p := l.proc
			l.mu.Unlock()
			return p, nil
		}
	}
	p, err := startProcess(l.prog.Command, l.env, l.prog.Source)
	if err != nil {
		l.mu.Unlock()
		return nil, fmt.Errorf("adapter %s (client %s): %w: %w", l.prog.Name, l.client, ErrProcess, err)
	}
	l.proc = p
	l.mu.Unlock()
	if !l.prog.Ready {
		return p, nil
	}
	// Outside the lock: a crash fault may Kill it meanwhile.
	wait := time.NewTimer(l.prog.startWait())
	defer wait.Stop()
	select {
	case <-p.ready:
		return p, nil
	case <-p.exited:
		err = p.endErr()
	case <-wait.C:
		err = fmt.Errorf("not ready after %s", l.prog.startWait())
	case <-ctx.Done():
		err = fmt.Errorf("not ready before the context ended (%w)", ctx.Err())
	}
	l.discard(p)
	return nil, l.fail(p, "start", err)
}

// discard kills and reaps p if it is still the current process: after a
// request that failed in the protocol, nothing it says can be trusted.
func (l *Locker) discard(p *process) {
	l.mu.Lock()
	if l.proc == p {
		l.proc, l.held = nil, nil
	}
	l.mu.Unlock()
	p.kill()
}

// roundTrip sends req and waits for its reply. A process that exits or
// writes a malformed line, or does not answer before ctx ends, is killed
// and reaped; the error does not wrap locks.ErrNotAcquired (the adapter
// may have got the lock: its lease, no longer refreshed, ends it within
// one TTL).
func (l *Locker) roundTrip(ctx context.Context, p *process, req request) (message, error) {
	line, _ := json.Marshal(req)
	p.last.Store(string(line))
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		l.discard(p)
		return message{}, l.fail(p, req.Op, fmt.Errorf("write request: %w", err))
	}
	m, err := l.wait(p, req.Op, ctx.Done())
	switch {
	case !errors.Is(err, errEnded):
		return m, err
	case req.Op == "lock" && l.prog.Cancel:
		return l.cancel(p, ctx.Err())
	}
	l.discard(p)
	return message{}, l.fail(p, req.Op, fmt.Errorf("no answer before the context ended (%w); process killed", ctx.Err()))
}

// errEnded is wait's error when end closed before the answer.
var errEnded = errors.New("ended before the answer")

// wait waits for the reply to op until end closes (errEnded, the process
// left running). A process that exits first is killed and reaped: a
// failure naming op.
func (l *Locker) wait(p *process, op string, end <-chan struct{}) (message, error) {
	select {
	case m := <-p.replies:
		return m, nil
	case <-p.exited:
		// A reply written just before the exit still counts.
		select {
		case m := <-p.replies:
			return m, nil
		default:
		}
		l.discard(p)
		return message{}, l.fail(p, op, p.endErr())
	case <-end:
		return message{}, errEnded
	}
}

// cancel sends cancel for the lock in flight and waits (CloseWait) for
// that lock's answer: an error, annotated with why it was cancelled, or a
// grant that won the race, which is released at once and reported as a
// certain error, as a cancelled Lock must not hold. An adapter that does
// not answer in time is killed, as without Cancel.
func (l *Locker) cancel(p *process, why error) (message, error) {
	wctx, done := context.WithTimeout(context.Background(), l.prog.closeWait())
	defer done()
	p.last.Store(`{"op":"cancel"}`)
	if _, err := p.stdin.Write([]byte("{\"op\":\"cancel\"}\n")); err != nil {
		l.discard(p)
		return message{}, l.fail(p, "lock", fmt.Errorf("the context ended (%w); write cancel: %w", why, err))
	}
	m, err := l.wait(p, "lock", wctx.Done())
	if errors.Is(err, errEnded) {
		l.discard(p)
		return message{}, l.fail(p, "lock", fmt.Errorf("the context ended (%w); no answer to cancel within %s; process killed", why, l.prog.closeWait()))
	}
	if err != nil {
		return message{}, err
	}
	switch m.Reply {
	case "error":
		m.Error = fmt.Sprintf("cancelled (%v): %s", why, m.Error)
		return m, nil
	case "granted":
		r, err := l.roundTrip(wctx, p, request{Op: "unlock"})
		if err != nil {
			return message{}, fmt.Errorf("the context ended (%w) as the lock was granted; its unlock: %w", why, err)
		}
		if r.Reply != "released" {
			return message{Reply: "error", Outcome: "unknown", Error: fmt.Sprintf("cancelled (%v) as it was granted; unlock answered %s: %s", why, r.Reply, r.Error)}, nil
		}
		return message{Reply: "error", Outcome: "certain", Error: fmt.Sprintf("cancelled (%v) as it was granted; released", why)}, nil
	}
	return m, nil
}

// fail is a process failure during op: it names the adapter, the client,
// the last request and the tail of the process's stderr.
func (l *Locker) fail(p *process, op string, cause error) error {
	msg := fmt.Sprintf("adapter %s (client %s): %s (last request %s): %v", l.prog.Name, l.client, op, p.last.Load(), cause)
	if tail := p.stderr.String(); tail != "" {
		msg += "; stderr: " + tail
	}
	return fmt.Errorf("%w: %s", ErrProcess, msg)
}

// adapterError is the adapter's error reply: certain wraps ErrNotAcquired.
func (l *Locker) adapterError(op string, m message) error {
	err := fmt.Errorf("adapter %s (client %s): %s: %s", l.prog.Name, l.client, op, m.Error)
	if op == "lock" && m.Outcome == "certain" {
		return fmt.Errorf("%w: %w", locks.ErrNotAcquired, err)
	}
	if m.Outcome != "certain" {
		err = fmt.Errorf("%w (outcome unknown)", err)
	}
	return err
}

// process is one running adapter.
type process struct {
	cmd     *exec.Cmd
	stdin   interface{ Write([]byte) (int, error) }
	stdout  *os.File
	stderr  *tail
	replies chan message  // the reply to the request in flight
	exited  chan struct{} // closed when stdout ended (the process group exited or was killed)
	ready   chan struct{} // closed on the adapter's ready event
	readErr error         // why reading ended, set before exited closes
	last    atomic.Value  // the last request, for errors
	once    sync.Once
	reaped  chan struct{}
	waitErr error
	// sigMu orders signals before the reaping: once gone is set, the
	// group's id may belong to someone else.
	sigMu sync.Mutex
	gone  bool
}

// startProcess starts command in its own process group (so that a kill
// reaches its children too), killed by the kernel if lockbench dies, and
// a goroutine that reads its stdout until it ends. A source, when set, is
// the process's descriptor 3 (Program.Source).
func startProcess(command []string, env []string, source string) (*process, error) {
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = sysProcAttr()
	if source != "" {
		f, err := unlinkedFile(source)
		if err != nil {
			return nil, fmt.Errorf("source file: %w", err)
		}
		// The child has its own descriptor once started (or never).
		defer f.Close()
		cmd.ExtraFiles = []*os.File{f}
	}
	// Our own pipe for stdout, read to its end by readLines: exec's
	// StdoutPipe may not be read after Wait, which the kill path calls.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	cmd.Stdout = w
	p := &process{cmd: cmd, stdout: r, stderr: &tail{}, replies: make(chan message, 1), exited: make(chan struct{}), ready: make(chan struct{}), reaped: make(chan struct{})}
	cmd.Stderr = p.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	p.stdin = stdin
	p.last.Store("none")
	cmd.WaitDelay = time.Second
	if err := start(cmd); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("start %s: %w", command[0], err)
	}
	w.Close()
	go p.readLines()
	return p, nil
}

// unlinkedFile is a temporary file holding content, open for reading at
// its start, whose name is already removed: it lives as long as a
// descriptor of it is open.
func unlinkedFile(content string) (*os.File, error) {
	f, err := os.CreateTemp("", "lockbench-adapter-source-")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readLines turns stdout into replies and events until it ends. A
// malformed line kills the process group (its later lines mean nothing);
// the waiter then sees exited with the reason.
func (p *process) readLines() {
	defer close(p.exited)
	defer p.stdout.Close()
	var lost chan struct{} // the current grant's
	endGrant := func() {
		if lost != nil {
			close(lost)
			lost = nil
		}
	}
	defer endGrant()
	sc := bufio.NewScanner(p.stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var m message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || (m.Reply == "") == (m.Event == "") {
			p.readErr = fmt.Errorf("malformed line %q", truncate(sc.Text(), 200))
			p.signal(syscall.SIGKILL)
			break
		}
		switch {
		case m.Event == "lost":
			endGrant()
			continue
		case m.Event == "ready":
			select {
			case <-p.ready:
			default:
				close(p.ready)
			}
			continue
		case m.Event != "":
			// Unknown events are ignored: a newer adapter may say more.
			continue
		case m.Reply == "granted":
			endGrant()
			lost = make(chan struct{})
			m.lost = lost
		case m.Reply == "released":
			// A released grant's Lost no longer matters.
			lost = nil
		}
		select {
		case p.replies <- m:
		default:
			p.readErr = fmt.Errorf("reply %q with no request in flight", truncate(sc.Text(), 200))
			p.signal(syscall.SIGKILL)
			return
		}
	}
	if p.readErr == nil {
		if err := sc.Err(); err != nil {
			p.readErr = fmt.Errorf("read stdout: %w", err)
		}
	}
}

// endErr says why the process stopped answering: what its reader saw,
// and how it exited once reaped.
func (p *process) endErr() error {
	if p.readErr != nil {
		return p.readErr
	}
	p.kill()
	if p.waitErr != nil {
		return fmt.Errorf("process exited: %v", p.waitErr)
	}
	return errors.New("process exited")
}

// signal sends sig to the process group, unless it has been reaped.
func (p *process) signal(sig syscall.Signal) error {
	p.sigMu.Lock()
	defer p.sigMu.Unlock()
	if p.gone {
		return syscall.ESRCH
	}
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// kill SIGKILLs the process group, reaps the process and waits for the
// reader to end; it is idempotent and safe from any goroutine.
func (p *process) kill() {
	p.once.Do(func() {
		p.signal(syscall.SIGKILL)
		p.waitErr = p.cmd.Wait()
		p.sigMu.Lock()
		p.gone = true
		p.sigMu.Unlock()
		// Every holder of stdout is in the group, so the reader ends;
		// closing it would not be safe while it reads.
		<-p.exited
		close(p.reaped)
	})
	<-p.reaped
}

// tail keeps the last bytes written to it: a process's stderr.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 2048

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > tailSize {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailSize:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
