package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/verdict"
)

// TestSampleRunFolder keeps testdata/run-violation, a run folder as the
// harness writes it (the default fixture: 8 clients, a fault, an exclusion
// violation), in step with the code; -update rewrites it. Other packages'
// tests (cmd/lockbench) use it.
func TestSampleRunFolder(t *testing.T) {
	dir := filepath.Join("testdata", "run-violation")
	if *update {
		os.RemoveAll(dir)
		writeRunFolder(t, dir, defaultFixture())
	}
	rf, err := LoadRun(dir)
	if err != nil {
		t.Fatalf("%v (create it with: go test ./report -update)", err)
	}
	s := rf.Recheck()
	if s.Verdict != verdict.Fail || s.Checks[verdict.Exclusion].Count == 0 {
		t.Errorf("the sample run has no exclusion violation: %s", s.Verdict)
	}
	if s.Clients != 8 || s.Lock != "queue" || s.RunID == "" {
		t.Errorf("identity from the folder: %+v", s)
	}
}

func TestLoadRunErrors(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "f")
	os.WriteFile(file, []byte("x"), 0o644)
	partial := filepath.Join(tmp, "partial")
	os.MkdirAll(partial, 0o755)
	os.WriteFile(filepath.Join(partial, ConfigFile), []byte("{}"), 0o644)
	tests := []struct{ dir, want string }{
		{filepath.Join(tmp, "nope"), "no such folder"},
		{file, "it is a file"},
		{tmp, "no config.json, history.jsonl or summary.json"},
		{partial, "no history.jsonl or summary.json"},
	}
	for _, tc := range tests {
		_, err := LoadRun(tc.dir)
		if !errors.Is(err, ErrNotRunFolder) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadRun(%s) = %v, want ErrNotRunFolder saying %q", tc.dir, err, tc.want)
		}
	}
	// A run folder with a broken file is a run folder, and names the file.
	bad, _, _ := writeRunFolder(t, filepath.Join(tmp, "bad"), defaultFixture())
	os.WriteFile(filepath.Join(bad, HistoryFile), []byte("{\"time\":1}\n"), 0o644)
	if _, err := LoadRun(bad); err == nil || errors.Is(err, ErrNotRunFolder) || !strings.Contains(err.Error(), HistoryFile) {
		t.Errorf("broken history: %v", err)
	}
}

func TestRunFolderConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  string
		want time.Duration
	}{
		{`{}`, check.DefaultLivenessBound},
		{`{"scenario":{"lease_ttl":"10s"},"cluster":{"election_ms":1000}}`, 11 * time.Second},
		{`{"scenario":{"lease_ttl":2000000000}}`, 2*time.Second + check.DefaultElectionTimeout},
		{`{"scenario":{"lease_ttl":"junk"}}`, check.DefaultLivenessBound},
	} {
		rf := &RunFolder{Config: []byte(tc.cfg)}
		if got := rf.CheckOptions().LivenessBound; got != tc.want {
			t.Errorf("%s: liveness bound %s, want %s", tc.cfg, got, tc.want)
		}
	}
	rf := &RunFolder{Config: []byte(`{"run_id":"r","lock":"l","seed":7,"scenario":{"name":"s","clients":3}}`),
		Saved: Summary{DurationS: 1.5}}
	r := rf.Run()
	if r.ID != "r" || r.Lock != "l" || r.Scenario != "s" || r.Clients != 3 || r.Seed != 7 || r.Elapsed != 1500*time.Millisecond {
		t.Errorf("run from config: %+v", r)
	}
}
