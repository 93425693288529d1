package zkcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockbench/lockbench/internal/owned"
)

// The ensemble's state as its members tell it: the four-letter word
// srvr on each member's client port (whitelisted in every zoo.cfg).
// A member that serves answers with its "Mode: leader" or "Mode:
// follower"; one that runs but does not serve (looking for a leader,
// cut from a quorum) answers notServing; a paused one does not answer.

// notServing is what a member answers srvr while it does not serve.
const notServing = "This ZooKeeper instance is not currently serving requests"

// Modes a serving member reports (Mode).
const (
	ModeLeader   = "leader"
	ModeFollower = "follower"
)

// askWait bounds one four-letter word's answer.
const askWait = time.Second

// pollEvery is how often the waits ask again.
const pollEvery = 100 * time.Millisecond

// ErrNotServing is Mode's error for a member that answers but does not
// serve clients.
var ErrNotServing = errors.New("not serving")

// fourLetter sends word to the client port at address and returns the
// answer (the member closes the connection after it).
func fourLetter(ctx context.Context, address, word string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, askWait)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	if _, err := conn.Write([]byte(word)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(conn, 64<<10))
	if err != nil {
		return string(b), err
	}
	return string(b), nil
}

// srvr is a member's answer to srvr as fields ("Mode", "Zxid", …);
// nil fields and ErrNotServing when it does not serve.
func srvr(ctx context.Context, address string) (map[string]string, error) {
	out, err := fourLetter(ctx, address, "srvr")
	if err != nil {
		return nil, err
	}
	if strings.Contains(out, notServing) {
		return nil, ErrNotServing
	}
	fields := map[string]string{}
	for line := range strings.Lines(out) {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if fields["Mode"] == "" {
		return nil, fmt.Errorf("srvr: no Mode in %q", out)
	}
	return fields, nil
}

// Mode is what member i says it is: ModeLeader or ModeFollower (an
// ensemble lockbench starts has no observers); ErrNotServing when it
// runs but does not serve (it looks for a leader, or is cut from a
// quorum); another error when it does not answer (crashed, paused).
func (c *Cluster) Mode(ctx context.Context, i int) (string, error) {
	m, err := c.member(i)
	if err != nil {
		return "", err
	}
	if !m.Running() {
		return "", fmt.Errorf("%s: %w", m, owned.ErrNotRunning)
	}
	f, err := srvr(ctx, addr(m.clientPort))
	if err != nil {
		return "", fmt.Errorf("%s: %w", m, err)
	}
	return f["Mode"], nil
}

// Leader is the index of the member that says it leads (srvr's "Mode:
// leader"), -1 when none does (an election, no quorum). Right after a
// partition the old leader may still say so, until syncLimit ticks
// without a quorum's answer; of two that say so, the one of the later
// epoch (the high 32 bits of its zxid) is the leader.
func (c *Cluster) Leader() int {
	type answer struct {
		i     int
		epoch int64
	}
	var (
		mu      sync.Mutex
		leaders []answer
		wg      sync.WaitGroup
	)
	for i, m := range c.members {
		if !m.Running() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := srvr(context.Background(), addr(m.clientPort))
			if err != nil || f["Mode"] != ModeLeader {
				return
			}
			zxid, _ := strconv.ParseInt(strings.TrimPrefix(f["Zxid"], "0x"), 16, 64)
			mu.Lock()
			leaders = append(leaders, answer{i, zxid >> 32})
			mu.Unlock()
		}()
	}
	wg.Wait()
	best := answer{i: -1, epoch: -1}
	for _, a := range leaders {
		if a.epoch > best.epoch || a.epoch == best.epoch && a.i < best.i {
			best = a
		}
	}
	return best.i
}

// waitServing waits until every member of which serves, and, with
// leader, until one of them leads. A member that exits fails it at once,
// with its log's last lines.
func (c *Cluster) waitServing(ctx context.Context, which []int, leader bool) error {
	last := map[int]string{}
	for {
		ok, led := true, !leader
		for _, i := range which {
			m := c.members[i]
			if how := m.Exited(); how != "" {
				return fmt.Errorf("%s exited (%s) before it served; %s", m, how, m.logTail())
			}
			f, err := srvr(ctx, addr(m.clientPort))
			switch {
			case err != nil:
				ok = false
				last[i] = err.Error()
			default:
				last[i] = "Mode: " + f["Mode"]
				led = led || f["Mode"] == ModeLeader
			}
		}
		if ok && led {
			return nil
		}
		select {
		case <-ctx.Done():
			var why []string
			for _, i := range which {
				m := c.members[i]
				why = append(why, fmt.Sprintf("%s at %s: %s; %s", m, addr(m.clientPort), last[i], m.logTail()))
			}
			what := "serve"
			if leader {
				what = "serve with a leader"
			}
			return fmt.Errorf("the ZooKeeper ensemble did not %s: %w\n%s", what, ctx.Err(), strings.Join(why, "\n"))
		case <-time.After(pollEvery):
		}
	}
}
