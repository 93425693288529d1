package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/lockbench/lockbench/check"
)

// MaxNamesListed is the most lock names a summary lists one by one
// (Names.PerName); a run with more gives only their distribution.
const MaxNamesListed = 8

// Names is summary.json's "names": a run's figures by lock name, present
// only when its history has more than one name (a workload's `locks: N`),
// so that a one-lock summary is what it was. With many names the
// question is how evenly the load spread and whether a cold name waited
// as long as a hot one, which per-name rows stop answering past a few.
type Names struct {
	// Count is the number of names asked for (acquire invokes or grants).
	Count int `json:"count"`
	// Granted is how many of them were granted at least once.
	Granted int `json:"granted"`
	// PerName lists each name, by name, when Count ≤ MaxNamesListed.
	PerName []NameRow `json:"per_name,omitempty"`
	// Grants is grants per name over all Count names (a name asked for and
	// never granted counts 0): min, median, max.
	Grants Spread `json:"grants"`
	// WaitP50MS and WaitP99MS are, over the granted names, each name's
	// median and 99th-percentile acquire wait (invoke → ok), in ms.
	WaitP50MS Spread `json:"wait_p50_ms"`
	WaitP99MS Spread `json:"wait_p99_ms"`
	// Hottest is the name with the most grants (the first by name on a
	// tie) and HottestShare its share of all grants.
	Hottest      string  `json:"hottest"`
	HottestShare float64 `json:"hottest_share"`
}

// NameRow is one name's figures.
type NameRow struct {
	Name           string  `json:"name"`
	Acquisitions   int     `json:"acquisitions"`
	ThroughputPerS float64 `json:"throughput_per_s"`
	// AcquireMS is the name's acquire wait distribution, without its CDF
	// or samples.
	AcquireMS Latency `json:"acquire_ms"`
}

// Spread is a per-name figure's minimum, median and maximum over names.
type Spread struct {
	Min float64 `json:"min"`
	P50 float64 `json:"p50"`
	Max float64 `json:"max"`
}

// nameFigures computes Names from the run's acquires (nil for one name or
// none). It is linear in the acquires but for sorting each name's waits.
func nameFigures(acquires []check.Op, elapsed time.Duration) *Names {
	asked := map[string]bool{}
	grants := map[string]int{}
	waits := map[string][]int64{}
	for _, a := range acquires {
		asked[a.Lock] = true
		if a.Outcome != check.OutcomeOK {
			continue
		}
		grants[a.Lock]++
		if a.Invoke >= 0 {
			waits[a.Lock] = append(waits[a.Lock], a.To-a.From)
		}
	}
	if len(asked) <= 1 {
		return nil
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range asked {
			if !yield(n) {
				return
			}
		}
	})
	n := &Names{Count: len(names), Granted: len(grants)}
	total := 0
	var perGrants, p50s, p99s []float64
	for _, name := range names {
		g := grants[name]
		total += g
		perGrants = append(perGrants, float64(g))
		if g > grants[n.Hottest] || n.Hottest == "" {
			n.Hottest = name
		}
		if ws := waits[name]; len(ws) > 0 {
			// Sorted, not a histogram each: a run may have thousands of names.
			slices.Sort(ws)
			p50s, p99s = append(p50s, rankMS(ws, 0.50)), append(p99s, rankMS(ws, 0.99))
		}
		if len(names) <= MaxNamesListed {
			h := newHist()
			for _, w := range waits[name] {
				h.record(w)
			}
			l := h.latency()
			l.CDF, l.Samples = nil, nil
			row := NameRow{Name: name, Acquisitions: g, AcquireMS: l}
			if elapsed > 0 {
				row.ThroughputPerS = float64(g) / elapsed.Seconds()
			}
			n.PerName = append(n.PerName, row)
		}
	}
	n.Grants, n.WaitP50MS, n.WaitP99MS = spreadOf(perGrants), spreadOf(p50s), spreadOf(p99s)
	if total > 0 {
		n.HottestShare = float64(grants[n.Hottest]) / float64(total)
	}
	return n
}

// rankMS is the q quantile of the sorted nanoseconds ns (nearest rank),
// in ms.
func rankMS(ns []int64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(ns)))) - 1
	return float64(ns[max(i, 0)]) / 1e6
}

// spreadOf is xs' minimum, median (the lower middle of an even count) and
// maximum; zero for none.
func spreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := slices.Clone(xs)
	slices.SortFunc(s, cmp.Compare[float64])
	return Spread{Min: s[0], P50: s[(len(s)-1)/2], Max: s[len(s)-1]}
}

// NamesTable prints a many-names run's figures by name (Summary.Names):
// a row per name when it lists them, else their distribution over names.
// A one-name run prints nothing.
func NamesTable(w io.Writer, s Summary) error {
	n := s.Names
	if n == nil {
		return nil
	}
	if len(n.PerName) > 0 {
		t := newTable(w, "LRRRRR")
		t.Header("lock name", "acquisitions", "acq/s", "acquire p50 ms", "p99 ms", "max ms")
		for _, r := range n.PerName {
			a := r.AcquireMS
			row := []any{r.Name, fmt.Sprint(r.Acquisitions), fmt.Sprintf("%.1f", r.ThroughputPerS), "-", "-", "-"}
			if a.Count > 0 {
				row[3], row[4], row[5] = FormatMS(a.P50), FormatMS(a.P99), FormatMS(a.Max)
			}
			if err := t.Append(row...); err != nil {
				return err
			}
		}
		return t.Render()
	}
	t := newTable(w, "LRRR")
	t.Header(fmt.Sprintf("over %d names (%d granted)", n.Count, n.Granted), "min", "p50", "max")
	for _, r := range []struct {
		what string
		sp   Spread
		f    func(float64) string
	}{
		{"grants per name", n.Grants, func(x float64) string { return fmt.Sprint(int(x)) }},
		{"acquire p50 ms per name", n.WaitP50MS, FormatMS},
		{"acquire p99 ms per name", n.WaitP99MS, FormatMS},
	} {
		if err := t.Append(r.what, r.f(r.sp.Min), r.f(r.sp.P50), r.f(r.sp.Max)); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "hottest name: %s, %.0f%% of grants\n", n.Hottest, 100*n.HottestShare)
	return err
}
