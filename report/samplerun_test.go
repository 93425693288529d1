package report

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lockbench/lockbench/history"
)

// TestSampleRunFolder keeps testdata/run-violation, a run folder as the
// harness writes it (the default fixture: 8 clients, a fault, an exclusion
// violation), in step with the fixture; -update rewrites it. Other
// packages' tests use it: rundir's (loading and re-checking it) and
// cmd/lockbench's (the report command).
func TestSampleRunFolder(t *testing.T) {
	dir := filepath.Join("testdata", "run-violation")
	if *update {
		os.RemoveAll(dir)
		writeRunFolder(t, dir, defaultFixture())
	}
	ev, err := history.ReadFile(filepath.Join(dir, historyFile))
	if err != nil {
		t.Fatalf("%v (create it with: go test ./report -update)", err)
	}
	if want := defaultFixture().events(); !reflect.DeepEqual(ev, want) {
		t.Errorf("%s: %d events, not the fixture's %d (rewrite it with: go test ./report -run TestSampleRunFolder -update)", dir, len(ev), len(want))
	}
	s, err := ReadSuiteFile(filepath.Join(dir, summaryFile))
	if err != nil || len(s.Cells) != 1 || s.Cells[0].Lock != "queue" || s.Cells[0].Clients != 8 {
		t.Errorf("%s: %v %+v", summaryFile, err, s)
	}
	if _, err := os.Stat(filepath.Join(dir, configFile)); err != nil {
		t.Error(err)
	}
}
