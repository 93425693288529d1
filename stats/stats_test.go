package stats

import (
	"math"
	"math/bits"
	"slices"
	"testing"
)

func near(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.10g, want %.10g (±%g)", name, got, want, tol)
	}
}

func TestMedian(t *testing.T) {
	near(t, "odd", Median([]float64{3, 1, 2}), 2, 0)
	near(t, "even", Median([]float64{4, 1, 3, 2}), 2.5, 0)
	if !math.IsNaN(Median(nil)) {
		t.Error("Median(nil) is not NaN")
	}
}

// Known values: scipy.stats.mannwhitneyu's documented example (males vs
// females: U = 17, exact p = 0.1111…, asymptotic p = 0.11134688653314041)
// and complete separations, whose exact p is 2 / C(n1+n2, n1).
func TestStandardError(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 0},
		{[]float64{3, 3, 3}, 0},
		// mean 5, sample variance (9+1+1+9)/3 = 20/3, over n = 4.
		{[]float64{2, 4, 6, 8}, math.Sqrt(20.0/3) / 2},
	} {
		if got := StandardError(tc.xs); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("StandardError(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}

func TestMedianStandardError(t *testing.T) {
	xs := []float64{2, 4, 6, 8}
	if got, want := MedianStandardError(xs), math.Sqrt(math.Pi/2)*StandardError(xs); math.Abs(got-want) > 1e-12 || got <= StandardError(xs) {
		t.Errorf("MedianStandardError = %v, want %v", got, want)
	}
}

func TestMannWhitneyKnownValues(t *testing.T) {
	males := []float64{19, 22, 16, 29, 24}
	females := []float64{20, 11, 17, 12}
	u, p := MannWhitney(males, females)
	near(t, "U", u, 17, 0)
	near(t, "exact p", p, 1.0/9, 1e-12)

	u, p = MannWhitney([]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10})
	near(t, "U separated", u, 0, 0)
	near(t, "p separated 5/5", p, 2.0/252, 1e-12)
	_, p = MannWhitney([]float64{6, 7, 8, 9, 10}, []float64{1, 2, 3, 4, 5})
	near(t, "p separated reversed", p, 2.0/252, 1e-12)
	_, p = MannWhitney([]float64{1.1, 2.2, 3.3, 4.4}, []float64{5.5, 6.6, 7.7, 8.8, 9.9})
	near(t, "p separated 4/5", p, 2.0/126, 1e-12)
}

func TestMannWhitneyNormalApproximation(t *testing.T) {
	// Small samples with ties get the exact permutation p-value (before,
	// the normal approximation's 0.1366582 with tie correction):
	// a = 1,2,2,3; b = 2,3,4,5: ranks 1, 3,3,3, 5.5,5.5, 7, 8; R1 = 12.5,
	// U = 2.5; 7 of the 70 splits have a rank sum ≤ 12.5: p = 2·7/70.
	u, p := MannWhitney([]float64{1, 2, 2, 3}, []float64{2, 3, 4, 5})
	near(t, "U ties", u, 2.5, 0)
	near(t, "p ties", p, 0.2, 1e-12)
	near(t, "p ties, enumerated", p, bruteForceP([]float64{1, 2, 2, 3}, []float64{2, 3, 4, 5}), 1e-12)

	// scipy's documented asymptotic p for the males/females example, from
	// the same formula without ties.
	m, n := 5.0, 4.0
	z := (math.Abs(17-m*n/2) - 0.5) / math.Sqrt(m*n*(m+n+1)/12)
	near(t, "scipy asymptotic", math.Erfc(z/math.Sqrt2), 0.11134688653314041, 1e-12)

	// All tied: no evidence either way.
	_, p = MannWhitney([]float64{1, 1, 1}, []float64{1, 1, 1})
	near(t, "all tied", p, 1, 0)
	_, p = MannWhitney(nil, []float64{1})
	near(t, "empty", p, 1, 0)
}

func TestMannWhitneyLargeSamplesUseApproximation(t *testing.T) {
	var a, b []float64
	for i := range 30 {
		a = append(a, float64(i))
		b = append(b, float64(i)+0.5)
	}
	_, p := MannWhitney(a, b) // 900 > ExactLimit
	if p < 0.5 || p > 1 {
		t.Errorf("interleaved samples: p = %g, want large", p)
	}
	for i := range b {
		b[i] += 100
	}
	if _, p := MannWhitney(a, b); p > 1e-9 {
		t.Errorf("separated samples of 30: p = %g, want tiny", p)
	}
}

// uCounts must sum to C(n1+n2, n1) and be symmetric.
func TestUCounts(t *testing.T) {
	c := uCounts(4, 5)
	sum := 0.0
	for i, v := range c {
		sum += v
		if v != c[len(c)-1-i] {
			t.Fatalf("not symmetric at %d: %v", i, c)
		}
	}
	near(t, "total", sum, 126, 0)
}

// Known values: Fisher's lady tasting tea (3 of 4 vs 1 of 4: one-sided
// p = 17/70) and extreme tables.
func TestFisherGreater(t *testing.T) {
	near(t, "tea", FisherGreater(1, 4, 3, 4), 17.0/70, 1e-12)
	near(t, "0/10 vs 10/10", FisherGreater(0, 10, 10, 10), 1/184756.0, 1e-15)
	near(t, "0/5 vs 1/5", FisherGreater(0, 5, 1, 5), 0.5, 1e-12)
	near(t, "no failures", FisherGreater(0, 5, 0, 5), 1, 1e-12)
	near(t, "fewer failures", FisherGreater(3, 5, 0, 5), 1, 1e-12)
	near(t, "bad input", FisherGreater(6, 5, 0, 5), 1, 0)
}

func TestHolm(t *testing.T) {
	got := Holm([]float64{0.01, 0.04, 0.03, 0.005}, 0.05)
	want := []bool{true, false, false, true}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Holm = %v, want %v", got, want)
		}
	}
	// Bonferroni's first step: with 10 tests, 0.006 is not enough.
	ps := []float64{0.006, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}
	if Holm(ps, 0.05)[0] {
		t.Error("0.006 among 10 tests rejected")
	}
	if len(Holm(nil, 0.05)) != 0 {
		t.Error("Holm(nil) not empty")
	}
	if Holm([]float64{math.NaN()}, 0.05)[0] {
		t.Error("NaN rejected")
	}
}

// TestMannWhitneyExactWithTies: with ties, small samples get the exact
// permutation p-value of their mid-ranks, which a brute-force enumeration
// of every split confirms, not the normal approximation.
func TestMannWhitneyExactWithTies(t *testing.T) {
	for _, tc := range [][2][]float64{
		{{1, 1, 1, 1}, {2, 2, 2, 2}},
		{{1, 2, 2, 3}, {2, 4, 5, 6}},
		{{5, 5, 6, 7, 7}, {5, 6, 6, 8}},
		{{3, 3, 3}, {3, 3, 3}},
	} {
		a, b := tc[0], tc[1]
		_, p := MannWhitney(a, b)
		if want := bruteForceP(a, b); math.Abs(p-want) > 1e-12 {
			t.Errorf("MannWhitney(%v, %v) p = %g, enumeration gives %g", a, b, p, want)
		}
	}
	// Four against four, all apart by a tie-free gap or tied within: the
	// smallest two-sided p of 4 vs 4 is 2/C(8,4).
	if _, p := MannWhitney([]float64{1, 1, 1, 1}, []float64{2, 2, 2, 2}); math.Abs(p-2.0/70) > 1e-12 {
		t.Errorf("p = %g, want 2/70", p)
	}
}

// bruteForceP enumerates every choice of len(a) of the pooled values as
// sample a and counts rank sums at or beyond the observed one, each tail.
func bruteForceP(a, b []float64) float64 {
	ranks, _ := rank(append(slices.Clone(a), b...))
	n, n1 := len(ranks), len(a)
	obs := 0.0
	for _, r := range ranks[:n1] {
		obs += r
	}
	lo, hi, all := 0.0, 0.0, 0.0
	for mask := 0; mask < 1<<n; mask++ {
		if bits.OnesCount(uint(mask)) != n1 {
			continue
		}
		s := 0.0
		for i := range n {
			if mask&(1<<i) != 0 {
				s += ranks[i]
			}
		}
		all++
		if s <= obs+1e-9 {
			lo++
		}
		if s >= obs-1e-9 {
			hi++
		}
	}
	return math.Min(1, 2*math.Min(lo, hi)/all)
}

func TestNearestRank(t *testing.T) {
	xs := make([]int64, 100)
	for i := range xs {
		xs[i] = int64(i + 1)
	}
	for _, tc := range []struct {
		q    float64
		want int64
	}{{0.5, 50}, {0.99, 99}, {1, 100}, {0, 1}} {
		if got := NearestRank(xs, tc.q); got != tc.want {
			t.Errorf("NearestRank(1..100, %v) = %d, want %d", tc.q, got, tc.want)
		}
	}
	if got := NearestRank([]int64{7}, 0.99); got != 7 {
		t.Errorf("NearestRank([7]) = %d", got)
	}
}
