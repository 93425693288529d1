package scenarios

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestOpenLoopWorkloadParses(t *testing.T) {
	tests := []struct {
		yaml     string
		rate     float64
		arrivals string
	}{
		{"workload: {kind: hold, rate: 200/s}", 200, ArrivalsUniform},
		{"workload: {kind: hold, rate: 0.5/s, arrivals: poisson}", 0.5, ArrivalsPoisson},
		{"workload: {kind: counter, rate: 12.5 /s, arrivals: uniform}", 12.5, ArrivalsUniform},
		{"workload: {kind: hold}", 0, ArrivalsUniform},
	}
	for _, tt := range tests {
		s, err := Parse("r.yaml", strings.NewReader("name: r\nclients: 4\nduration: 2s\n"+tt.yaml+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", tt.yaml, err)
		}
		w := s.Workload
		if w.Rate.PerS() != tt.rate || w.ArrivalKind() != tt.arrivals || w.OpenLoop() != (tt.rate > 0) {
			t.Errorf("%s: rate %v arrivals %s open %v, want %v %s", tt.yaml, w.Rate, w.ArrivalKind(), w.OpenLoop(), tt.rate, tt.arrivals)
		}
	}
}

func TestOpenLoopWorkloadErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"no unit", "workload: {kind: hold, rate: 200}", []string{"r.yaml", "line 4", `rate "200"`, "e.g. 200/s"}},
		{"per minute", "workload: {kind: hold, rate: 200/m}", []string{"line 4", "/s"}},
		{"zero", "workload: {kind: hold, rate: 0/s}", []string{`rate "0/s"`, "must be > 0/s"}},
		{"negative", "workload: {kind: hold, rate: -5/s}", []string{"must be > 0/s"}},
		{"too high", "workload: {kind: hold, rate: 1e7/s}", []string{"≤ 1000000/s"}},
		{"not a number", "workload: {kind: hold, rate: fast/s}", []string{`rate "fast/s"`}},
		{"NaN", "workload: {kind: hold, rate: NaN/s}", []string{`rate "NaN/s"`}},
		{"arrivals without rate", "workload: {kind: hold, arrivals: poisson}", []string{"r.yaml", `arrivals "poisson"`, "give rate too"}},
		{"unknown arrivals", "workload: {kind: hold, rate: 5/s, arrivals: bursty}", []string{`arrivals "bursty"`, "uniform, poisson"}},
		{"think with rate", "workload: {kind: hold, rate: 5/s, think: 10ms}", []string{"think 10ms", "closed-loop"}},
		{"unknown key names the new ones", "workload: {kind: hold, rates: 5/s}", []string{"rates", "rate, arrivals"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("r.yaml", strings.NewReader("name: r\nclients: 4\nduration: 2s\n"+tt.yaml+"\n"))
			if err == nil {
				t.Fatal("parsed")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// A scenario without a rate encodes as before (its hash, which names the
// definition in baselines, does not move), and one with a rate survives
// config.json's round trip.
func TestRateJSON(t *testing.T) {
	b, err := json.Marshal(Workload{Kind: WorkloadHold})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "rate") || strings.Contains(string(b), "arrivals") {
		t.Errorf("closed-loop workload encodes %s: want no rate or arrivals key", b)
	}
	w := Workload{Kind: WorkloadHold, Rate: 250.5, Arrivals: ArrivalsPoisson}
	if b, err = json.Marshal(w); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"rate":"250.5/s"`) {
		t.Errorf("encoded %s: want \"rate\":\"250.5/s\"", b)
	}
	var back Workload
	if err := json.Unmarshal(b, &back); err != nil || back != w {
		t.Errorf("round trip: %+v, %v; want %+v", back, err, w)
	}
	if err := json.Unmarshal([]byte(`{"kind":"hold","rate":"x"}`), &back); err == nil {
		t.Error(`rate "x" decoded`)
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"200/s", "0.5/s", "0/s", "1e6/s", "/s", "-1/s", "Inf/s", "200"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			return
		}
		if r <= 0 || r > MaxRate {
			t.Fatalf("ParseRate(%q) = %v: outside (0, MaxRate]", s, r)
		}
		back, err := ParseRate(r.String())
		if err != nil || back != r {
			t.Fatalf("ParseRate(%q) = %v, reparsed %v, %v", s, r, back, err)
		}
	})
}
