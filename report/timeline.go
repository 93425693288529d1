package report

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

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
	// (or cut short).
	Wait  []int64 `json:"w"`
	WaitX []int64 `json:"wx"`
	// Hold are certain holding intervals as (start, end, token) triples;
	// Poss possible ones (an acquire that ended info) as pairs.
	Hold []int64 `json:"h"`
	Poss []int64 `json:"ph"`
	// Pause are the client's pause → resume.
	Pause []int64 `json:"pz"`
	// Marks are (time, kind) pairs: crash, lease-lost.
	Marks []int64 `json:"m"`
}

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
	Check   string     `json:"check"`
	Message string     `json:"message"`
	Holders []tlHolder `json:"holders,omitempty"`
	// At are events that show a violation without holders.
	At []tlHolder `json:"at,omitempty"`
}

// buildTimeline turns a history and its violations into the page's data:
// a lane for every process in the history and for each of clients 0 to
// clients-1 (one that did nothing still shows). viols are numbered in
// order; the page refers to them by index.
func buildTimeline(events []history.Event, viols []check.Violation, clients int) tlData {
	ev := ordered(events)
	var end int64
	for _, e := range ev {
		end = max(end, e.Time)
	}
	d := tlData{Unit: 1, End: end, Faults: []tlSpan{}, Viols: []tlViol{}}
	if end >= int64(time.Second) {
		d.Unit = 1000 // µs: a third fewer bytes, and no loss a screen can show
	}
	lanes := map[int]*tlLane{}
	lane := func(p int) *tlLane {
		l, ok := lanes[p]
		if !ok {
			l = &tlLane{Process: p}
			lanes[p] = l
		}
		return l
	}
	for p := range min(max(clients, 0), 4096) {
		lane(p)
	}
	waitFrom := map[int]int64{}
	pauseFrom := map[int]int64{}
	type openFault struct {
		from       int64
		key, label string
	}
	var faults []openFault
	for _, e := range ev {
		if e.Process < 0 {
			if e.F != history.FFault {
				continue
			}
			var f history.Fault
			_ = json.Unmarshal(e.Value, &f) // a label only: best effort
			key := f.Fault + "\x00" + f.Target
			if e.Type == history.Invoke {
				faults = append(faults, openFault{from: e.Time, key: key, label: faultLabel(f)})
				continue
			}
			if len(faults) == 0 {
				continue
			}
			j := slices.IndexFunc(faults, func(o openFault) bool { return o.key == key })
			if j < 0 {
				j = 0
			}
			d.Faults = append(d.Faults, tlSpan{From: faults[j].from, To: e.Time, Label: faults[j].label})
			faults = slices.Delete(faults, j, j+1)
			continue
		}
		l := lane(e.Process)
		switch e.F {
		case history.FAcquire:
			if e.Type == history.Invoke {
				if t0, ok := waitFrom[e.Process]; ok {
					l.WaitX = append(l.WaitX, t0, e.Time)
				}
				waitFrom[e.Process] = e.Time
				continue
			}
			t0, ok := waitFrom[e.Process]
			if !ok {
				continue
			}
			delete(waitFrom, e.Process)
			if e.Type == history.OK {
				l.Wait = append(l.Wait, t0, e.Time)
			} else {
				l.WaitX = append(l.WaitX, t0, e.Time)
			}
		case history.FPause:
			if e.Type != history.Fail {
				if _, ok := pauseFrom[e.Process]; !ok {
					pauseFrom[e.Process] = e.Time
				}
			}
		case history.FResume:
			if t0, ok := pauseFrom[e.Process]; ok && e.Type != history.Fail {
				l.Pause = append(l.Pause, t0, e.Time)
				delete(pauseFrom, e.Process)
			}
		case history.FCrash:
			if e.Type != history.Fail {
				l.Marks = append(l.Marks, e.Time, markCrash)
				if t0, ok := waitFrom[e.Process]; ok {
					l.WaitX = append(l.WaitX, t0, e.Time)
					delete(waitFrom, e.Process)
				}
			}
		case history.FLeaseLost:
			if e.Type != history.Fail && e.Type != history.Invoke {
				l.Marks = append(l.Marks, e.Time, markLeaseLost)
			}
		}
	}
	for p, t0 := range waitFrom { // still waiting when the history ends
		lanes[p].Wait = append(lanes[p].Wait, t0, end)
	}
	for p, t0 := range pauseFrom {
		lanes[p].Pause = append(lanes[p].Pause, t0, end)
	}
	for _, f := range faults {
		d.Faults = append(d.Faults, tlSpan{From: f.from, To: end, Label: f.label, Open: true})
	}
	slices.SortStableFunc(d.Faults, func(a, b tlSpan) int { return int(sign(a.From - b.From)) })
	for _, ivs := range check.Intervals(events) {
		for _, iv := range ivs {
			if iv.Process < 0 {
				continue
			}
			to := iv.To
			if to < 0 {
				to = end
			}
			l := lane(iv.Process)
			if iv.Certain {
				l.Hold = append(l.Hold, iv.From, to, iv.Token)
			} else {
				l.Poss = append(l.Poss, iv.From, to)
			}
		}
	}
	for _, v := range viols {
		tv := tlViol{Check: v.Check, Message: v.Message}
		for _, h := range v.Holders {
			to := h.To
			if to < 0 {
				to = end
			}
			tv.Holders = append(tv.Holders, tlHolder{Process: h.Process, From: h.From, To: to, Token: h.Token})
		}
		if len(tv.Holders) == 0 {
			for _, ln := range v.Lines {
				if ln < 1 || ln > len(events) || events[ln-1].Process < 0 {
					continue
				}
				e := events[ln-1]
				tv.At = append(tv.At, tlHolder{Process: e.Process, From: e.Time, To: e.Time})
				if len(tv.At) == 4 {
					break
				}
			}
		}
		d.Viols = append(d.Viols, tv)
	}
	procs := make([]int, 0, len(lanes))
	for p := range lanes {
		procs = append(procs, p)
	}
	slices.Sort(procs)
	for _, p := range procs {
		l := lanes[p]
		sortPairs(l.Wait, 2)
		sortPairs(l.WaitX, 2)
		sortPairs(l.Hold, 3)
		sortPairs(l.Poss, 2)
		sortPairs(l.Pause, 2)
		d.Lanes = append(d.Lanes, *l)
	}
	d.downsample(TimelineBudget)
	d.scale()
	return d
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
		n += len(l.Wait)/2 + len(l.WaitX)/2 + len(l.Hold)/3 + len(l.Poss)/2 + len(l.Pause)/2
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
		down(l.Hold, 3)
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
