package check

import (
	"fmt"
	"sort"

	"github.com/lockbench/lockbench/history"
)

// interval is a stretch during which a process held (certain) or may have
// held (possible) a lock.
type interval struct {
	Holder
	certain bool
	lock    string
}

// Intervals extracts, per lock, the holding intervals of every process.
//
// A certain interval runs from an acquire ok to the holder's next release
// invoke, crash, or lease-lost (the client knows it no longer holds), or to
// the end of the history. An acquire that ends info may have taken the lock
// at any time after its invoke: its interval is possible, not certain, and
// runs until the process's next event. Events are taken in time order, ties
// in line order, so hand-written histories need not be sorted.
func Intervals(events []history.Event) map[string][]interval {
	order := make([]int, len(events))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return events[order[a]].Time < events[order[b]].Time })

	type key struct {
		proc int
		lock string
	}
	open := map[key]*interval{}       // held now
	pending := map[key]int{}          // acquire invoked, line index
	possible := map[int][]*interval{} // info acquires by process, closed at its next event
	out := map[string][]interval{}
	closeIv := func(k key, iv *interval, t int64, line int) {
		iv.To, iv.ToLine = t, line
		out[k.lock] = append(out[k.lock], *iv)
	}
	for _, i := range order {
		e := &events[i]
		line := i + 1
		if e.Process < 0 {
			continue
		}
		if ps := possible[e.Process]; len(ps) > 0 && !(e.F == history.FAcquire && e.Type != history.Invoke) {
			for _, iv := range ps {
				iv.To, iv.ToLine = e.Time, line
				out[iv.lock] = append(out[iv.lock], *iv)
			}
			delete(possible, e.Process)
		}
		k := key{e.Process, e.Lock}
		switch {
		case e.F == history.FAcquire && e.Type == history.Invoke:
			pending[k] = line
		case e.F == history.FAcquire && e.Type == history.OK:
			if iv := open[k]; iv != nil { // re-acquire without release: keep the first interval
				continue
			}
			open[k] = &interval{Holder: Holder{Process: e.Process, From: e.Time, Token: e.Token, FromLine: line}, certain: true, lock: e.Lock}
			delete(pending, k)
		case e.F == history.FAcquire && e.Type == history.Info:
			inv, ok := pending[k]
			from := e.Time
			if ok {
				from = events[inv-1].Time
			} else {
				inv = line
			}
			delete(pending, k)
			iv := &interval{Holder: Holder{Process: e.Process, From: from, FromLine: inv}, lock: e.Lock}
			possible[e.Process] = append(possible[e.Process], iv)
		case e.F == history.FAcquire && e.Type == history.Fail:
			delete(pending, k)
		case e.F == history.FRelease && e.Type == history.Invoke,
			e.F == history.FLeaseLost && e.Type != history.Invoke && e.Type != history.Fail:
			if iv := open[k]; iv != nil {
				closeIv(k, iv, e.Time, line)
				delete(open, k)
			}
		case e.F == history.FCrash:
			for ok, iv := range open {
				if ok.proc == e.Process && (e.Lock == "" || e.Lock == ok.lock) {
					closeIv(ok, iv, e.Time, line)
					delete(open, ok)
				}
			}
		}
	}
	for k, iv := range open {
		iv.To, iv.ToLine = -1, 0
		out[k.lock] = append(out[k.lock], *iv)
	}
	for _, ps := range possible {
		for _, iv := range ps {
			iv.To, iv.ToLine = -1, 0
			out[iv.lock] = append(out[iv.lock], *iv)
		}
	}
	for l := range out {
		ivs := out[l]
		sort.Slice(ivs, func(a, b int) bool {
			if ivs[a].From != ivs[b].From {
				return ivs[a].From < ivs[b].From
			}
			return ivs[a].FromLine < ivs[b].FromLine
		})
	}
	return out
}

// CheckExclusion reports every pair of certain intervals of one lock that
// overlap. Intervals are half-open: a release invoked at t and the next
// grant at t do not overlap. Possible (info) intervals never make a
// violation; they are counted in the note.
func CheckExclusion(events []history.Event, opts Options) Result {
	if opts.MaxViolations <= 0 {
		opts.MaxViolations = DefaultMaxViolations
	}
	res := Result{Verdict: Pass}
	possibleOverlaps := 0
	locks := Intervals(events)
	names := make([]string, 0, len(locks))
	for l := range locks {
		names = append(names, l)
	}
	sort.Strings(names)
	for _, lock := range names {
		var active []interval // certain or possible intervals that may still overlap
		for _, iv := range locks[lock] {
			kept := active[:0]
			for _, a := range active {
				if a.To < 0 || a.To > iv.From {
					kept = append(kept, a)
				}
			}
			active = kept
			for _, a := range active {
				if a.Process == iv.Process {
					continue
				}
				if !a.certain || !iv.certain {
					possibleOverlaps++
					continue
				}
				res.add(Violation{
					Check:   Exclusion,
					Lock:    lock,
					Message: fmt.Sprintf("lock %q held by two processes at once: %s; %s", lock, holderString(a.Holder), holderString(iv.Holder)),
					Holders: []Holder{a.Holder, iv.Holder},
					Lines:   nonZero(a.FromLine, iv.FromLine),
				}, opts.MaxViolations)
			}
			active = append(active, iv)
		}
	}
	if res.Count > 0 {
		res.Verdict = Fail
	}
	if possibleOverlaps > 0 {
		res.Note = fmt.Sprintf("%d overlaps involve an acquire of unknown outcome (info) and are not counted", possibleOverlaps)
	}
	return res
}

func nonZero(xs ...int) []int {
	var out []int
	for _, x := range xs {
		if x > 0 {
			out = append(out, x)
		}
	}
	return out
}
