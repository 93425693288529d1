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

	"github.com/lockbench/lockbench/history"
)

// sampleDir is a run folder as the harness writes it (8 clients, a fault,
// an exclusion violation), kept in step by report's TestSampleRunFolder (go test ./report -update).
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
		ConfigFile:  `{"seed":"junk"}`,
		SummaryFile: `{"verdict":`,
	} {
		bad := copySample(t)
		os.WriteFile(filepath.Join(bad, name), []byte(content), 0o644)
		if _, err := Load(bad); err == nil || errors.Is(err, ErrNotRunFolder) || !strings.Contains(err.Error(), name) {
			t.Errorf("broken %s: %v", name, err)
		}
	}
}

// TestConfigJSONNames keeps config.json's field names: they are a
// contract that scripts read. Every key of the sample folder's
// config.json (written before the run identity became one record) must
// survive a load and a write, at every depth.
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
	old, err := os.ReadFile(filepath.Join(sampleDir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var c Config
	if err := json.Unmarshal(old, &c); err != nil {
		t.Fatal(err)
	}
	missing := MissingKeys(old, []byte(mustJSON(t, c)))
	if len(missing) > 0 {
		t.Errorf("config.json keys lost in a load and write: %v", missing)
	}
}

// TestWriteLoad: a run folder written by Write loads back as written, and
// no staging folder is left behind; a second Write over it, or one
// without a run id, fails.
func TestWriteLoad(t *testing.T) {
	sample, err := Load(sampleDir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Run: Run{RunID: "20260101T000000.000Z-queue-contention-s1", Lock: "queue", Seed: 1, KeepAlive: "auto"},
		Scenario: json.RawMessage(`{"name":"contention","clients":8,"lease_ttl":"3s"}`),
		Prefix:   "/lockbench/x/", Cluster: ClusterConfig{Members: 3, TickMS: 50, ElectionMS: 500, Endpoints: []string{"http://a"}},
		Started: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), GoVersion: "go1", Host: ThisHost()}
	files := []File{
		JSONFile(ConfigFile, cfg),
		{Name: HistoryFile, Render: func(w io.Writer) error { return history.Write(w, sample.Events) }},
		{Name: SummaryFile, Render: func(w io.Writer) error { _, err := w.Write(sample.Summary); return err }},
		{Name: HTMLFile, Render: func(w io.Writer) error { _, err := io.WriteString(w, "<html>"); return err }},
	}
	parent := filepath.Join(t.TempDir(), "runs")
	dir, err := Write(parent, cfg.RunID, files...)
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
		t.Errorf("config.json round trip:\n got %s\nwant %s", a, b)
	}
	if !reflect.DeepEqual(back.Events, sample.Events) || !bytes.Equal(back.Summary, sample.Summary) {
		t.Error("history or summary differ after the round trip")
	}
	if _, err := Write(parent, cfg.RunID, files...); err == nil {
		t.Error("a second Write over the same run folder succeeded")
	}
	boom := errors.New("boom")
	if _, err := Write(parent, "other", File{Name: ConfigFile, Render: func(io.Writer) error { return boom }}); !errors.Is(err, boom) {
		t.Errorf("a failed render: %v", err)
	}
	if _, err := os.Stat(filepath.Join(parent, "other")); err == nil {
		t.Error("a failed Write left a run folder")
	}
	if _, err := Write(parent, "", files...); err == nil {
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

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
