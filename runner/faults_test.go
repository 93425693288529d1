package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/scenario"
	"github.com/lockbench/lockbench/verdict"
)

// TestPausedSafeHolderKeepsItsConnection runs lease-expiry under the safe
// keepalive, which opens a gRPC stream per refresh: the frozen holder's
// connection must survive the pause, so that its stale write after the
// resume reaches etcd with a known outcome and the unfenced resource
// fails, as the scenario means to show. A fault proxy that drops the
// bytes of a live connection (the former Blackhole) loses the refreshes'
// HEADERS frames, and the member then closes the connection with
// COMPRESSION_ERROR: the write ends "Unavailable: error reading from
// server: EOF", outcome unknown.
func TestPausedSafeHolderKeepsItsConnection(t *testing.T) {
	c := startCluster(t)
	sc, err := scenario.Lookup("lease-expiry")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), Config{Scenario: sc, Lock: "queue", Seed: 1, KeepAlive: locks.KeepAliveSafe,
		Prefix: "/lockbench/test-safe-pause/", Endpoints: c.Endpoints(), Cluster: c})
	if err != nil {
		t.Fatal(err)
	}
	paused, resumed, writesAfter := -1, false, 0
	for _, e := range out.Events {
		switch {
		case e.F == history.FPause:
			paused = e.Process
		case e.F == history.FResume && e.Process == paused:
			resumed = true
		case resumed && e.Process == paused && e.F == history.FWrite && e.Type != history.Invoke:
			writesAfter++
			if e.Type != history.OK {
				t.Errorf("the resumed holder's write ended %s: %q", e.Type, e.Error)
			}
		}
		if strings.Contains(e.Error, "error reading from server") || strings.Contains(e.Error, "RST_STREAM") {
			t.Errorf("client %d's connection broke: %s %s %q", e.Process, e.F, e.Type, e.Error)
		}
	}
	if !resumed || writesAfter == 0 {
		t.Fatalf("client %d paused, resumed %v, then wrote %d times: the scenario did not freeze a holder", paused, resumed, writesAfter)
	}
	rep := check.Check(out.Events, check.Options{LivenessBound: sc.TTL() + c.Election()})
	if r := rep.Checks[verdict.Resource]; r.Verdict != verdict.Fail {
		t.Errorf("resource %s, want fail (the stale write lands): %+v", r.Verdict, r)
	}
}
