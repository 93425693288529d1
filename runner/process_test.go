package runner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/etcd"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/scenarios"
)

// processCalls counts what the faults did to processLockers, by call.
var processCalls = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

// processLocker is the mutex strategy posing as a process of its own
// (locks.Process), recording Kill, Stop and Cont.
type processLocker struct{ locks.Locker }

func (processLocker) call(name string) error {
	processCalls.Lock()
	processCalls.n[name]++
	processCalls.Unlock()
	return nil
}
func (p processLocker) Kill() error { return p.call("kill") }
func (p processLocker) Stop() error { return p.call("stop") }
func (p processLocker) Cont() error { return p.call("cont") }

func init() {
	locks.Register(locks.Strategy{Name: "test-process", Description: "test only: mutex as a locks.Process", Backend: "etcd", Hidden: true,
		New: func(ctx context.Context, cli locks.Conn, opts locks.Options) (locks.Locker, error) {
			m, err := locks.Lookup("mutex")
			if err != nil {
				return nil, err
			}
			l, err := m.New(ctx, cli, opts)
			if err != nil {
				return nil, err
			}
			return processLocker{l}, nil
		}})
}

// TestFaultsReachTheProcess: crash-client kills a Locker that is a
// process, pause-client stops it and the resume continues it, besides
// what the runner does to the client's traffic.
func TestFaultsReachTheProcess(t *testing.T) {
	c := startCluster(t)
	for _, tc := range []struct {
		scenario string
		want     map[string]int
	}{
		{"holder-crash", map[string]int{"kill": 1}},
		{"lease-expiry", map[string]int{"stop": 1, "cont": 1}},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			processCalls.Lock()
			processCalls.n = map[string]int{}
			processCalls.Unlock()
			sc, err := scenarios.Lookup(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			sc.Duration = scenarios.Duration(3500 * time.Millisecond)
			if _, err := Run(context.Background(), Config{Backend: etcd.Backend{}, Scenario: sc, Lock: "test-process", Seed: 1, Prefix: "/lockbench/test-process-" + tc.scenario + "/",
				Endpoints: c.Endpoints(), Cluster: etcd.Members{Members: c}}); err != nil {
				t.Fatal(err)
			}
			processCalls.Lock()
			defer processCalls.Unlock()
			for _, call := range []string{"kill", "stop", "cont"} {
				if got := processCalls.n[call]; got != tc.want[call] {
					t.Errorf("%s: %d calls, want %d", call, got, tc.want[call])
				}
			}
		})
	}
}
