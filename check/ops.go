package check

import (
	"cmp"
	"encoding/json"
	"github.com/lockbench/lockbench/internal/hugepage"
	"slices"

	"github.com/lockbench/lockbench/history"
)

// Outcome is how an invoked operation ended. The checks, the summary and the
// report's timeline all read outcomes from Pair, so that an acquire the
// checker counts as unknown is drawn and measured as unknown too.
type Outcome uint8

// Outcomes of an operation.
const (
	// OutcomePending: nothing ended it before the history's end.
	OutcomePending Outcome = iota
	// OutcomeOK: its completion was ok.
	OutcomeOK
	// OutcomeFail: its completion was fail (it did not take effect).
	OutcomeFail
	// OutcomeInfo: its completion was info (it may or may not have).
	OutcomeInfo
	// OutcomeAborted: the process crashed or invoked something else first;
	// as unknown as info.
	OutcomeAborted
)

// HoldEnd says what ended a holding interval. Figures need it: a hold
// measured from grant to release must not include a crashed holder's,
// and a crashed holder's lease is what lease_overrun measures.
type HoldEnd uint8

// What ended a hold.
const (
	// EndOpen: still held when the history ends.
	EndOpen HoldEnd = iota
	// EndRelease: the holder invoked release.
	EndRelease
	// EndCrash: the holder crashed.
	EndCrash
	// EndLeaseLost: the holder learned that its lease was gone.
	EndLeaseLost
	// EndNextEvent: a possible hold (acquire of unknown outcome) ends at
	// the process's next event.
	EndNextEvent
)

// Op is one client operation (acquire, release, read or write): its invoke
// and the event that ended it. Event positions are indices into the events
// given to Pair (line numbers minus one).
type Op struct {
	// Process and Lock say whose operation on what; Lock is the invoke's
	// (for a release, read or write that names none, the lock of the
	// process's last acquire that did).
	Process int32
	// Outcome is how it ended, as every check reads it. (Beside Process,
	// so that an Op is 48 bytes: a 10M-event history has millions.)
	Outcome Outcome
	Lock    string
	// Invoke is the invoke event, -1 for a completion with no invoke on
	// record (then From is the completion's time).
	Invoke int32
	// Done is the event that ended it (its completion, or the process's
	// crash or next invoke when Outcome is OutcomeAborted); -1 if pending.
	Done int32
	// From and To are the times of Invoke and Done; To is -1 while pending.
	From, To int64
}

// Hold is a holding interval of one lock (see Intervals) with what ended it.
type Hold struct {
	Interval
	// Lock is the lock held.
	Lock string
	// End is what ended the hold: figures keep or drop a hold by it.
	End HoldEnd
}

// Span is something with a start and an end: a fault (from its invoke to
// its ok, info or fail) or a client's pause (from pause to resume).
type Span struct {
	// Process is the invoke's (-1 for the nemesis's faults).
	Process int
	// Start and Stop are event positions; Stop is -1 while still on at the
	// history's end (then To is -1 too).
	Start, Stop int
	// From and To are their times.
	From, To int64
}

// Mark is a single event of note: a crash or a lost lease.
type Mark struct {
	// Process and Lock are the event's ("" lock: all the process's locks).
	Process int
	Lock    string
	// Event is its position, Time its time.
	Event int
	Time  int64
}

// Ops is a history paired into operations by the one set of rules every
// consumer shares (docs/design.md §4): the checks, Summarize's latencies
// and the report's timeline. All lists are in time order of their start
// (ties in line order); client lists hold processes ≥ 0 only.
type Ops struct {
	// Events is the history as given; positions index it.
	Events []history.Event
	// Processes are the client processes (≥ 0), in order of first event.
	Processes []int
	// Acquires, Releases, Reads and Writes are the clients' operations,
	// each an invoke with what ended it, or a completion with no invoke.
	Acquires []Op
	Releases []Op
	Reads    []Op
	Writes   []Op
	// Holds are every lock's certain and possible holds, locks by name,
	// each lock's holds by start.
	Holds []Hold
	// Faults are the `fault` spans of any process. An end is matched to the
	// open fault with the same fault and target, else to the oldest; an
	// end with no fault open is ignored. At any time the faults open are
	// exactly those the liveness check counts as active.
	Faults []Span
	// Pauses are clients' pause → resume (fail events do not count; a
	// second pause while paused is ignored).
	Pauses []Span
	// Crashes are every crash event of a client: a crash of any type ends
	// the process's operation in flight and its holds.
	Crashes []Mark
	// LeaseLost are lease-lost events that are not invoke or fail.
	LeaseLost []Mark
	// End is the time of the history's last event.
	End int64
}

// Pair pairs events into operations. The events need not be in time order
// (ties keep line order).
func Pair(events []history.Event) *Ops {
	return prepare(events).ops()
}

// Grants are the acquires that ended ok, in time order of their grant.
func (o *Ops) Grants() []Op {
	n := 0
	for i := range o.Acquires {
		if o.Acquires[i].Outcome == OutcomeOK {
			n++
		}
	}
	out := sized[Op](n)
	for _, a := range o.Acquires {
		if a.Outcome == OutcomeOK {
			out = append(out, a)
		}
	}
	// Done (an event index) is unique among grants, so the order is total
	// and an unstable sort gives the stable one's result, in O(n log n).
	slices.SortFunc(out, func(a, b Op) int {
		return cmp.Or(cmp.Compare(a.To, b.To), cmp.Compare(a.Done, b.Done))
	})
	return out
}

// ops is the exported pairing of the index, built once: several checks
// read it.
func (p *prepared) ops() *Ops {
	if p.paired == nil {
		p.paired = p.pairOps()
	}
	return p.paired
}

// pairOps builds the exported pairing from the index.
func (p *prepared) pairOps() *Ops {
	o := &Ops{Events: p.ev, End: p.endTime}
	for _, id := range p.procs {
		if id >= 0 {
			o.Processes = append(o.Processes, id)
		}
	}
	o.Holds = p.holds()
	f := p.faultOps()
	o.Faults, o.Pauses = f.Faults, f.Pauses
	// Each list is made at its size: growing them by appends copied
	// gigabytes of pointers on a 10M-event history.
	var nOps [opWrite + 1]int
	for i := range p.n() {
		if op := p.op(i); clientOp(op) && p.ev[i].Process >= 0 && p.startsOp(i) {
			nOps[op]++
		}
	}
	o.Acquires = sized[Op](nOps[opAcquire])
	o.Releases = sized[Op](nOps[opRelease])
	o.Reads = sized[Op](nOps[opRead])
	o.Writes = sized[Op](nOps[opWrite])
	for k := range p.n() {
		i := p.at(k)
		op, ty := p.op(i), p.ty(i)
		if p.ev[i].Process < 0 {
			continue
		}
		switch {
		case clientOp(op):
			if x, ok := p.clientOp(i); ok {
				o.appendOp(op, x)
			}
		case op == opCrash:
			o.Crashes = append(o.Crashes, p.mark(i))
		case op == opLeaseLost && ty != tyInvoke && ty != tyFail:
			o.LeaseLost = append(o.LeaseLost, p.mark(i))
		}
	}
	return o
}

// faultOps pairs only the faults and pauses (Ops.Faults, Ops.Pauses): what
// the checks that weigh faults need, without pairing every operation. It
// is built once; its callers only read it.
func (p *prepared) faultOps() *Ops {
	if p.faults == nil {
		p.faults = p.pairFaults()
	}
	return p.faults
}

// pairFaults builds faultOps's pairing.
func (p *prepared) pairFaults() *Ops {
	o := &Ops{Events: p.ev, End: p.endTime}
	pausedAt := make([]int32, len(p.procs)) // index+1 of the open pause span
	var openFaults []openFault
	for k := range p.n() {
		i := p.at(k)
		op, ty := p.op(i), p.ty(i)
		switch {
		case op == opFault:
			openFaults = o.pairFault(openFaults, i, ty)
		case p.ev[i].Process < 0:
		case op == opPause && ty != tyFail:
			if pi := p.procOf(i); pausedAt[pi] == 0 {
				o.Pauses = append(o.Pauses, Span{Process: int(p.ev[i].Process), Start: i, Stop: -1, From: p.ev[i].Time, To: -1})
				pausedAt[pi] = int32(len(o.Pauses))
			}
		case op == opResume && ty != tyFail:
			if pi := p.procOf(i); pausedAt[pi] != 0 {
				sp := &o.Pauses[pausedAt[pi]-1]
				sp.Stop, sp.To = i, p.ev[i].Time
				pausedAt[pi] = 0
			}
		}
	}
	return o
}

// clientOp is the operation event i starts: an invoke, or a completion
// that ended no invoke. ok is false for any other event.
func (p *prepared) clientOp(i int) (Op, bool) {
	e := &p.ev[i]
	if p.ty(i) == tyInvoke {
		x := Op{Process: e.Process, Lock: p.locks[p.lockOf(i)], Invoke: int32(i), Done: -1, From: e.Time, To: -1, Outcome: p.outcome(i)}
		if j := p.pair[i]; j >= 0 {
			x.Done, x.To = j, p.ev[j].Time
		}
		return x, true
	}
	if !p.startsOp(i) {
		return Op{}, false
	}
	return Op{Process: e.Process, Lock: p.locks[p.lockOf(i)], Invoke: -1, Done: int32(i), From: e.Time, To: e.Time, Outcome: outcomeOfType(p.ty(i))}, true
}

// startsOp reports whether client-op event i starts an operation: an
// invoke, or a completion that ended no invoke.
func (p *prepared) startsOp(i int) bool {
	ty := p.ty(i)
	return ty == tyInvoke || completion(ty) && p.ended[i] < 0
}

func (o *Ops) appendOp(op uint8, x Op) {
	switch op {
	case opAcquire:
		o.Acquires = append(o.Acquires, x)
	case opRelease:
		o.Releases = append(o.Releases, x)
	case opRead:
		o.Reads = append(o.Reads, x)
	case opWrite:
		o.Writes = append(o.Writes, x)
	}
}

func (p *prepared) mark(i int) Mark {
	e := &p.ev[i]
	return Mark{Process: int(e.Process), Lock: e.Lock, Event: i, Time: e.Time}
}

// openFault is a fault span still open, with what identifies it.
type openFault struct {
	span int // index in Ops.Faults
	key  string
}

// pairFault opens a fault span on an invoke and closes one on a
// completion: the open one with the same fault and target, else the oldest.
func (o *Ops) pairFault(open []openFault, i int, ty uint8) []openFault {
	e := &o.Events[i]
	var f history.Fault
	_ = json.Unmarshal(e.Value, &f) // identifies the span only: best effort
	key := f.Fault + "\x00" + f.Target
	if ty == tyInvoke {
		o.Faults = append(o.Faults, Span{Process: int(e.Process), Start: i, Stop: -1, From: e.Time, To: -1})
		return append(open, openFault{span: len(o.Faults) - 1, key: key})
	}
	if !completion(ty) || len(open) == 0 {
		return open
	}
	j := max(slices.IndexFunc(open, func(x openFault) bool { return x.key == key }), 0)
	sp := &o.Faults[open[j].span]
	sp.Stop, sp.To = i, e.Time
	return slices.Delete(open, j, j+1)
}

// holds lists the holding intervals of every lock, locks by name, built
// once: ops hands them out and the exclusion check reads them, both in
// Check's goroutine of the shared checks, and neither changes them.
func (p *prepared) holds() []Hold {
	if p.held == nil {
		p.held = p.buildHolds()
	}
	return p.held
}

func (p *prepared) buildHolds() []Hold {
	all := p.intervals()
	n := 0
	for _, ivs := range all {
		n += len(ivs)
	}
	out := sized[Hold](n)
	for _, l := range p.lockOrder() {
		for _, iv := range all[l] {
			out = append(out, Hold{Interval: Interval{Holder: iv.Holder, Certain: iv.certain}, Lock: p.locks[l], End: iv.end})
		}
	}
	return out
}

// sized is an empty slice with room for n, nil when n is 0 (as appending
// to nothing leaves it).
func sized[T any](n int) []T {
	if n == 0 {
		return nil
	}
	return hugepage.Make[T](0, n)
}
