package chaos

import (
	"fmt"
	"strconv"
	"strings"
)

// Target is a parsed target: a kind and, for member:N, client:N and
// waiter:K, a number. It names a role, not a process, because the leader
// or the holder is only known when the fault strikes (see Resolve).
type Target struct {
	// Kind is one of the T* constants.
	Kind string
	// N is the number of member:N, client:N and waiter:K.
	N int
}

// Target kinds, as written in a scenario's steps; TNone is for faults
// that take no target.
const (
	TLeader   = "leader"
	TFollower = "follower"
	TMember   = "member"
	THolder   = "holder"
	TWaiter   = "waiter"
	TClient   = "client"
	TRandom   = "random"
	TNone     = ""
)

// ValidTargets documents the target syntax for error messages.
const ValidTargets = "leader, follower, member:N (members); holder, waiter:K, client:N (clients); random"

// String gives the target back as a scenario writes it, for the history.
func (t Target) String() string {
	switch t.Kind {
	case TMember, TClient, TWaiter:
		return t.Kind + ":" + strconv.Itoa(t.N)
	}
	return t.Kind
}

// ParseTarget parses a target and checks that it suits the fault.
func ParseTarget(s string, f Fault) (Target, error) {
	kind, num, hasNum := strings.Cut(s, ":")
	t := Target{Kind: kind}
	if hasNum {
		n, err := strconv.Atoi(num)
		if err != nil || n < 0 {
			return t, fmt.Errorf("target %q: %q is not a number ≥0; valid targets are %s", s, num, ValidTargets)
		}
		t.N = n
	}
	numbered := kind == TMember || kind == TClient || kind == TWaiter
	if numbered != hasNum {
		return t, fmt.Errorf("target %q: valid targets are %s", s, ValidTargets)
	}
	var class TargetClass
	switch kind {
	case TLeader, TFollower, TMember:
		class = MemberTarget
	case THolder, TWaiter, TClient:
		class = ClientTarget
	case TRandom:
		class = f.Targets()
	case TNone:
		class = NoTarget
	default:
		return t, fmt.Errorf("target %q: valid targets are %s", s, ValidTargets)
	}
	if class != f.Targets() {
		return t, fmt.Errorf("fault %s cannot target %q: it takes %s", f.Name(), s, f.Targets())
	}
	return t, nil
}

// String says what a fault of the class accepts, for error messages.
func (c TargetClass) String() string {
	switch c {
	case MemberTarget:
		return "a member (leader, follower, member:N, random)"
	case ClientTarget:
		return "a client (holder, waiter:K, client:N, random)"
	}
	return "no target"
}

// Resolve picks the concrete member or client a target names now. draw is
// the step's pre-drawn random number, so that the same seed picks the same
// member or client whenever the choice is among the same candidates.
func Resolve(t Target, class TargetClass, w Positions, draw uint64) (int, error) {
	pick := func(xs []int) (int, error) {
		if len(xs) == 0 {
			return -1, fmt.Errorf("no %s to target", t.Kind)
		}
		return xs[draw%uint64(len(xs))], nil
	}
	switch t.Kind {
	case TNone:
		return -1, nil
	case TLeader:
		if l := w.Leader(); l >= 0 {
			return l, nil
		}
		return -1, fmt.Errorf("no leader to target")
	case TFollower:
		var fs []int
		for _, m := range w.RunningMembers() {
			if m != w.Leader() {
				fs = append(fs, m)
			}
		}
		return pick(fs)
	case TMember:
		if t.N >= w.Members() {
			return -1, fmt.Errorf("member:%d: the cluster has members 0..%d", t.N, w.Members()-1)
		}
		return t.N, nil
	case THolder:
		if h := w.Holder(); h >= 0 {
			return h, nil
		}
		return -1, fmt.Errorf("no holder to target")
	case TWaiter:
		ws := w.Waiters()
		if t.N >= len(ws) {
			return -1, fmt.Errorf("waiter:%d: only %d waiters", t.N, len(ws))
		}
		return ws[t.N], nil
	case TClient:
		if t.N >= w.Clients() {
			return -1, fmt.Errorf("client:%d: the run has clients 0..%d", t.N, w.Clients()-1)
		}
		return t.N, nil
	case TRandom:
		n := w.Members()
		if class == ClientTarget {
			n = w.Clients()
		}
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return pick(all)
	}
	return -1, fmt.Errorf("target %q: valid targets are %s", t, ValidTargets)
}
