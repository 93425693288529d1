// Package stats holds the few tests lockbench's regression check needs to
// tell a change from a noisy machine: Mann–Whitney U on timings, Fisher's
// exact test on failure counts, and Holm–Bonferroni over many of them; and
// the spread a bench reports beside a figure (StandardError).
// Every function is pure and needs no cluster.
package stats

import (
	"cmp"
	"math"
	"slices"
	"sort"
)

// ExactLimit is the largest len(a)×len(b) for which MannWhitney computes
// the exact null distribution; past it, it uses the normal approximation
// with tie and continuity corrections. Exact counts cost
// O(n1·n2·(n1+n2)); 400 keeps that small. With ties the exact
// distribution is the permutation distribution of the observed mid-ranks
// (as benchstat's, go-moremath's, is), for at most ExactTiedLimit values
// in all.
const ExactLimit = 400

// ExactTiedLimit is the most values (len(a)+len(b)) for which
// MannWhitney computes the exact distribution with ties: its cost grows
// with the square of the count.
const ExactTiedLimit = 60

// Median is the middle of xs (the mean of the two middle values for an
// even count); NaN for none. It does not modify xs.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// NearestRank is the q-quantile (0 < q ≤ 1) of sorted xs by nearest
// rank: an exact sample, never an interpolation, so a reported p99 is a
// wait that happened. The one nearest-rank implementation (report's
// distributions use HdrHistogram instead); the zero value for no samples.
func NearestRank[T cmp.Ordered](xs []T, q float64) T {
	if len(xs) == 0 {
		var zero T
		return zero
	}
	r := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(r, 0), len(xs)-1)]
}

// StandardError is the standard error of xs's mean: the sample standard
// deviation (n − 1) over √n; 0 for fewer than two values.
func StandardError(xs []float64) float64 {
	n := float64(len(xs))
	if n < 2 {
		return 0
	}
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= n
	ss := 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss/(n-1)) / math.Sqrt(n)
}

// MedianStandardError is the standard error of xs's median, by the
// normal approximation √(π/2) × StandardError: for a few noisy rounds, as
// the bench's paired medians are, it tells a target missed from one
// within the rounds' noise.
func MedianStandardError(xs []float64) float64 {
	return math.Sqrt(math.Pi/2) * StandardError(xs)
}

// MannWhitney is the two-sided Mann–Whitney U test of whether a and b come
// from the same distribution: no assumption of normality, so a few slow
// runs on a loaded machine do not dominate as they would a t-test. It
// returns U of a (the number of pairs with a above b, ties counting ½) and
// the p-value; p is 1 when either side is empty. Small samples get the
// exact p-value, ties or not (ExactLimit, ExactTiedLimit).
func MannWhitney(a, b []float64) (u, p float64) {
	n1, n2 := len(a), len(b)
	if n1 == 0 || n2 == 0 {
		return 0, 1
	}
	ranks, tieTerm := rank(append(slices.Clone(a), b...))
	r1 := 0.0
	for _, r := range ranks[:n1] {
		r1 += r
	}
	u = r1 - float64(n1*(n1+1))/2
	switch {
	case tieTerm == 0 && n1*n2 <= ExactLimit:
		return u, exactP(n1, n2, u)
	case n1*n2 <= ExactLimit && n1+n2 <= ExactTiedLimit:
		return u, exactTiedP(ranks, n1)
	}
	m, n := float64(n1), float64(n2)
	mean := m * n / 2
	nn := m + n
	variance := m * n / 12 * ((nn + 1) - tieTerm/(nn*(nn-1)))
	if variance <= 0 {
		return u, 1 // every value tied: no evidence of a difference
	}
	z := (math.Abs(u-mean) - 0.5) / math.Sqrt(variance)
	if z < 0 {
		z = 0
	}
	return u, math.Min(1, math.Erfc(z/math.Sqrt2))
}

// rank gives xs their ranks (1-based, ties sharing their mean rank) and
// the tie term Σ(t³−t) over groups of t tied values.
func rank(xs []float64) (ranks []float64, tieTerm float64) {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return xs[idx[i]] < xs[idx[j]] })
	ranks = make([]float64, len(xs))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && xs[idx[j+1]] == xs[idx[i]] {
			j++
		}
		r := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			ranks[idx[k]] = r
		}
		t := float64(j - i + 1)
		tieTerm += t*t*t - t
		i = j + 1
	}
	return ranks, tieTerm
}

// exactP is the two-sided p-value of U = u for samples of n1 and n2
// without ties: twice the smaller tail of U's exact null distribution.
func exactP(n1, n2 int, u float64) float64 {
	counts := uCounts(n1, n2)
	total := 0.0
	for _, c := range counts {
		total += c
	}
	k := int(math.Round(u))
	lo, hi := 0.0, 0.0
	for i, c := range counts {
		if i <= k {
			lo += c
		}
		if i >= k {
			hi += c
		}
	}
	return math.Min(1, 2*math.Min(lo, hi)/total)
}

// exactTiedP is the two-sided p-value of the rank sum of the first n1 of
// ranks (mid-ranks, ties sharing theirs) under the permutation
// distribution: every choice of n1 of the ranks as sample a is equally
// likely. Twice the smaller tail, as exactP. Ranks are whole or halves, so
// twice each is a whole number, and the counts are kept by that sum.
func exactTiedP(ranks []float64, n1 int) float64 {
	twice := make([]int, len(ranks))
	total, obs := 0, 0
	for i, r := range ranks {
		twice[i] = int(math.Round(2 * r))
		total += twice[i]
		if i < n1 {
			obs += twice[i]
		}
	}
	// ways[k][s]: choices of k of the ranks seen so far summing to s.
	ways := make([][]float64, n1+1)
	for k := range ways {
		ways[k] = make([]float64, total+1)
	}
	ways[0][0] = 1
	for i, t := range twice {
		for k := min(i+1, n1); k >= 1; k-- {
			for sum := total; sum >= t; sum-- {
				ways[k][sum] += ways[k-1][sum-t]
			}
		}
	}
	lo, hi, all := 0.0, 0.0, 0.0
	for sum, c := range ways[n1] {
		all += c
		if sum <= obs {
			lo += c
		}
		if sum >= obs {
			hi += c
		}
	}
	return math.Min(1, 2*math.Min(lo, hi)/all)
}

// uCounts[u] is how many of the C(n1+n2, n1) orderings give U = u, by the
// recurrence f(m, n) = f(m−1, n) shifted by n + f(m, n−1).
func uCounts(n1, n2 int) []float64 {
	// f[m][n] as slices of counts; build row by row.
	prev := make([][]float64, n2+1) // m−1
	for n := range prev {
		prev[n] = []float64{1} // m = 0: U = 0 once
	}
	for m := 1; m <= n1; m++ {
		cur := make([][]float64, n2+1)
		cur[0] = []float64{1} // n = 0: U = 0 once
		for n := 1; n <= n2; n++ {
			c := make([]float64, m*n+1)
			for u, v := range prev[n] { // the largest value is from a: U gains n
				c[u+n] += v
			}
			for u, v := range cur[n-1] { // the largest is from b
				c[u] += v
			}
			cur[n] = c
		}
		prev = cur
	}
	return prev[n2]
}

// FisherGreater is the one-sided Fisher exact test of whether the failure
// rate of the second group (fail2 of n2) exceeds the first's (fail1 of
// n1): the probability, with the margins fixed, of fail2 or more failures
// in the second group. A flaky check's failures in both runs then need a
// real rise in rate to count, not one unlucky sample.
func FisherGreater(fail1, n1, fail2, n2 int) float64 {
	if n1 <= 0 || n2 <= 0 || fail1 < 0 || fail2 < 0 || fail1 > n1 || fail2 > n2 {
		return 1
	}
	total, fails := n1+n2, fail1+fail2
	p := 0.0
	for k := fail2; k <= min(fails, n2); k++ {
		p += math.Exp(logChoose(fails, k) + logChoose(total-fails, n2-k) - logChoose(total, n2))
	}
	return math.Min(1, p)
}

func logChoose(n, k int) float64 {
	if k < 0 || k > n {
		return math.Inf(-1)
	}
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// Holm applies the Holm–Bonferroni step-down procedure at level alpha to
// ps: reject[i] says whether ps[i] stays significant once the family of
// len(ps) tests is accounted for. Many cells × metrics at α each would
// otherwise flag some change on every run by chance alone.
func Holm(ps []float64, alpha float64) []bool {
	idx := make([]int, len(ps))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return ps[idx[i]] < ps[idx[j]] })
	reject := make([]bool, len(ps))
	m := len(ps)
	for k, i := range idx {
		if !(ps[i] <= alpha/float64(m-k)) {
			break
		}
		reject[i] = true
	}
	return reject
}
