package report

import (
	"bytes"
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/rundir"
)

const msNS = int64(1e6)

// fixture describes a fabricated run: clients take one lock round-robin,
// each holding 2ms with a 0.5ms handoff; a fault is active from FaultFrom
// to FaultTo (no grant meanwhile); in round ViolationRound the next client
// is granted the lock 0.5ms into the holder's hold: a known exclusion
// violation between processes ViolationRound%Clients and the next.
type fixture struct {
	Clients, Rounds    int
	FaultFrom, FaultTo int64
	ViolationRound     int // -1: none
	// Hold and Gap (ns) default to 2ms and 0.5ms.
	Hold, Gap int64
}

func defaultFixture() fixture {
	return fixture{Clients: 8, Rounds: 40, FaultFrom: 40 * msNS, FaultTo: 60 * msNS, ViolationRound: 20}
}

// events fabricates the history, in time order.
func (f fixture) events() []history.Event {
	hold, gap := cmp.Or(f.Hold, 2*msNS), cmp.Or(f.Gap, msNS/2)
	var ev []history.Event
	add := func(t int64, p int, ty history.Type, fn history.Function, tok int64) {
		e := history.Event{Time: t, Process: int32(p), Type: ty, F: fn, Token: tok}
		if p >= 0 {
			e.Lock = "l"
		}
		ev = append(ev, e)
	}
	for p := range f.Clients {
		add(int64(p)*10_000, p, history.Invoke, history.FAcquire, 0)
	}
	release := func(p int, at int64) {
		add(at, p, history.Invoke, history.FRelease, 0)
		add(at+gap/5, p, history.OK, history.FRelease, 0)
		add(at+2*gap/5, p, history.Invoke, history.FAcquire, 0)
	}
	t, tok, p := msNS, int64(100), 0
	faulted := f.FaultTo <= f.FaultFrom
	for k := range f.Rounds {
		if !faulted && t >= f.FaultFrom {
			v := history.FaultValue(history.Fault{Fault: "kill", Target: "leader", Resolved: "m1"})
			ev = append(ev, history.Event{Time: f.FaultFrom, Process: -1, Type: history.Invoke, F: history.FFault, Value: v},
				history.Event{Time: f.FaultTo, Process: -1, Type: history.OK, F: history.FFault, Value: v})
			t = max(t, f.FaultTo+5*msNS)
			faulted = true
		}
		add(t-gap/5, p, history.OK, history.FWakeup, 0)
		add(t, p, history.OK, history.FAcquire, tok)
		tok++
		if k == f.ViolationRound {
			q := (p + 1) % f.Clients
			add(t+gap, q, history.OK, history.FAcquire, tok)
			tok++
			release(p, t+hold)
			release(q, t+hold+gap*2)
			t += hold + 3*gap
			p = (p + 2) % f.Clients
			continue
		}
		release(p, t+hold)
		t += hold + gap
		p = (p + 1) % f.Clients
	}
	slices.SortStableFunc(ev, func(a, b history.Event) int { return cmp.Compare(a.Time, b.Time) })
	return ev
}

func (f fixture) run() RunInfo {
	return RunInfo{Run: rundir.Run{RunID: "20260101T000000.000Z-l-fixture-s1", Lock: "queue", Seed: 1}, Scenario: "fixture", Clients: f.Clients}
}

// summary checks and summarizes the fixture.
func (f fixture) summary() ([]history.Event, Summary) {
	ev := f.events()
	return ev, Summarize(f.run(), check.Check(ev, check.Options{}))
}

// Files of a run folder as rundir names them (report cannot import rundir;
// rundir's tests load the sample folder this writes).
const (
	configFile  = "config.json"
	historyFile = "history.jsonl"
	summaryFile = "summary.json"
)

// writeRunFolder fabricates a run folder as the harness writes it.
func writeRunFolder(t testing.TB, dir string, f fixture) (string, []history.Event, Summary) {
	t.Helper()
	ev, sum := f.summary()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"run_id": sum.RunID, "lock": sum.Lock, "seed": 1,
		"scenario": map[string]any{"name": "fixture", "clients": f.Clients}}
	writeJSONFile(t, filepath.Join(dir, configFile), cfg)
	var hist bytes.Buffer
	if err := history.Write(&hist, ev); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, historyFile), hist.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	writeJSONFile(t, filepath.Join(dir, summaryFile), sum)
	return dir, ev, sum
}

// writeJSONFile writes v as indented JSON, as rundir.WriteJSON does.
func writeJSONFile(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
