package harness

import (
	"testing"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/scenario"
	"github.com/lockbench/lockbench/verdict"
)

func init() {
	locks.Register(locks.Strategy{Name: "test-carries-expect", Description: "test only",
		Expect: map[string]map[string]verdict.Verdict{
			"waiter-crash": {verdict.Exclusion: verdict.Any, verdict.Liveness: verdict.Fail},
		}})
}

// TestStrategyCarriesItsExpectations: a strategy's own expectations for a
// scenario override the scenario's, "any" un-asserting a check, and leave
// other scenarios alone.
func TestStrategyCarriesItsExpectations(t *testing.T) {
	wc, err := scenario.Lookup("waiter-crash")
	if err != nil {
		t.Fatal(err)
	}
	got := ExpectationsFor(wc, "test-carries-expect", "auto")
	if _, judged := got[verdict.Exclusion]; judged {
		t.Errorf("exclusion still judged: %v", got)
	}
	if got[verdict.Liveness] != verdict.Fail || got[verdict.Progress] != verdict.Pass {
		t.Errorf("expectations %v: want liveness fail (own) and progress pass (baseline)", got)
	}
	if got := ExpectationsFor(wc, "queue", "auto"); got[verdict.Exclusion] != verdict.Pass {
		t.Errorf("queue's expectations changed: %v", got)
	}
	hc, _ := scenario.Lookup("holder-crash")
	if got := ExpectationsFor(hc, "test-carries-expect", "auto"); got[verdict.Exclusion] != verdict.Pass {
		t.Errorf("another scenario changed: %v", got)
	}
}
