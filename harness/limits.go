package harness

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/scenarios"
)

// Resource budget of a run: how many open files and how much memory its
// clients need, so that a big --clients either fits (possibly on shared
// connections) or is refused up front with a message, instead of etcd
// panicking "too many open files" mid-run or the machine swapping.
//
// The figures were measured on Linux by counting /proc/PID/fd of a running
// `lockbench run --lock queue --scenario contention --clients N` (a loop
// of `ls /proc/$pid/fd | wc -l` every 200 ms, keeping the peak) at N = 1,
// 100 and 200, 3 members, and the same with --scenario waiter-crash
// (client faults, so proxies): the slope is the per-client cost, the
// intercept the base. To recalibrate, run the same and compare with
// fdNeed.
const (
	// fdPerMemberConn is a client's connection to one embedded member:
	// the client's socket, the front door's accepted and dialed sockets,
	// and etcd's accepted socket. The etcd client connects to every
	// endpoint. Measured: 12.8 per client at 3 members.
	fdPerMemberConn = 4
	// fdPerMemberConnExternal is the same to an external member: only the
	// client's socket is in this process.
	fdPerMemberConnExternal = 1
	// fdPerMemberProxy is a client's fault proxy to one member: its
	// listener, the accepted and the dialed socket. Measured: 20.9 per
	// client at 3 members, proxies included.
	fdPerMemberProxy = 3
	// fdPerMember is an embedded member's own: listeners, peer
	// connections, WAL, snapshot and bolt files (measured: 96 at one
	// client with 3 members, of which 2 connections are the client's and
	// the admin's).
	fdPerMember = 32
	// fdBase is the process's own (stdio, epoll, the run folder's files).
	fdBase = 64
	// fdMarginPercent is added for what the measurement does not see: a
	// snapshot or WAL segment opened while the old one is still open,
	// reconnects after a fault, a crashed client's connection still
	// closing while its restart dials.
	fdMarginPercent = 25
)

// Memory per client, measured as the peak resident set (VmHWM) of the
// same runs: 820 MB at 1,000 clients with their own connections (gRPC's
// buffers on both ends of 3 connections, in-process etcd included); with
// shared connections a client is its goroutines, Locker and lease.
const (
	memPerClientOwnConn = 1 << 20
	memPerClientShared  = 128 << 10
	// memBudgetPercent of the machine's memory is what a run may plan to
	// use: the rest is etcd's, the history's and everyone else's.
	memBudgetPercent = 50
	// fallbackMemTotal is assumed where /proc/meminfo cannot be read.
	fallbackMemTotal = 8 << 30
)

// raiseOnce raises the open-file limit once per process.
var raiseOnce = sync.OnceValues(raiseOpenFileLimit)

// FDLimit is the process's open-file limit, before and after
// RaiseOpenFileLimit.
type FDLimit struct {
	// Was is the soft limit the process started with, Now the soft limit
	// after raising it to the hard limit (equal when it could not be
	// raised, or already was at the hard limit).
	Was, Now uint64
}

// String says what happened, for verbose output.
func (l FDLimit) String() string {
	if l.Now > l.Was {
		return fmt.Sprintf("raised the open-file limit from %d to %d (the hard limit)", l.Was, l.Now)
	}
	return fmt.Sprintf("open-file limit %d (already the hard limit)", l.Now)
}

// RaiseOpenFileLimit raises the soft RLIMIT_NOFILE to the hard limit, once:
// every client costs a dozen descriptors and embedded etcd needs more for
// its snapshots, while many systems start processes with a soft limit of
// 1,024. The run functions call it themselves; the CLI calls it to say so
// in --verbose output.
func RaiseOpenFileLimit() (FDLimit, error) { return raiseOnce() }

func raiseOpenFileLimit() (FDLimit, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return FDLimit{}, fmt.Errorf("read the open-file limit: %w", err)
	}
	lim := FDLimit{Was: rl.Cur, Now: rl.Cur}
	if rl.Cur >= rl.Max {
		return lim, nil
	}
	rl.Cur = rl.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return lim, fmt.Errorf("raise the open-file limit from %d to %d: %w", lim.Was, rl.Max, err)
	}
	lim.Now = rl.Max
	return lim, nil
}

// fdNeed estimates the open files a run needs: conns etcd connections
// (the lock clients' own or shared ones, plus the admin client) through
// proxies or not, to members members, embedded or not.
func fdNeed(conns, members int, proxies, embedded bool) int {
	perMember := fdPerMemberConnExternal
	if embedded {
		perMember = fdPerMemberConn
	}
	perConn := perMember * members
	if proxies {
		perConn += fdPerMemberProxy * members
	}
	n := fdBase + (conns+1)*perConn
	if embedded {
		n += fdPerMember * members
	}
	return n + n*fdMarginPercent/100
}

// memTotal is the machine's memory from /proc/meminfo.
func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return fallbackMemTotal
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil && kb > 0 {
					return kb << 10
				}
			}
		}
	}
	return fallbackMemTotal
}

// MaxClients is the most clients a run may have on this machine: half its
// memory at the measured cost of a client on shared connections (a run
// with more clients than that could not fit even by sharing). Above it a
// run is refused: a typo such as --clients 100000000 once grew to 18.7 GB
// before anything failed.
func MaxClients() int { return maxClientsFor(memTotal(), true) }

func maxClientsFor(mem int64, shared bool) int {
	per := int64(memPerClientOwnConn)
	if shared {
		per = memPerClientShared
	}
	return int(mem * memBudgetPercent / 100 / per)
}

// checkClients refuses a client count above the memory budget, as a
// *FieldError on Clients.
func checkClients(clients, sharedConns int) error {
	mem := memTotal()
	if max := maxClientsFor(mem, true); clients > max {
		return FieldErr("Clients", clients, fmt.Sprintf("must be ≤ %d on this machine (half its %d MB of memory at ~%d kB per client)",
			max, mem>>20, memPerClientShared>>10))
	}
	if max := maxClientsFor(mem, false); sharedConns == 0 && clients > max {
		return FieldErr("Clients", clients, fmt.Sprintf("must be ≤ %d with a connection per client on this machine (half its %d MB of memory at ~%d MB per client): use shared connections (--shared-conns N) for more",
			max, mem>>20, memPerClientOwnConn>>20))
	}
	return nil
}

// fdPlan fits a run into the open-file limit: it returns the shared
// connections to use (sharedConns when it fits, or when the caller chose;
// otherwise as many as fit), a notice when it picked them, or an error
// naming the need, the limit and --shared-conns when nothing fits.
func fdPlan(clients, sharedConns, members int, proxies, embedded bool, limit uint64) (int, string, error) {
	conns := clients
	if sharedConns > 0 {
		conns = min(sharedConns, clients)
	}
	need := fdNeed(conns, members, proxies, embedded)
	if uint64(need) <= limit {
		return sharedConns, "", nil
	}
	if proxies || sharedConns > 0 {
		hint := "give fewer clients, or raise the hard limit (ulimit -Hn, LimitNOFILE)"
		if sharedConns > 0 {
			hint = "give fewer --shared-conns or clients, or raise the hard limit (ulimit -Hn, LimitNOFILE)"
		} else {
			hint += "; client faults need a connection per client, so --shared-conns does not apply"
		}
		return 0, "", FieldErr("Clients", clients, fmt.Sprintf("needs ~%d open files, more than the limit of %d: %s", need, limit, hint))
	}
	fit := 0
	for n := min(clients, 256); n >= 1; n /= 2 {
		if uint64(fdNeed(n, members, false, embedded)) <= limit {
			fit = n
			break
		}
	}
	if fit == 0 {
		return 0, "", FieldErr("Clients", clients, fmt.Sprintf("needs ~%d open files, more than the limit of %d even on one shared connection: raise the limit (ulimit -n)", need, limit))
	}
	return fit, fmt.Sprintf("%d clients would need ~%d open files with a connection each, more than the limit of %d: using %d shared connections (choose with --shared-conns)",
		clients, need, limit, fit), nil
}

// fitFDs raises the open-file limit and fits the run into it (fdPlan): it
// may set SharedConns, telling Notice why. members is the cluster's size;
// embedded says whether its members run in this process.
func (s *RunSpec) fitFDs(members int, embedded bool) error {
	lim, err := RaiseOpenFileLimit()
	if err != nil && lim.Now == 0 {
		return nil // no limit to plan against: run, as before
	}
	shared, notice, err := fdPlan(s.Scenario.Clients, s.SharedConns, members, s.Scenario.Needs().ClientProxy, embedded, lim.Now)
	if err != nil {
		return err
	}
	s.SharedConns = shared
	if s.Notice != nil {
		for _, n := range []string{notice, fleetNotice(s.Scenario, s.RPCTimeout)} {
			if n != "" {
				s.Notice(n)
			}
		}
	}
	return nil
}

// fleetClients is the client count from which a start in one instant, or
// a 1 s request deadline, is likely to make etcd refuse requests as too
// many (docs/measurements.md, "Ten thousand clients").
const fleetClients = 1000

// fleetNotice is the advice for a run of thousands of clients that starts
// them at once or keeps the default 1 s request deadline ("": none): at
// 10,000 clients either made etcd refuse them as too many, and the
// clients' retries kept it so.
func fleetNotice(sc scenarios.Scenario, rpcTimeout time.Duration) string {
	if sc.Clients < fleetClients {
		return ""
	}
	var advice []string
	if sc.Workload.Stagger == 0 {
		advice = append(advice, "join them over a ramp (the scenario's stagger; bench --ramp) rather than at once")
	}
	if t := etcdlocks.RPCTimeoutOf(rpcTimeout); t > 0 && t <= time.Second {
		advice = append(advice, "give requests a longer deadline (--rpc-timeout 5s): each timeout's retry adds writes")
	}
	if len(advice) == 0 {
		return ""
	}
	return fmt.Sprintf("%d clients: etcd may refuse them as too many requests; %s (docs/measurements.md, \"Ten thousand clients\")",
		sc.Clients, strings.Join(advice, "; "))
}
