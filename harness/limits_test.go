package harness

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/scenarios"
)

// The review's --clients 100000000 is refused before anything starts, as
// an error on the Clients field that a CLI can restate as its flag.
func TestValidateRefusesTooManyClients(t *testing.T) {
	sc, err := scenarios.Lookup("contention")
	if err != nil {
		t.Fatal(err)
	}
	sc.Clients = 100_000_000
	err = RunSpec{Lock: "queue", Scenario: sc, Out: t.TempDir()}.Validate()
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "Clients" || !strings.Contains(err.Error(), "must be ≤") {
		t.Fatalf("got %v, want a FieldError on Clients", err)
	}
	sc.Clients = 1000
	if err := (RunSpec{Lock: "queue", Scenario: sc, Out: t.TempDir()}).Validate(); err != nil && memTotal() >= 4<<30 {
		t.Errorf("1000 clients refused on a %d MB machine: %v", memTotal()>>20, err)
	}
}

func TestMaxClientsFor(t *testing.T) {
	if got := maxClientsFor(24<<30, false); got != 12*1024 {
		t.Errorf("24 GB, own connections: %d, want 12288", got)
	}
	if got := maxClientsFor(24<<30, true); got != 96*1024 {
		t.Errorf("24 GB, shared: %d, want 98304", got)
	}
	if err := checkClients(20000, 0); err != nil && memTotal() >= 64<<30 {
		t.Errorf("20000 clients on %d MB: %v", memTotal()>>20, err)
	}
}

func TestFDPlan(t *testing.T) {
	// The README's bench --clients 1000 fits a 20,000 limit with a
	// connection per client (~15,000 with margin) …
	shared, notice, err := fdPlan(1000, 0, 3, false, true, 20000)
	if err != nil || shared != 0 || notice != "" {
		t.Errorf("1000 clients at 20000: shared %d, %q, %v; want own connections", shared, notice, err)
	}
	// … 5,000 do not: shared connections are picked, and said so.
	shared, notice, err = fdPlan(5000, 0, 3, false, true, 20000)
	if err != nil || shared < 1 || !strings.Contains(notice, "shared connections") || !strings.Contains(notice, "20000") {
		t.Errorf("5000 clients at 20000: shared %d, %q, %v; want shared connections", shared, notice, err)
	}
	if need := fdNeed(shared, 3, false, true); need > 20000 {
		t.Errorf("picked %d shared connections needing %d", shared, need)
	}
	// With client faults nothing can be shared: refused, naming the need,
	// the limit and why --shared-conns does not help.
	_, _, err = fdPlan(5000, 0, 3, true, true, 20000)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "Clients" || !strings.Contains(err.Error(), "open files") ||
		!strings.Contains(err.Error(), "20000") || !strings.Contains(err.Error(), "--shared-conns") {
		t.Errorf("5000 clients with proxies at 20000: %v", err)
	}
	// The user's own --shared-conns is kept when it fits.
	if shared, _, err := fdPlan(5000, 8, 3, false, true, 20000); err != nil || shared != 8 {
		t.Errorf("--shared-conns 8: %d, %v", shared, err)
	}
	// An external cluster's members are not in this process.
	if shared, _, err := fdPlan(5000, 0, 3, false, false, 20000); err != nil || shared != 0 {
		t.Errorf("external, 5000 clients: %d, %v", shared, err)
	}
	// 1,024 (a common default soft limit) is too small even for 64.
	if _, _, err := fdPlan(64, 0, 3, true, true, 1024); err == nil {
		t.Error("64 clients with proxies fit 1024")
	}
}

func TestRaiseOpenFileLimit(t *testing.T) {
	lim, err := RaiseOpenFileLimit()
	if err != nil {
		t.Skipf("cannot raise: %v", err)
	}
	if lim.Now < lim.Was || lim.Now == 0 || lim.String() == "" {
		t.Errorf("%+v", lim)
	}
}

// TestFleetNotice: thousands of clients started at once, or on the
// default 1 s deadline, get advice naming each; a ramp with a longer
// deadline, no deadline at all, or fewer clients get none.
func TestFleetNotice(t *testing.T) {
	sc := func(clients int, stagger time.Duration) scenarios.Scenario {
		return scenarios.Scenario{Clients: clients, Workload: scenarios.Workload{Stagger: scenarios.Duration(stagger)}}
	}
	for _, tc := range []struct {
		name    string
		sc      scenarios.Scenario
		timeout time.Duration
		want    []string // "": no notice
	}{
		{"few clients", sc(999, 0), 0, nil},
		{"at once, default deadline", sc(10000, 0), 0, []string{"10000 clients", "ramp", "--rpc-timeout 5s"}},
		{"ramped, default deadline", sc(10000, 6*time.Millisecond), 0, []string{"--rpc-timeout 5s"}},
		{"at once, 5 s deadline", sc(10000, 0), 5 * time.Second, []string{"ramp"}},
		{"ramped, 5 s deadline", sc(10000, 6*time.Millisecond), 5 * time.Second, nil},
		{"ramped, no deadline", sc(10000, 6*time.Millisecond), -1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fleetNotice(tc.sc, tc.timeout)
			if (got == "") != (tc.want == nil) {
				t.Fatalf("notice %q, want one: %v", got, tc.want != nil)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("notice %q does not say %q", got, w)
				}
			}
			if strings.Contains(got, "ramp") && !slices.Contains(tc.want, "ramp") {
				t.Errorf("notice %q asks for a ramp the run has", got)
			}
		})
	}
}
