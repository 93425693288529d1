package runner

import (
	"fmt"

	"github.com/lockbench/lockbench/backend"
	"github.com/lockbench/lockbench/scenarios"
)

// sharedConn is a connection several lock clients use
// (Config.SharedConns).
type sharedConn struct {
	conn backend.Connection
}

// CheckSharedConns rejects a SharedConns setting the scenario cannot use:
// Run checks it, and so can a caller before it starts anything.
func CheckSharedConns(sc scenarios.Scenario, n int) error {
	switch {
	case n < 0:
		return fmt.Errorf("shared connections %d: must be ≥ 0 (0: one connection per client)", n)
	case n > 0 && sc.Needs().ClientProxy:
		return fmt.Errorf("scenario %s has client faults, which act on one client's own connection: run it without shared connections", sc.Name)
	}
	return nil
}

// rpcsOf is client c's RPC count. On a shared connection the RPCs of its
// clients cannot be told apart: its count is shared out evenly among them
// (the total stays exact).
func (r *runner) rpcsOf(c *client) int64 {
	n := len(r.shared)
	if n == 0 {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.conn.rpcsBefore + c.conn.conn.RPCs()
	}
	at := c.pos
	total := r.shared[at%n].conn.RPCs()
	users := int64((len(r.clients) - at%n + n - 1) / n) // clients i with i mod n == at mod n
	k := int64(at / n)                                  // this client's place among them
	share := total / users
	if k < total%users {
		share++
	}
	return share
}
