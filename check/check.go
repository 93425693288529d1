// Package check turns a history into verdicts. Every function here is a pure
// function of the events: no etcd, no clock, no I/O, so a history from any
// client or tool is checked the same way (docs/design.md §4).
//
// Check runs twelve checks, each giving one Result, and returns them with
// the history paired into operations (Checked), which the summary and the
// report read instead of pairing it again:
//
//   - exclusion: two certain holders of one lock at once (CheckExclusion).
//   - resource: lost updates of the counter workloads (CheckResource).
//   - fencing: accepted writes with a stale or decreasing token, and grants
//     whose token does not increase (CheckFencing).
//   - fairness: grant order, Jain's index, waits; fails on a FIFO
//     strategy's unexplained bypasses, long waits and starvation
//     (CheckFairness).
//   - liveness: the lock free while someone waits, for longer than the
//     fault-free bound beyond what each fault may cost (CheckLiveness).
//   - herd: wake-ups and RPCs per handoff; informational (CheckHerd).
//   - progress: clients asked and were not served (CheckProgress).
//   - symmetry: a release by a process that held no grant, or a holder's
//     key deleted by someone else while it held (CheckSymmetry).
//   - lease: a lease lost with no fault to explain it, or a holder told
//     of its lost lease later than its keepalive policy allows, or never
//     (CheckLease).
//   - cancel: a Lock whose context was cancelled that did not return
//     within a bound (CheckCancel).
//   - expiry: a lease's key deleted by its expiry before a TTL after its
//     last renewal answered, or a dead lease's key that outlived it
//     (CheckExpiry).
//   - orphans: a key a client left behind once done with the lock
//     (CheckOrphans).
//
// Every check reads only the contract fields of docs/design.md §3 (never Key or
// Lease), tolerates any input without panicking, and runs in time linear in
// the history (plus a sort of the events only when they are out of time
// order, and sorts of per-grant data for percentiles).
package check

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/verdict"
)

// FRPCs is the `f` of the extension event in which a process reports, at the
// end of a run, how many RPCs it sent (type ok, value = the count). When a
// process reports more than once, its last report counts (a running total).
const FRPCs = history.FRPCs

// Defaults of Options.
const (
	// DefaultMaxViolations is how many violations a check lists by default.
	DefaultMaxViolations = 100
	// DefaultLeaseTTL and DefaultElectionTimeout are the harness's defaults;
	// their sum is the default liveness bound: a crashed holder's lease
	// outlives it by up to the TTL, and a leader change adds an election.
	DefaultLeaseTTL        = 5 * time.Second
	DefaultElectionTimeout = 500 * time.Millisecond
	DefaultLivenessBound   = DefaultLeaseTTL + DefaultElectionTimeout
	// DefaultStarvationGrants is how many grants other processes must get
	// while one process waits in vain before that counts as starvation.
	DefaultStarvationGrants = 10
	// DefaultRecoverySlack is Options.RecoverySlack's default.
	DefaultRecoverySlack = time.Second
	// DefaultRequestTimeout is Options.RequestTimeout's default, the
	// harness's per-request deadline (locks.DefaultRPCTimeout).
	DefaultRequestTimeout = time.Second
	// MinQuietBound, QuietReleases and TailReleases make the default
	// fault-free bound of liveness: max(MinQuietBound, QuietReleases × the
	// history's median release latency, TailReleases × its longest).
	MinQuietBound = time.Second
	QuietReleases = 20
	TailReleases  = 3
	// MinBypassSlack makes the default Options.BypassSlack:
	// max(MinBypassSlack, TailReleases × the longest release latency).
	MinBypassSlack = 100 * time.Millisecond
	// MinLongWait and LongWaitCycles make the long-wait bound of fairness:
	// max(MinLongWait, LongWaitCycles × clients × the lock's median time
	// between grants).
	MinLongWait    = time.Second
	LongWaitCycles = 50
	// ChanceRounds: a strategy that promises no order must have served the
	// others at least ChanceRounds × (clients − 1) times during a wait
	// before it counts as long or starved (see CheckFairness).
	ChanceRounds = 7
	// DefaultOverrunBound is the belief overrun etcd's own KeepAlive (the
	// auto policy, and what a strategy with its own Session gets) allows
	// at DefaultLeaseTTL: a revoke heard at the next refresh, TTL/3 +
	// 500 ms after the last answer, plus 500 ms of slack
	// (locks.KeepAlive.Overrun; a test in package harness keeps the two
	// equal). A history that does not say its policy is held to the
	// client as etcd ships it, not to lockbench's stricter default (safe).
	DefaultOverrunBound = DefaultLeaseTTL/3 + time.Second
)

// Options tune checks whose bounds are not in the history itself. The zero
// value means every default.
type Options struct {
	// MaxViolations caps how many violations each check lists (the count is
	// always exact). 0 means DefaultMaxViolations.
	MaxViolations int
	// LivenessBound is what a client fault may cost a correct lock: the
	// lease TTL (its key must expire) plus an election. With
	// RecoverySlack it is how long after a client fault's start (or any
	// fault this build does not know) a lock may stay free. 0 means
	// DefaultLivenessBound; negative turns stall violations off (the
	// figures are still reported).
	LivenessBound time.Duration
	// StarvationMin is how long a process must have requested a lock, from
	// its first acquire invoke to its last request's end (or the history's
	// end), without one grant, before it counts as starved. 0 means twice
	// the liveness bound; negative turns starvation violations off.
	StarvationMin time.Duration
	// StarvationGrants is how many grants of that lock to other processes
	// the span must contain. 0 means DefaultStarvationGrants.
	StarvationGrants int
	// RecoverySlack is added to each fault's cost to make its recovery
	// bound (see CheckLiveness): room for etcd's lease expiry sweep (every
	// 500 ms) and a loaded machine. 0 means DefaultRecoverySlack.
	RecoverySlack time.Duration

	// Bounds from what each fault costs and what the strategy promises
	// (CheckLiveness, CheckFairness).

	// ElectionTimeout is the cluster's: a member fault may cost two
	// elections (a pre-vote round and a split vote) when it strikes and
	// again when it is undone. 0 means DefaultElectionTimeout.
	ElectionTimeout time.Duration
	// RequestTimeout is the clients' per-request deadline: after a member
	// fault, a request stuck on the lost member ends within it and is
	// retried. 0 means DefaultRequestTimeout; negative means the clients
	// had none, and a member fault costs as much as a client fault
	// (LivenessBound).
	RequestTimeout time.Duration
	// QuietBound is the longest a lock may stay free while someone waits
	// outside every fault's window. 0 means derived from the history:
	// max(MinQuietBound, QuietReleases × its median release latency,
	// TailReleases × its longest), since a handoff takes about the
	// requests a release does.
	QuietBound time.Duration
	// Order is the grant order the strategy promises; verdict.FIFO makes
	// unexplained bypasses fairness violations. The zero value promises
	// nothing.
	Order verdict.Order
	// BypassSlack is how long after its acquire invoke a FIFO request may
	// take its place in the queue (its first write's commit): a later
	// request invoked within it may be granted first. 0 means derived from
	// the history: max(MinBypassSlack, TailReleases × its longest release
	// latency), a write as slow as the slowest the clients saw.
	BypassSlack time.Duration
	// OverrunBound is the longest a holder may go on believing it holds
	// after the harness saw its key go with its lease (the keepalive
	// policy's stated overrun, locks.KeepAlive.Overrun): a holder that
	// stops later, or never, fails the lease check. Time the holder spent
	// paused does not count: a frozen process cannot be told. 0 means
	// DefaultOverrunBound; negative turns these violations off (the
	// figures are still reported).
	OverrunBound time.Duration
	// CancelBound is how long after its context is cancelled a Lock may
	// take to return (CheckCancel). 0 means CancelSlack + CancelCleanups ×
	// the longer of RequestTimeout and CleanupTimeout; negative turns these
	// violations off (the figures are still reported).
	CancelBound time.Duration
}

// WithDefaults returns o with every zero field set to its default, as the
// checks see it.
func (o Options) WithDefaults() Options {
	if o.MaxViolations <= 0 {
		o.MaxViolations = DefaultMaxViolations
	}
	if o.LivenessBound == 0 {
		o.LivenessBound = DefaultLivenessBound
	}
	if o.StarvationMin == 0 {
		b := o.LivenessBound
		if b < 0 {
			b = DefaultLivenessBound
		}
		o.StarvationMin = 2 * b
	}
	if o.RecoverySlack <= 0 {
		o.RecoverySlack = DefaultRecoverySlack
	}
	if o.StarvationGrants <= 0 {
		o.StarvationGrants = DefaultStarvationGrants
	}
	if o.ElectionTimeout <= 0 {
		o.ElectionTimeout = DefaultElectionTimeout
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.OverrunBound == 0 {
		o.OverrunBound = DefaultOverrunBound
	}
	if o.CancelBound == 0 {
		o.CancelBound = cancelBoundOf(o.RequestTimeout)
	}
	return o
}

// Holder is one side of an exclusion violation: who held the lock, from
// when to when, with which token, and on which history lines (1-based
// event numbers: the file's line numbers when it has no blank lines).
type Holder struct {
	Process int   `json:"process"`
	From    int64 `json:"from_ns"`
	// To is the end of the interval; -1 means still held at the end of the
	// history.
	To       int64 `json:"to_ns"`
	Token    int64 `json:"token,omitempty"`
	FromLine int   `json:"from_line"`
	ToLine   int   `json:"to_line,omitempty"`
}

// Violation is one thing a check found wrong, explained for a human and
// located in the history for a tool.
type Violation struct {
	Check   string   `json:"check"`
	Lock    string   `json:"lock,omitempty"`
	Message string   `json:"message"`
	Holders []Holder `json:"holders,omitempty"`
	// Lines are the history lines that show the violation, ascending.
	Lines []int `json:"lines,omitempty"`
	// Cause, when the history shows it, is why it happened in one
	// sentence, from the key deletions the harness recorded (an exclusion
	// violation: whose key went, how, at which revision, before whose
	// grant).
	Cause string `json:"cause,omitempty"`
}

// Explained is the violation's message with its cause, where the
// history shows one: what the text outputs print.
func (v Violation) Explained() string {
	if v.Cause == "" {
		return v.Message
	}
	return v.Message + " — why: " + v.Cause
}

// Result is one check's verdict with its evidence.
type Result struct {
	Verdict    verdict.Verdict `json:"verdict"`
	Violations []Violation     `json:"violations,omitempty"`
	// Count is the exact number of violations, also when the list is cut.
	Count int `json:"count"`
	// Note explains an unknown verdict or qualifies a pass; with
	// NotJudged, it says what the history lacked.
	Note string `json:"note,omitempty"`
	// NotJudged is set when the history held nothing this check judges
	// (no write to judge fencing by, no cancelled acquire, no wake-up):
	// the verdict stays pass, so that verdicts compose as before, but a
	// report shows "not judged", never a pass for an empty input.
	NotJudged bool `json:"not_judged,omitempty"`
	// Metrics are the check's figures, by stable snake_case name (see each
	// Check* function). Always finite.
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// PerProcess holds figures per client process: metric name → process
	// id → value (fairness: "grants"; herd: "wakeups", "rpcs").
	PerProcess map[string]map[int]float64 `json:"per_process,omitempty"`
}

// Report is the checker's output: one result per check and their composed
// verdict.
type Report struct {
	Verdict verdict.Verdict   `json:"verdict"`
	Checks  map[string]Result `json:"checks"`
}

// Violations lists every check's violations, in check-name order.
func (r Report) Violations() []Violation {
	var out []Violation
	for _, n := range slices.Sorted(maps.Keys(r.Checks)) {
		out = append(out, r.Checks[n].Violations...)
	}
	return out
}

// Checked is a history checked once: its operations as the checks paired
// them, and the report. Everything after the checker (summary, time
// series, timeline, HTML, JUnit, compare) reads this one value, so that a
// run's history is paired once and every figure speaks of the acquires
// and holds the verdicts judged.
type Checked struct {
	// Ops is the history paired into operations; Ops.Events is the
	// history itself.
	Ops *Ops `json:"-"`
	Report
}

// Check runs every check over events. The events need not be in time order
// (ties keep line order), but a history the recorder wrote is, and then no
// sort is done.
func Check(events []history.Event, opts Options) Checked {
	opts = opts.WithDefaults()
	p := prepare(events)
	r := Report{Checks: make(map[string]Result, len(verdict.CheckNames))}
	// Two groups run side by side (a 10M-event history's checks take
	// seconds on one core). The first builds what its checks share (the
	// pairing, the deletions, the write scan); the second's checks read
	// only the index and the faults, built before either starts, and
	// leaseExcused, which locks (and releaseLatency, measured once). Each
	// check writes only its own Result.
	p.faultEffects() // and faultOps
	shared := []check{
		{verdict.Fencing, p.fencing}, {verdict.Exclusion, p.exclusion}, {verdict.Resource, p.resource},
		{verdict.Symmetry, p.symmetry}, {verdict.Lease, p.lease}, {verdict.Cancel, p.cancel},
		{verdict.Expiry, p.expiry}, {verdict.Orphans, p.orphans},
	}
	alone := []check{
		{verdict.Fairness, p.fairness}, {verdict.Liveness, p.liveness}, {verdict.Progress, p.progress}, {verdict.Herd, p.herd},
	}
	res := make([]Result, len(shared)+len(alone))
	var wg sync.WaitGroup
	var panicked any // a broken invariant's panic, raised again in the caller
	wg.Go(func() {
		defer func() { panicked = recover() }()
		p.ops()
		p.deletionsUnderHolders()
		p.writes(opts)
		for k, c := range shared {
			res[k] = c.run(opts)
		}
	})
	func() {
		defer wg.Wait() // also when one of these panics
		for k, c := range alone {
			res[len(shared)+k] = c.run(opts)
		}
	}()
	if panicked != nil {
		panic(panicked)
	}
	for k, c := range append(shared, alone...) {
		r.Checks[c.name] = res[k]
	}
	r.Verdict = verdict.Pass
	for _, c := range r.Checks {
		r.Verdict = verdict.Worst(r.Verdict, c.Verdict)
	}
	return Checked{Ops: p.ops(), Report: r}
}

// check is one of Check's checks.
type check struct {
	name string
	run  func(Options) Result
}

// fmtNS renders a run time for messages.
func fmtNS(ns int64) string {
	if ns < 0 {
		return "end"
	}
	return time.Duration(ns).String()
}

// add appends v to r unless the list is full; the count stays exact.
func (r *Result) add(v Violation, max int) {
	r.Count++
	if len(r.Violations) < max {
		r.Violations = append(r.Violations, v)
	}
}

// metric sets a figure, dropping values JSON cannot carry.
func (r *Result) metric(name string, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	r.Metrics[name] = v
}

// Outcome is the result as a person reads it: its verdict, or "not
// judged" when the history held nothing to judge.
func (r Result) Outcome() string {
	if r.NotJudged {
		return NotJudged
	}
	return string(r.Verdict)
}

// NotJudged is Outcome's word for a check with nothing to judge.
const NotJudged = "not judged"

// nothingToJudge marks a result that found nothing to judge, saying why.
func (r *Result) nothingToJudge(why string) {
	r.NotJudged = true
	r.Note = why
}

// finish sets the verdict from the count: any violation fails.
func (r *Result) finish() {
	if r.Count > 0 {
		r.Verdict = verdict.Fail
	}
}

// ms converts nanoseconds to milliseconds for metrics.
func ms(ns int64) float64 { return float64(ns) / 1e6 }

func holderString(h Holder) string {
	return fmt.Sprintf("process %d (token %d) held %s–%s [lines %d–%d]",
		h.Process, h.Token, fmtNS(h.From), fmtNS(h.To), h.FromLine, h.ToLine)
}

// lines returns the positive line numbers among xs, ascending and unique.
func lines(xs ...int) []int {
	var out []int
	for _, x := range xs {
		if x > 0 {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// note joins non-empty notes.
func joinNotes(ns ...string) string {
	out := ""
	for _, n := range ns {
		if n == "" {
			continue
		}
		if out != "" {
			out += "; "
		}
		out += n
	}
	return out
}
