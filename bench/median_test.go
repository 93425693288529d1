package bench

import "testing"

// TestMedianOrZero: bench.json's figures take 0 for
// none, where a NaN would not encode.
func TestMedianOrZero(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{}, 0}, {[]float64{3}, 3}, {[]float64{4, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := medianOrZero(tc.xs); got != tc.want {
			t.Errorf("medianOrZero(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}
