package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockbench/lockbench/history"
)

// etcdRefusal is how etcd says it is overloaded: it refuses a request
// when its apply has fallen more than 5,000 entries behind its commits
// (ErrTooManyRequests, "etcdserver: too many requests"). Unlike a timeout,
// which a partition or a slow disk also causes, it means one thing.
const etcdRefusal = "too many requests"

// etcdSaturatedShare is the share of a run's acquire requests that, once
// refused as too many, marks the run etcd-saturated.
const etcdSaturatedShare = 0.01

// EtcdOverload is how often etcd refused a run's requests as too many.
// A run where it did for at least 1% of its acquires is etcd-saturated:
// its figures describe an overloaded etcd, not the lock's handoff, and
// the reports say so beside the verdict. The verdicts stand (unlike a
// saturated harness's): a lock whose own traffic drowns etcd, a herd of
// re-reads, fails by them, and etcd being the limit is a finding about
// the load the lock puts on it.
type EtcdOverload struct {
	// Refused counts the operations recorded, before the run's end, as
	// failed with etcd's refusal: acquires and releases, whichever of the
	// lock's calls inside them (a lease grant, a join) was refused.
	Refused int `json:"refused"`
	// Acquires counts the acquire requests of the run.
	Acquires  int    `json:"acquires"`
	Saturated bool   `json:"saturated"`
	Reason    string `json:"reason,omitempty"`
}

// etcdOverload counts etcd's refusals in events up to end (the run's
// clock, when known: 0 counts all); nil when there is none. What comes
// after the end is the harness's own doing: every waiter cancelled at
// once deletes its key (10,000 at the end of a 10,000-client run).
func etcdOverload(events []history.Event, end time.Duration) *EtcdOverload {
	o := &EtcdOverload{}
	for _, e := range events {
		switch {
		case end > 0 && e.Time > int64(end):
		case e.Type == history.Invoke && e.F == history.FAcquire:
			o.Acquires++
		case (e.Type == history.Fail || e.Type == history.Info) && strings.Contains(e.Error, etcdRefusal):
			o.Refused++
		}
	}
	return o.judged()
}

// judged is o with its verdict, or nil when etcd refused nothing.
func (o *EtcdOverload) judged() *EtcdOverload {
	if o.Refused == 0 {
		return nil
	}
	if o.Acquires > 0 && float64(o.Refused) >= etcdSaturatedShare*float64(o.Acquires) {
		o.Saturated = true
		o.Reason = fmt.Sprintf("etcd refused %d requests as too many (its apply fell more than 5,000 entries behind its commits), against %d acquires (≥%.0f%%)",
			o.Refused, o.Acquires, 100*etcdSaturatedShare)
	}
	return o
}

// EtcdSaturated reports whether etcd refused enough of the run's requests
// as too many to be its limit (EtcdOverload).
func (s Summary) EtcdSaturated() bool { return s.EtcdOverload != nil && s.EtcdOverload.Saturated }
