package runner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/etcd"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
)

// TestCrashedWaitersKeyIsRecorded: under waiter-crash, the crashed
// waiter's queue key going with its lease is in the history (its owner
// named), and queue-naive's overlap that follows, when there is one,
// says so as its cause.
func TestCrashedWaitersKeyIsRecorded(t *testing.T) {
	c := startCluster(t)
	sc, err := scenarios.Lookup("waiter-crash")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), Config{Backend: etcd.Backend{}, Scenario: sc, Lock: "queue-naive", Seed: 1,
		Prefix: "/lockbench/test-crashed-waiter/", Endpoints: c.Endpoints(), Cluster: etcd.Members{Members: c}})
	if err != nil {
		t.Fatal(err)
	}
	crashed, owner := -1, -1
	for _, e := range out.Events {
		switch {
		case e.F == history.FCrash:
			crashed = int(e.Process)
		case e.F == history.FKeyDeleted:
			var d history.KeyDeletion
			if err := json.Unmarshal(e.Value, &d); err != nil {
				t.Fatal(err)
			}
			if d.Owner != nil && d.Cause == history.CauseLease {
				owner = *d.Owner
			}
		}
	}
	if crashed < 0 || owner != crashed {
		t.Fatalf("crashed process %d, key-deleted owner %d: want the crashed waiter's key recorded", crashed, owner)
	}
	res := check.Check(out.Events, check.Options{}).Checks[verdict.Exclusion]
	if res.Verdict != verdict.Fail {
		// queue-naive fails here 10 of 10 seeds on a quiet machine; under
		// load the crashed waiter's key may go before its successor
		// watches it. The cause is then untested here (check's
		// literal histories test it).
		t.Logf("queue-naive passed exclusion this time (a loaded machine): the violation's cause is not tested")
		return
	}
	var causes []string
	for _, v := range res.Violations {
		if strings.Contains(v.Cause, "queue key was deleted by its lease's end") {
			return
		}
		causes = append(causes, v.Cause)
	}
	t.Errorf("no violation names the crashed waiter's key as its cause: %q", causes)
}
