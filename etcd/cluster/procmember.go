package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/internal/owned"
)

// procMember is one member process: its command while it runs, nil once
// it was killed and reaped.
type procMember struct {
	index                    int
	name, clientURL, peerURL string
	// advertiseURL is the peer relay in front of peerURL: what the member
	// advertises and its peers dial.
	advertiseURL string
	dir, logPath string
	mu           sync.Mutex
	cmd          *exec.Cmd
	done         <-chan struct{} // closed once the process is reaped
	paused       bool
	client       *clientv3.Client // status and probes; made on first use
}

func (m *procMember) alive() bool {
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

func (m *procMember) isPaused() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.paused
}

// spawn starts m's process with its log appended to m.logPath, and reaps
// it when it exits.
func (pc *ProcessCluster) spawn(m *procMember, state string) error {
	flags, err := memberFlags(pc.bin.Version, memberSpec{
		Name: m.name, Dir: m.dir, ClientURL: m.clientURL, PeerURL: m.peerURL,
		AdvertisePeerURL: m.advertiseURL, Initial: pc.initial, State: state,
		Tick: pc.opts.Tick, Election: pc.opts.Election, UnsafeNoFsync: pc.opts.UnsafeNoFsync, FeatureGates: pc.opts.FeatureGates,
	})
	if err != nil {
		return err
	}
	log, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("member %s log: %w", m.name, err)
	}
	fmt.Fprintf(log, "lockbench: %s %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), pc.bin.Path, strings.Join(append(append([]string{}, pc.bin.Prefix...), flags...), " "))
	cmd := exec.Command(pc.bin.Path, append(append([]string{}, pc.bin.Prefix...), flags...)...)
	cmd.Stdout, cmd.Stderr = log, log
	done, err := owned.Start(cmd, log)
	if err != nil {
		log.Close()
		return fmt.Errorf("start member %s: %w", m.name, err)
	}
	m.mu.Lock()
	m.cmd, m.done, m.paused = cmd, done, false
	m.mu.Unlock()
	return nil
}

// waitReady waits until m answers a status request on its client URL
// (its gRPC server starts once the member has joined the cluster: the
// moment etcd logs "ready to serve client requests"), or its process
// exits, or DefaultStartWait passes.
func (pc *ProcessCluster) waitReady(ctx context.Context, m *procMember) error {
	cli, err := m.statusClient()
	if err != nil {
		return fmt.Errorf("member %s: %w", m.name, err)
	}
	m.mu.Lock()
	done := m.done
	m.mu.Unlock()
	deadline := time.Now().Add(DefaultStartWait)
	for {
		sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err := cli.Status(sctx, m.clientURL)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("start member %s: exited: %s (log %s)", m.name, lastLogLine(m.logPath), m.logPath)
		case <-ctx.Done():
			return fmt.Errorf("start member %s: %w", m.name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("start member %s: not ready after %s (log %s)", m.name, DefaultStartWait, m.logPath)
		}
	}
}

func (m *procMember) statusClient() (*clientv3.Client, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.client == nil {
		c, err := newClient(m.clientURL)
		if err != nil {
			return nil, err
		}
		m.client = c
	}
	return m.client, nil
}

// lastLogLine is the last line of a member's log that says why it died,
// for the error of a member that exited at start.
func lastLogLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "address already in use") || strings.Contains(lines[i], "\"level\":\"fatal\"") || strings.Contains(lines[i], "\"level\":\"error\"") {
			return lines[i]
		}
	}
	return lines[len(lines)-1]
}

// kill sends SIGKILL to m's process group (woken first if paused) and
// waits until it is reaped.
func (m *procMember) kill(wait time.Duration) error {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.cmd, m.paused = nil, false
	m.mu.Unlock()
	if cmd == nil {
		return ErrNotRunning
	}
	if err := owned.Kill(cmd, done, wait); err != nil {
		return fmt.Errorf("member %s: %w", m.name, err)
	}
	return nil
}

func (pc *ProcessCluster) member(i int) (*procMember, error) {
	if i < 0 || i >= len(pc.members) {
		return nil, fmt.Errorf("member %d: cluster has members 0..%d", i, len(pc.members)-1)
	}
	return pc.members[i], nil
}

// Crash kills member i with SIGKILL: no leadership hand-over, no flush.
func (pc *ProcessCluster) Crash(i int) error {
	m, err := pc.member(i)
	if err != nil {
		return err
	}
	if err := m.kill(5 * time.Second); err != nil {
		return fmt.Errorf("crash %s: %w", m.name, err)
	}
	return nil
}

// Restart starts crashed member i again on its own data
// (--initial-cluster-state=existing) and waits until it serves.
func (pc *ProcessCluster) Restart(ctx context.Context, i int) error {
	m, err := pc.member(i)
	if err != nil {
		return err
	}
	if m.alive() {
		return fmt.Errorf("restart %s: %w", m.name, ErrRunning)
	}
	return pc.startExisting(ctx, m)
}

// startExisting starts m's process into the running cluster
// (--initial-cluster-state=existing) and waits until it serves; a killed
// process's ports may take a moment to be free, so it tries again while
// they are busy.
func (pc *ProcessCluster) startExisting(ctx context.Context, m *procMember) error {
	return whilePortBusy(ctx, m.name, 100*time.Millisecond, func() error {
		err := pc.spawn(m, "existing")
		if err == nil {
			if err = pc.waitReady(ctx, m); err == nil {
				return nil
			}
		}
		m.kill(5 * time.Second)
		return err
	})
}

// Pause freezes member i's process with SIGSTOP: it stays a member, its
// connections stay open, and nothing it does moves, like a leader in a
// long GC pause or a VM migration.
func (pc *ProcessCluster) Pause(i int) error { return pc.stopCont(i, true) }

// Resume thaws a paused member with SIGCONT.
func (pc *ProcessCluster) Resume(i int) error { return pc.stopCont(i, false) }

func (pc *ProcessCluster) stopCont(i int, stop bool) error {
	m, err := pc.member(i)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return fmt.Errorf("pause/resume %s: %w", m.name, ErrNotRunning)
	}
	sig := syscall.SIGCONT
	if stop {
		sig = syscall.SIGSTOP
	}
	if err := owned.SignalGroup(m.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("%s %s: %w", sig, m.name, err)
	}
	m.paused = stop
	return nil
}

// Partition cuts member i from every peer, both ways, at the peer relays
// (peerproxy.go says what that cuts and what it cannot).
func (pc *ProcessCluster) Partition(i int) error {
	if i < 0 || i >= len(pc.members) {
		return fmt.Errorf("partition member %d: cluster has members 0..%d", i, len(pc.members)-1)
	}
	pc.cuts.setCut(i, true)
	return nil
}

// Heal undoes Partition of member i.
func (pc *ProcessCluster) Heal(i int) error {
	if i < 0 || i >= len(pc.members) {
		return fmt.Errorf("heal member %d: cluster has members 0..%d", i, len(pc.members)-1)
	}
	pc.cuts.setCut(i, false)
	return nil
}

// Leader asks every running, unpaused member for its status (in
// parallel, 300 ms each) and returns the member that a majority names as
// leader and that says so itself, or -1.
func (pc *ProcessCluster) Leader() int {
	type answer struct{ self, leader uint64 }
	answers := make([]*answer, len(pc.members))
	var wg sync.WaitGroup
	for i, m := range pc.members {
		if !m.alive() || m.isPaused() {
			continue
		}
		cli, err := m.statusClient()
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			if st, err := cli.Status(ctx, m.clientURL); err == nil && st.Header != nil {
				answers[i] = &answer{self: st.Header.MemberId, leader: st.Leader}
			}
		}()
	}
	wg.Wait()
	votes := map[uint64]int{}
	for _, a := range answers {
		if a != nil && a.leader != 0 {
			votes[a.leader]++
		}
	}
	for i, a := range answers {
		if a != nil && a.self == a.leader && votes[a.leader] > len(pc.members)/2 {
			return i
		}
	}
	return -1
}

// CheckLockService probes each running, unpaused member's lock service,
// as the embedded cluster's does.
func (pc *ProcessCluster) CheckLockService(ctx context.Context) error {
	var stuck []string
	for _, m := range pc.members {
		if !m.alive() || m.isPaused() {
			continue
		}
		ok, err := probeLockService(ctx, nil, m.index, m.clientURL)
		if err != nil {
			return fmt.Errorf("member %d: lock service probe: %w", m.index, err)
		}
		if !ok {
			stuck = append(stuck, strconv.Itoa(m.index))
		}
	}
	if len(stuck) == 0 {
		return nil
	}
	return fmt.Errorf("members %s: %w", strings.Join(stuck, ", "), ErrLockServiceStuck)
}

// Close kills every member process (SIGKILL: the data goes too, so a
// graceful stop would only cost time), waits until each is reaped, and
// removes the data folder. Safe to call more than once.
func (pc *ProcessCluster) Close() error {
	if pc == nil {
		return nil
	}
	var errs []error
	for _, m := range pc.members {
		if err := m.kill(CloseTimeout); err != nil && !errors.Is(err, ErrNotRunning) {
			errs = append(errs, err)
		}
		m.mu.Lock()
		if m.client != nil {
			m.client.Close()
			m.client = nil
		}
		m.mu.Unlock()
	}
	for _, r := range pc.relays {
		r.close()
	}
	pc.relays = nil
	if pc.dir != "" {
		if err := os.RemoveAll(pc.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove data folder: %w", err))
		}
		owned.Unregister(pc.dir)
		pc.dir = ""
	}
	if pc.owner != nil {
		pc.owner.Close()
		pc.owner = nil
	}
	return errors.Join(errs...)
}
