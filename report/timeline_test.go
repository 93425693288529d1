package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/verdict"
)

// conflictEvents: p0 holds 1–5ms (token 1), p1 is granted at 3ms (token
// 2) and holds to 8ms: they overlap 3–5ms. p1 reads the counter and writes
// with token 2 (accepted); p0's write with token 1 is rejected; p2 waits
// from 2ms until the run's end cancels it at 10ms.
func conflictEvents() []history.Event {
	ms := func(x float64) int64 { return int64(x * float64(msNS)) }
	e := func(t float64, p int, ty history.Type, f history.Function, tok int64) history.Event {
		return history.Event{Time: ms(t), Process: int32(p), Type: ty, F: f, Lock: "l", Token: tok}
	}
	read := e(4, 1, history.OK, history.FRead, 0)
	read.Value = history.IntValue(7)
	rej := e(4.8, 0, history.Fail, history.FWrite, 1)
	rej.Error = "stale token"
	cancelled := e(10, 2, history.Fail, history.FAcquire, 0)
	cancelled.Error = "context canceled"
	return []history.Event{
		e(0, 0, history.Invoke, history.FAcquire, 0), e(1, 0, history.OK, history.FAcquire, 1),
		e(2, 1, history.Invoke, history.FAcquire, 0), e(2, 2, history.Invoke, history.FAcquire, 0),
		e(3, 1, history.OK, history.FAcquire, 2),
		e(3.9, 1, history.Invoke, history.FRead, 0), read,
		e(4.2, 1, history.Invoke, history.FWrite, 2), e(4.5, 1, history.OK, history.FWrite, 2),
		e(4.6, 0, history.Invoke, history.FWrite, 1), rej,
		e(5, 0, history.Invoke, history.FRelease, 0), e(5.1, 0, history.OK, history.FRelease, 0),
		e(8, 1, history.Invoke, history.FRelease, 0), e(8.1, 1, history.OK, history.FRelease, 0),
		cancelled,
	}
}

func TestTimelineConflictView(t *testing.T) {
	ev := conflictEvents()
	sum := Summarize(RunInfo{Run: rundir.Run{Lock: "queue"}, Scenario: "x", Clients: 3}, check.Check(ev, check.Options{}))
	viols := sum.Checks[verdict.Exclusion].Violations
	if len(viols) != 1 {
		t.Fatalf("exclusion violations %+v, want 1", viols)
	}
	d := buildTimeline(check.Pair(ev), summaryViolations(sum), 3)
	var tv tlViol
	for _, v := range d.Viols {
		if v.Check == verdict.Exclusion {
			tv = v
		}
	}
	if tv.From != 3*msNS || tv.To != 5*msNS {
		t.Errorf("violation spans %d–%d, want the overlap 3ms–5ms", tv.From, tv.To)
	}
	if !strings.Contains(tv.Who, "p0 (token 1, history lines 2–12)") || !strings.Contains(tv.Who, "p1 (token 2, history lines 5–14)") {
		t.Errorf("Who = %q, want both holders with tokens and lines", tv.Who)
	}
	l0, l1, l2 := d.Lanes[0], d.Lanes[1], d.Lanes[2]
	if len(l2.WaitC) != 3 || l2.WaitC[2] != cancelRunEnd || len(l2.WaitX) != 0 {
		t.Errorf("p2's cancelled wait: wc %v wx %v", l2.WaitC, l2.WaitX)
	}
	if len(l1.Reads) != 2 || l1.Reads[1] != 7 || len(l1.Writes) != 3 || l1.Writes[2] != writeAccepted {
		t.Errorf("p1 reads %v writes %v", l1.Reads, l1.Writes)
	}
	if len(l0.Writes) != 3 || l0.Writes[1] != 1 || l0.Writes[2] != writeRejected {
		t.Errorf("p0 writes %v, want token 1 rejected", l0.Writes)
	}

	// The page marks the overlap only, on both holders' lanes, and names
	// both holders in the mark's title and in the list.
	var b bytes.Buffer
	if err := WriteRunHTML(&b, nil, check.Check(ev, check.Options{}), RunContext{Cell: Cell{Summary: sum}}); err != nil {
		t.Fatal(err)
	}
	doc := parseHTML(t, b.Bytes())
	marks := 0
	for _, m := range byClass(doc, "violation") {
		from, _ := attr(m, "data-from")
		to, _ := attr(m, "data-to")
		title, _ := attr(m, "title")
		if !strings.HasPrefix(title, "exclusion") {
			continue
		}
		marks++
		if from != "3000000" || to != "5000000" {
			t.Errorf("mark %s–%s, want the overlap 3000000–5000000", from, to)
		}
		for _, w := range []string{"overlap 3ms – 5ms (2ms)", "p0 (token 1", "p1 (token 2"} {
			if !strings.Contains(title, w) {
				t.Errorf("mark title %q lacks %q", title, w)
			}
		}
	}
	if marks != 2 {
		t.Errorf("%d exclusion marks, want one per holder", marks)
	}
	for _, w := range []string{`class="who"`, "held by p0 (token 1", "overlap 3ms – 5ms (2ms)", "<h2>Throughput over time</h2>", "<h2>Latency over time</h2>", `class="ts-point"`, `data-layer="resource"`, "cancelled (run end"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("page lacks %q", w)
		}
	}
}
