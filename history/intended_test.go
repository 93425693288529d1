package history

import (
	"encoding/json"
	"testing"
)

func TestParseIntended(t *testing.T) {
	tests := []struct {
		v  string
		ns int64
		ok bool
	}{
		{string(IntendedValue(1234567)), 1234567, true},
		{string(IntendedValue(0)), 0, true},
		{`{ "intended" : 42 }`, 42, true},
		{`{"intended":42,"other":1}`, 42, true},
		{`{"intended":-5}`, 0, false},
		{`{"intended":"5"}`, 0, false},
		{`{"fault":"x"}`, 0, false},
		{`7`, 0, false},
		{``, 0, false},
		{`{"intended":}`, 0, false},
	}
	for _, tt := range tests {
		ns, ok := ParseIntended(json.RawMessage(tt.v))
		if ns != tt.ns || ok != tt.ok {
			t.Errorf("ParseIntended(%s) = %d, %v; want %d, %v", tt.v, ns, ok, tt.ns, tt.ok)
		}
	}
}

func FuzzParseIntended(f *testing.F) {
	f.Add([]byte(IntendedValue(99)))
	f.Add([]byte(`{"intended":1e3}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ns, ok := ParseIntended(b)
		if ok && ns < 0 {
			t.Fatalf("ParseIntended(%q) = %d: negative accepted", b, ns)
		}
		if ok {
			// The fast path and encoding/json agree.
			var w struct {
				IntendedNS *int64 `json:"intended"`
			}
			if json.Unmarshal(b, &w) != nil || w.IntendedNS == nil || *w.IntendedNS != ns {
				t.Fatalf("ParseIntended(%q) = %d, encoding/json says %v", b, ns, w.IntendedNS)
			}
		}
	})
}
