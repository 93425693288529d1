package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
)

// TimelineBudget caps how many intervals a report.html embeds for its
// timeline. Past it, intervals of a lane closer together than a resolution
// are merged (the resolution doubles until the timeline fits), so that a
// long run gives a page a browser opens at once; the page says so.
const TimelineBudget = 250_000

// Mark kinds in tlLane.Marks.
const (
	markCrash     = 1
	markLeaseLost = 2
	// markKeyGone: the client's lock key was deleted (a key-deleted
	// event: its lease's end, or another client), the mark an exclusion
	// violation's cause points at.
	markKeyGone = 3
)

// tlData is the timeline as the page's script reads it. Times are integers
// in Unit nanoseconds since the history's start; intervals are flat arrays
// (start, end, …) in start order.
type tlData struct {
	Unit int64 `json:"unit"`
	End  int64 `json:"end"`
	// Merged is the resolution in ns below which intervals were merged,
	// 0 when nothing was.
	Merged int64    `json:"merged"`
	Lanes  []tlLane `json:"lanes"`
	Faults []tlSpan `json:"faults"`
	Viols  []tlViol `json:"violations"`
}

type tlLane struct {
	Process int `json:"p"`
	// Wait are acquire invoke → ok; WaitX acquire invoke → fail or info
	// (or cut short); WaitC are waits the caller cancelled ("context
	// canceled") as (start, end, kind) triples, kind cancelRunEnd or
	// cancelFault: giving up is not a failure of the lock, so they are
	// drawn apart.
	Wait  []int64 `json:"w"`
	WaitX []int64 `json:"wx"`
	WaitC []int64 `json:"wc"`
	// Hold are certain holding intervals as (start, end, token) triples;
	// Poss possible ones (an acquire that ended info) as pairs.
	Hold []int64 `json:"h"`
	Poss []int64 `json:"ph"`
	// Pause are the client's pause → resume.
	Pause []int64 `json:"pz"`
	// Marks are (time, kind) pairs: crash, lease-lost.
	Marks []int64 `json:"m"`
	// Reads are counter reads as (time, value) pairs (the read's end);
	// Writes are counter writes as (time, token, outcome) triples, outcome
	// writeAccepted, writeRejected or writeUnknown.
	Reads  []int64 `json:"rd"`
	Writes []int64 `json:"wr"`
}

// Kinds of a cancelled wait (tlLane.WaitC) and outcomes of a write
// (tlLane.Writes).
const (
	cancelRunEnd = 0
	cancelFault  = 1

	writeAccepted = 1
	writeRejected = 2
	writeUnknown  = 3
)

type tlSpan struct {
	From  int64  `json:"from"`
	To    int64  `json:"to"`
	Label string `json:"label"`
	Open  bool   `json:"open,omitempty"`
}

type tlHolder struct {
	Process int   `json:"p"`
	From    int64 `json:"from"`
	To      int64 `json:"to"`
	Token   int64 `json:"token,omitempty"`
}

type tlViol struct {
	Check   string `json:"check"`
	Message string `json:"message"`
	// From and To are what the violation is about in time: the overlap of
	// its holders when they overlap, else the span of its marks. "#v=N"
	// zooms to it.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Who names the holders: process, token and history lines.
	Who     string     `json:"who,omitempty"`
	Holders []tlHolder `json:"holders,omitempty"`
	// At are events that show a violation without holders.
	At []tlHolder `json:"at,omitempty"`
}

// buildTimeline turns a history and its violations into the page's data:
// a lane for every process in the history and for each of clients 0 to
// clients-1 (one that did nothing still shows). viols are numbered in
// order; the page refers to them by index. Operations are the checker's
// own, so the page draws what the checker judged.
func buildTimeline(ops *check.Ops, viols []check.Violation, clients int) tlData {
	events := ops.Events
	end := ops.End
	d := tlData{Unit: 1, End: end, Faults: []tlSpan{}, Viols: []tlViol{}}
	if end >= int64(time.Second) {
		d.Unit = 1000 // µs: a third fewer bytes, and no loss a screen can show
	}
	lanes := newLanes(clients, ops.Processes)
	addWaits(lanes, ops, end)
	addPausesAndMarks(lanes, ops)
	addResourceOps(lanes, ops)
	addHolds(lanes, ops.Holds, end)
	d.Faults = faultSpans(ops, end)
	for _, v := range viols {
		d.Viols = append(d.Viols, timelineViolation(v, events, end))
	}
	d.Lanes = lanes.sorted()
	d.downsample(TimelineBudget)
	d.scale()
	return d
}

// laneSet is the timeline's lanes by process.
type laneSet map[int]*tlLane

// newLanes makes a lane for each of clients 0 to clients-1 (at most 4096)
// and for every process of the history.
func newLanes(clients int, procs []int) laneSet {
	ls := laneSet{}
	for p := range min(max(clients, 0), 4096) {
		ls.of(p)
	}
	for _, p := range procs {
		ls.of(p)
	}
	return ls
}

// of is process p's lane, made on first use.
func (ls laneSet) of(p int) *tlLane {
	l, ok := ls[p]
	if !ok {
		l = &tlLane{Process: p}
		ls[p] = l
	}
	return l
}

// sorted returns the lanes by process, each lane's intervals by start.
func (ls laneSet) sorted() []tlLane {
	var out []tlLane
	for _, p := range slices.Sorted(maps.Keys(ls)) {
		l := ls[p]
		sortPairs(l.Wait, 2)
		sortPairs(l.WaitX, 2)
		sortPairs(l.WaitC, 3)
		sortPairs(l.Hold, 3)
		sortPairs(l.Poss, 2)
		sortPairs(l.Pause, 2)
		out = append(out, *l)
	}
	return out
}

// addWaits draws each acquire from its invoke: to its ok (Wait), to its
// fail, info, crash or next invoke (WaitX), to its cancellation by the
// caller (WaitC), or, still waiting, to the end.
func addWaits(ls laneSet, ops *check.Ops, end int64) {
	cw := cancelWaiterFaults(ops)
	for _, a := range ops.Acquires {
		if a.Invoke < 0 {
			continue
		}
		l := ls.of(int(a.Process))
		switch {
		case a.Outcome == check.OutcomeOK:
			l.Wait = append(l.Wait, a.From, a.To)
		case a.Outcome == check.OutcomePending:
			l.Wait = append(l.Wait, a.From, end)
		case a.Done >= 0 && strings.Contains(ops.Events[a.Done].Error, "context canceled"):
			kind := int64(cancelRunEnd)
			if slices.ContainsFunc(cw, func(f check.Span) bool { return f.From <= a.To && (f.To < 0 || a.To <= f.To) }) {
				kind = cancelFault
			}
			l.WaitC = append(l.WaitC, a.From, a.To, kind)
		default:
			l.WaitX = append(l.WaitX, a.From, a.To)
		}
	}
}

// cancelWaiterFaults are the cancel-waiters faults: a wait cancelled while
// one is on was cancelled by it, any other by the run's end.
func cancelWaiterFaults(ops *check.Ops) []check.Span {
	var out []check.Span
	for _, f := range ops.Faults {
		var v history.Fault
		_ = json.Unmarshal(ops.Events[f.Start].Value, &v) // best effort: a label only
		if chaos.CostOf(v.Fault) == chaos.CostCancelledWaits {
			out = append(out, f)
		}
	}
	return out
}

// addResourceOps draws the counter workloads' reads (ok, with the value
// read) and writes (accepted, rejected as stale, or unknown), at their end.
func addResourceOps(ls laneSet, ops *check.Ops) {
	for _, r := range ops.Reads {
		if r.Outcome != check.OutcomeOK || r.Process < 0 {
			continue
		}
		var v int64
		_ = json.Unmarshal(ops.Events[r.Done].Value, &v) // shown only
		l := ls.of(int(r.Process))
		l.Reads = append(l.Reads, r.To, v)
	}
	for _, w := range ops.Writes {
		if w.Process < 0 || w.Outcome == check.OutcomePending {
			continue
		}
		out := int64(writeUnknown)
		switch w.Outcome {
		case check.OutcomeOK:
			out = writeAccepted
		case check.OutcomeFail:
			out = writeRejected
		}
		at := ops.Events[max(w.Done, 0)]
		l := ls.of(int(w.Process))
		l.Writes = append(l.Writes, w.To, at.Token, out)
	}
	for _, l := range ls {
		sortPairs(l.Reads, 2)
		sortPairs(l.Writes, 3)
	}
}

// addPausesAndMarks draws pauses (to the end when never resumed), crashes
// and lost leases.
func addPausesAndMarks(ls laneSet, ops *check.Ops) {
	for _, p := range ops.Pauses {
		to := p.To
		if p.Stop < 0 {
			to = ops.End
		}
		l := ls.of(p.Process)
		l.Pause = append(l.Pause, p.From, to)
	}
	for _, m := range ops.Crashes {
		l := ls.of(m.Process)
		l.Marks = append(l.Marks, m.Time, markCrash)
	}
	for _, m := range ops.LeaseLost {
		l := ls.of(m.Process)
		l.Marks = append(l.Marks, m.Time, markLeaseLost)
	}
	addKeysGone(ls, ops)
	for _, l := range ls {
		sortPairs(l.Marks, 2)
	}
}

// addKeysGone marks each key-deleted event on the lane of the client
// whose key it was: the waiter or crashed client it names, else the
// holder of its token.
func addKeysGone(ls laneSet, ops *check.Ops) {
	var byToken map[int64]int
	for _, e := range ops.Events {
		if e.F != history.FKeyDeleted {
			continue
		}
		var d history.KeyDeletion
		if json.Unmarshal(e.Value, &d) != nil {
			continue
		}
		owner := -1
		switch {
		case d.Waiter != nil:
			owner = *d.Waiter
		case d.Owner != nil:
			owner = *d.Owner
		case e.Token != 0:
			if byToken == nil {
				byToken = map[int64]int{}
				for _, h := range ops.Holds {
					byToken[h.Token] = h.Process
				}
			}
			if p, ok := byToken[e.Token]; ok {
				owner = p
			}
		}
		if owner >= 0 {
			l := ls.of(owner)
			l.Marks = append(l.Marks, e.Time, markKeyGone)
		}
	}
}

// addHolds draws certain holds (with their token) and possible ones; a
// hold still on at the end runs to it.
func addHolds(ls laneSet, holds []check.Hold, end int64) {
	for _, h := range holds {
		if h.Process < 0 {
			continue
		}
		to := h.To
		if to < 0 {
			to = end
		}
		l := ls.of(h.Process)
		if h.Certain {
			l.Hold = append(l.Hold, h.From, to, h.Token)
		} else {
			l.Poss = append(l.Poss, h.From, to)
		}
	}
}

// faultSpans are the fault bands, labelled from their invoke's value;
// a fault still on at the end is open.
func faultSpans(ops *check.Ops, end int64) []tlSpan {
	out := []tlSpan{}
	for _, f := range ops.Faults {
		var v history.Fault
		_ = json.Unmarshal(ops.Events[f.Start].Value, &v) // a label only: best effort
		sp := tlSpan{From: f.From, To: f.To, Label: faultLabel(v)}
		if f.Stop < 0 {
			sp.To, sp.Open = end, true
		}
		out = append(out, sp)
	}
	return out
}

// timelineViolation places a violation: on its holders, or, without
// holders, on the first four client events it cites. From–To is the
// holders' overlap when they overlap (what is wrong is only that part of
// their holds), else the span of its marks.
func timelineViolation(v check.Violation, events []history.Event, end int64) tlViol {
	tv := tlViol{Check: v.Check, Message: v.Explained()}
	for _, h := range v.Holders {
		to := h.To
		if to < 0 {
			to = end
		}
		tv.Holders = append(tv.Holders, tlHolder{Process: h.Process, From: h.From, To: to, Token: h.Token})
	}
	if len(tv.Holders) > 0 {
		tv.From, tv.To = overlap(tv.Holders)
		tv.Who = holdersText(v.Holders)
		return tv
	}
	for _, ln := range v.Lines {
		if ln < 1 || ln > len(events) || events[ln-1].Process < 0 {
			continue
		}
		e := events[ln-1]
		tv.At = append(tv.At, tlHolder{Process: int(e.Process), From: e.Time, To: e.Time})
		if len(tv.At) == 4 {
			break
		}
	}
	tv.From, tv.To = span(tv.At)
	return tv
}

// overlap is the interval all holders share, or, when they share none
// (or there is one), the span of their holds.
func overlap(hs []tlHolder) (int64, int64) {
	from, to := hs[0].From, hs[0].To
	for _, h := range hs[1:] {
		from, to = max(from, h.From), min(to, h.To)
	}
	if len(hs) < 2 || to < from {
		return span(hs)
	}
	return from, to
}

// span is the earliest start to the latest end of hs (0, 0 if none).
func span(hs []tlHolder) (int64, int64) {
	if len(hs) == 0 {
		return 0, 0
	}
	from, to := hs[0].From, hs[0].To
	for _, h := range hs[1:] {
		from, to = min(from, h.From), max(to, h.To)
	}
	return from, to
}

// holdersText names a violation's holders for a reader: "p4 (token 120,
// history lines 2–4) and p5 (token 121, lines 3–6)".
func holdersText(hs []check.Holder) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		s := fmt.Sprintf("p%d (", h.Process)
		if h.Token != 0 {
			s += fmt.Sprintf("token %d, ", h.Token)
		}
		s += fmt.Sprintf("history line %d", h.FromLine)
		if h.ToLine > 0 {
			s = strings.Replace(s, "history line", "history lines", 1) + fmt.Sprintf("–%d", h.ToLine)
		}
		parts[i] = s + ")"
	}
	if len(parts) <= 2 {
		return strings.Join(parts, " and ")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

func sign(x int64) int64 {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

func faultLabel(f history.Fault) string {
	s := f.Fault
	if s == "" {
		s = "fault"
	}
	switch {
	case f.Resolved != "" && f.Target != "" && f.Resolved != f.Target:
		s += fmt.Sprintf(" %s (%s)", f.Target, f.Resolved)
	case f.Resolved != "":
		s += " " + f.Resolved
	case f.Target != "":
		s += " " + f.Target
	}
	return s
}

// sortPairs sorts a flat array of n-tuples by their first element.
func sortPairs(xs []int64, n int) {
	k := len(xs) / n
	sorted := true
	for i := 1; i < k; i++ {
		if xs[i*n] < xs[(i-1)*n] {
			sorted = false
			break
		}
	}
	if sorted {
		return
	}
	tuples := make([][]int64, k)
	for i := range tuples {
		tuples[i] = slices.Clone(xs[i*n : i*n+n])
	}
	slices.SortStableFunc(tuples, func(a, b []int64) int { return int(sign(a[0] - b[0])) })
	for i, t := range tuples {
		copy(xs[i*n:], t)
	}
}

// intervals counts the embedded intervals.
func (d *tlData) intervals() int {
	n := 0
	for _, l := range d.Lanes {
		n += len(l.Wait)/2 + len(l.WaitX)/2 + len(l.WaitC)/3 + len(l.Hold)/3 + len(l.Poss)/2 + len(l.Pause)/2
	}
	return n
}

// downsample merges intervals closer than a resolution until the timeline
// has at most budget intervals (or the resolution passes the whole span).
func (d *tlData) downsample(budget int) {
	if d.intervals() <= budget {
		return
	}
	res := max(d.End/int64(4*budget), 1)
	for d.intervals() > budget && res <= 2*max(d.End, 1) {
		for i := range d.Lanes {
			l := &d.Lanes[i]
			l.Wait = mergeTuples(l.Wait, 2, res)
			l.WaitX = mergeTuples(l.WaitX, 2, res)
			l.WaitC = mergeTuples(l.WaitC, 3, res)
			l.Hold = mergeTuples(l.Hold, 3, res)
			l.Poss = mergeTuples(l.Poss, 2, res)
			l.Pause = mergeTuples(l.Pause, 2, res)
		}
		d.Merged = res
		res *= 2
	}
}

// mergeTuples merges, in place, consecutive tuples whose gap is below res;
// a merged tuple keeps its first tuple's extra fields (the token).
func mergeTuples(xs []int64, n int, res int64) []int64 {
	if len(xs) <= n {
		return xs
	}
	out := xs[:n]
	for i := n; i+n <= len(xs); i += n {
		last := len(out) - n
		if xs[i]-out[last+1] < res {
			out[last+1] = max(out[last+1], xs[i+1])
			continue
		}
		out = append(out, xs[i:i+n]...)
	}
	return out
}

// scale converts every time to Unit.
func (d *tlData) scale() {
	u := d.Unit
	if u == 1 {
		return
	}
	d.End = (d.End + u - 1) / u
	down := func(xs []int64, n int) {
		for i := range xs {
			if i%n < 2 {
				xs[i] /= u
			}
		}
	}
	for i := range d.Lanes {
		l := &d.Lanes[i]
		down(l.Wait, 2)
		down(l.WaitX, 2)
		down(l.WaitC, 3)
		down(l.Hold, 3)
		for j := 0; j < len(l.Reads); j += 2 { // (time, value)
			l.Reads[j] /= u
		}
		for j := 0; j < len(l.Writes); j += 3 { // (time, token, outcome)
			l.Writes[j] /= u
		}
		down(l.Poss, 2)
		down(l.Pause, 2)
		for j := 0; j < len(l.Marks); j += 2 { // (time, kind)
			l.Marks[j] /= u
		}
	}
	for i := range d.Faults {
		d.Faults[i].From /= u
		d.Faults[i].To /= u
	}
	for i := range d.Viols {
		d.Viols[i].From /= u
		d.Viols[i].To /= u
		for j := range d.Viols[i].Holders {
			h := &d.Viols[i].Holders[j]
			h.From /= u
			h.To /= u
		}
		for j := range d.Viols[i].At {
			h := &d.Viols[i].At[j]
			h.From /= u
			h.To /= u
		}
	}
}
