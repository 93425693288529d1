package verdict

import "testing"

func TestParseOrder(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Order
		ok   bool
	}{
		{"fifo", FIFO, true}, {"none", NoOrder, true}, {"", "", false}, {"FIFO", "", false}, {"lifo", "", false},
	} {
		got, err := ParseOrder(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseOrder(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
