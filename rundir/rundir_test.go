package rundir

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
)

// sampleDir is a run folder as the harness writes it (8 clients, a fault,
// an exclusion violation), kept in step by report's TestSampleRunFolder.
var sampleDir = filepath.Join("..", "report", "testdata", "run-violation")

// copySample copies the sample run folder to a temporary folder.
func copySample(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ConfigFile, HistoryFile, SummaryFile} {
		b, err := os.ReadFile(filepath.Join(sampleDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestSampleRunFolder: the sample folder loads and re-checks to its known
// violation, with its identity from the folder.
func TestSampleRunFolder(t *testing.T) {
	f, err := Load(sampleDir)
	if err != nil {
		t.Fatalf("%v (create it with: go test ./report -update)", err)
	}
	s := f.Recheck()
	if s.Verdict != verdict.Fail || s.Checks[verdict.Exclusion].Count == 0 {
		t.Errorf("the sample run has no exclusion violation: %s", s.Verdict)
	}
	if s.Clients != 8 || s.Lock != "queue" || s.RunID == "" {
		t.Errorf("identity from the folder: %+v", s)
	}
}

func TestLoadErrors(t *testing.T) {
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
		_, err := Load(tc.dir)
		if !errors.Is(err, ErrNotRunFolder) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%s) = %v, want ErrNotRunFolder saying %q", tc.dir, err, tc.want)
		}
	}
	// A run folder with a broken file is a run folder, and names the file.
	for name, content := range map[string]string{
		HistoryFile: "{\"time\":1}\n",
		ConfigFile:  `{"scenario":{"lease_ttl":"junk"}}`,
		SummaryFile: `{"verdict":`,
	} {
		bad := copySample(t)
		os.WriteFile(filepath.Join(bad, name), []byte(content), 0o644)
		if _, err := Load(bad); err == nil || errors.Is(err, ErrNotRunFolder) || !strings.Contains(err.Error(), name) {
			t.Errorf("broken %s: %v", name, err)
		}
	}
}

// TestConfigCheckOptions: the liveness bound is the lease TTL plus the
// election timeout, each defaulted when config.json lacks it; durations
// read as text, nanoseconds or "".
func TestConfigCheckOptions(t *testing.T) {
	for _, tc := range []struct {
		cfg  string
		want time.Duration
	}{
		{`{}`, check.DefaultLivenessBound},
		{`{"scenario":{"lease_ttl":"10s"},"cluster":{"election_ms":1000}}`, 11 * time.Second},
		{`{"scenario":{"lease_ttl":2000000000}}`, 2*time.Second + check.DefaultElectionTimeout},
		{`{"scenario":{"lease_ttl":""}}`, check.DefaultLivenessBound},
	} {
		var c Config
		if err := json.Unmarshal([]byte(tc.cfg), &c); err != nil {
			t.Fatalf("%s: %v", tc.cfg, err)
		}
		f := &Folder{Config: c}
		if got := f.CheckOptions().LivenessBound; got != tc.want {
			t.Errorf("%s: liveness bound %s, want %s", tc.cfg, got, tc.want)
		}
	}
	var c Config
	if err := json.Unmarshal([]byte(`{"run_id":"r","lock":"l","seed":7,"scenario":{"name":"s","clients":3}}`), &c); err != nil {
		t.Fatal(err)
	}
	f := &Folder{Config: c, Saved: report.Summary{DurationS: 1.5}}
	r := f.Run()
	if r.ID != "r" || r.Lock != "l" || r.Scenario != "s" || r.Clients != 3 || r.Seed != 7 || r.Elapsed != 1500*time.Millisecond {
		t.Errorf("run from config: %+v", r)
	}
}

// TestConfigJSONNames keeps config.json's field names: they are a
// contract that scripts read.
func TestConfigJSONNames(t *testing.T) {
	b, err := json.Marshal(Config{SharedConns: 1, Cluster: ClusterConfig{External: true, TLS: true, CACert: "c", Cert: "c", Key: "k", User: "u", Version: "v"}})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"run_id", "lock", "scenario", "seed", "keepalive", "rpc_timeout_ms", "shared_conns", "prefix", "cluster", "started", "go_version", "host"} {
		if _, ok := m[k]; !ok {
			t.Errorf("config.json lacks %q: %s", k, b)
		}
	}
	cl := m["cluster"].(map[string]any)
	for _, k := range []string{"members", "tick_ms", "election_ms", "unsafe_no_fsync", "endpoints", "external", "tls", "cacert", "cert", "key", "user", "etcd_version"} {
		if _, ok := cl[k]; !ok {
			t.Errorf("config.json's cluster lacks %q: %s", k, b)
		}
	}
	for _, k := range []string{"cpus", "os", "arch"} {
		if _, ok := m["host"].(map[string]any)[k]; !ok {
			t.Errorf("config.json's host lacks %q", k)
		}
	}
}

// TestWriteLoad: a run folder written by Write loads back as written, and
// no staging folder is left behind.
func TestWriteLoad(t *testing.T) {
	sample, err := Load(sampleDir)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenarios.Lookup("contention")
	if err != nil {
		t.Fatal(err)
	}
	sc.LeaseTTL = scenarios.Duration(3 * time.Second)
	cfg := Config{RunID: "20260101T000000.000Z-queue-contention-s1", Lock: "queue", Scenario: sc, Seed: 1, KeepAlive: "auto",
		Prefix: "/lockbench/x/", Cluster: ClusterConfig{Members: 3, TickMS: 50, ElectionMS: 500, Endpoints: []string{"http://a"}},
		Started: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), GoVersion: "go1", Host: ThisHost()}
	parent := filepath.Join(t.TempDir(), "runs")
	dir, err := Write(parent, cfg, sample.Events, sample.Saved)
	if err != nil {
		t.Fatal(err)
	}
	if dir != filepath.Join(parent, cfg.RunID) {
		t.Errorf("dir %s", dir)
	}
	entries, _ := os.ReadDir(parent)
	if len(entries) != 1 {
		t.Errorf("%d entries under the parent, want the run folder only", len(entries))
	}
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(t, back.Config), mustJSON(t, cfg); a != b {
		t.Errorf("config.json round trip:\n got %+v\nwant %+v", back.Config, cfg)
	}
	if !reflect.DeepEqual(back.Events, sample.Events) || back.Saved.Verdict != sample.Saved.Verdict {
		t.Error("history or summary differ after the round trip")
	}
	if got, want := back.CheckOptions().LivenessBound, 3500*time.Millisecond; got != want {
		t.Errorf("liveness bound %s, want %s", got, want)
	}
	page, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil || !bytes.Contains(page, []byte(`class="lane"`)) {
		t.Errorf("%s: %v", HTMLFile, err)
	}
	if _, err := Write(parent, cfg, sample.Events, sample.Saved); err == nil {
		t.Error("a second Write over the same run folder succeeded")
	}
	if _, err := Write(parent, Config{}, nil, report.Summary{}); err == nil {
		t.Error("Write without a run id succeeded")
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, HistoryFile)
	events := []history.Event{{Time: 1, Process: 0, Type: history.OK, F: history.FWakeup}}
	if err := WriteFile(path, func(w io.Writer) error { return history.Write(w, events) }); err != nil {
		t.Fatal(err)
	}
	got, err := history.ReadFile(path)
	if err != nil || !reflect.DeepEqual(got, events) {
		t.Fatalf("ReadFile = %+v, %v", got, err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v", st.Mode(), err)
	}
	// A failed render leaves the previous file alone, and nothing else.
	boom := errors.New("boom")
	err = WriteFile(path, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
		t.Errorf("render error: %v", err)
	}
	if got, err := history.ReadFile(path); err != nil || !reflect.DeepEqual(got, events) {
		t.Errorf("previous file changed: %+v, %v", got, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "h.jsonl"), func(io.Writer) error { return nil }); err == nil {
		t.Error("WriteFile into a missing folder succeeded")
	}
	if err := WriteJSON(filepath.Join(dir, "x.json"), map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "x.json")); string(b) != "{\n  \"a\": 1\n}\n" {
		t.Errorf("WriteJSON wrote %q", b)
	}
	if err := WriteJSON(filepath.Join(dir, "y.json"), func() {}); err == nil {
		t.Error("WriteJSON of a func succeeded")
	}
}

// TestHTMLPages: the HTML pages are written through WriteFile, and the
// suite page links to each cell's run page by this package's file name.
func TestHTMLPages(t *testing.T) {
	sample, err := Load(sampleDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := filepath.Join(dir, HTMLFile)
	if err := WriteFile(run, func(w io.Writer) error { return report.WriteRunHTML(w, sample.Config, sample.Events, sample.Saved) }); err != nil {
		t.Fatal(err)
	}
	suite := filepath.Join(dir, "suite.html")
	cells := []report.Cell{{Summary: sample.Saved, Dir: "cell-1"}}
	if err := WriteFile(suite, func(w io.Writer) error { return report.WriteSuiteHTML(w, cells) }); err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(suite)
	if !bytes.Contains(page, []byte("cell-1/"+HTMLFile)) {
		t.Errorf("the suite page does not link to cell-1/%s", HTMLFile)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
