package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/check"
)

// grant is a granted acquire of name waiting ms milliseconds.
func grant(name string, ms int64) check.Op {
	return check.Op{Lock: name, Invoke: 0, Done: 1, From: 0, To: ms * int64(time.Millisecond), Outcome: check.OutcomeOK}
}

// near: within the histograms' 3 significant digits.
func near(got, want float64) bool { return got >= want*0.999 && got <= want*1.001 }

func TestNameFigures(t *testing.T) {
	if n := nameFigures([]check.Op{grant("lock", 1), grant("lock", 2)}, time.Second); n != nil {
		t.Errorf("one name: %+v, want none (a one-lock summary is unchanged)", n)
	}
	// Three names: listed one by one; job3 asked for, never granted.
	few := []check.Op{grant("job1", 1), grant("job1", 3), grant("job1", 5), grant("job2", 10),
		{Lock: "job3", Invoke: 0, Done: -1, From: 0, To: -1, Outcome: check.OutcomePending}}
	n := nameFigures(few, 2*time.Second)
	if n == nil || n.Count != 3 || n.Granted != 2 || len(n.PerName) != 3 {
		t.Fatalf("three names: %+v, want 3 names, 2 granted, 3 rows", n)
	}
	if r := n.PerName[0]; r.Name != "job1" || r.Acquisitions != 3 || r.ThroughputPerS != 1.5 || !near(r.AcquireMS.P50, 3) || !near(r.AcquireMS.Max, 5) {
		t.Errorf("job1's row %+v, want 3 grants, 1.5/s, p50 3 ms, max 5 ms", r)
	}
	if n.Grants != (Spread{Min: 0, P50: 1, Max: 3}) || n.Hottest != "job1" || n.HottestShare != 0.75 {
		t.Errorf("grants %+v, hottest %s %v: want 0/1/3, job1 0.75", n.Grants, n.Hottest, n.HottestShare)
	}
	if w := n.WaitP50MS; !near(w.Min, 3) || !near(w.P50, 3) || !near(w.Max, 10) {
		t.Errorf("per-name wait p50 %+v, want min 3 (job1), max 10 (job2)", n.WaitP50MS)
	}
	// Twenty names: a distribution, no rows; jobK granted K times, each
	// wait K ms.
	var many []check.Op
	for k := 1; k <= 20; k++ {
		for range k {
			many = append(many, grant(fmt.Sprintf("job%d", k), int64(k)))
		}
	}
	n = nameFigures(many, time.Second)
	if n == nil || n.Count != 20 || len(n.PerName) != 0 {
		t.Fatalf("twenty names: %+v, want a distribution without rows", n)
	}
	if n.Grants != (Spread{Min: 1, P50: 10, Max: 20}) || !near(n.WaitP99MS.Max, 20) || n.Hottest != "job20" {
		t.Errorf("twenty names: grants %+v, wait p99 %+v, hottest %s; want 1/10/20, max 20 ms, job20", n.Grants, n.WaitP99MS, n.Hottest)
	}
	var b bytes.Buffer
	if err := NamesTable(&b, Summary{Names: n}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"over 20 names (20 granted)", "grants per name", "hottest name: job20, 10% of grants"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table does not say %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := NamesTable(&b, Summary{}); err != nil || b.Len() != 0 {
		t.Errorf("one name printed %q", b.String())
	}
}
