package suite

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/scenarios"
)

// A version matrix's header and interruption record key every cell by its
// binary's release, so compare and regress never mix two releases' cells.
func TestSuiteMetaKeysByBinary(t *testing.T) {
	s := metaSpec(t)
	bins := []suiteBin{{etcd: "self", version: "3.7.3"}, {etcd: "/usr/bin/etcd", version: "3.4.23"}}
	h := s.header(bins)
	for _, k := range []string{"queue/holder-crash/etcd=3.7.3", "queue/holder-crash/etcd=3.4.23"} {
		if len(h.Expected[k]) == 0 {
			t.Errorf("no expectations for %s: %v", k, slices.Sorted(maps.Keys(h.Expected)))
		}
	}
	if _, ok := h.Expected["queue/holder-crash"]; ok {
		t.Error("an unkeyed cell in a version matrix")
	}
	r := &Result{Header: h}
	for range 3 {
		r.Cells = append(r.Cells, report.Cell{Summary: report.Summary{Run: rundir.Run{Lock: "queue", Etcd: "self", EtcdVersion: "3.7.3"}, Scenario: "contention"}})
	}
	r.markInterrupted(s, bins, nil)
	if slices.Contains(r.Header.NotRun, "queue/contention/etcd=3.7.3") || !slices.Contains(r.Header.NotRun, "queue/contention/etcd=3.4.23") {
		t.Errorf("not run %v: want queue/contention done on 3.7.3 only", r.Header.NotRun)
	}
}

// A bad binary list is refused before the suite's folder exists.
func TestSuiteRefusesBadEtcdBins(t *testing.T) {
	out := t.TempDir()
	s := metaSpec(t)
	s.Out, s.InjectDelay = out, nil
	for _, bins := range [][]string{{"self", "self"}, {"self", "/bin/true"}} {
		s.EtcdBins = bins
		if _, err := Run(context.Background(), s); err == nil {
			t.Errorf("%v accepted", bins)
		}
		if left, _ := os.ReadDir(out); len(left) > 0 {
			t.Errorf("%v: left %v in --out", bins, left)
		}
	}
}

// matrixSuite runs queue × contention (1 s) on each binary of bins.
func matrixSuite(t *testing.T, bins ...string) (*Result, string) {
	t.Helper()
	sc, err := scenarios.Lookup("contention")
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	res, err := Run(context.Background(), Spec{Locks: []string{"queue"}, Scenarios: []scenarios.Scenario{sc}, Seeds: 1,
		EtcdBins: bins, QuickDuration: time.Second, FloorDuration: -1, Out: t.TempDir(),
		Cluster: cluster.Options{DataParent: data}})
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(data); len(left) > 0 {
		t.Errorf("left in the data parent: %v", left)
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "suite.json"))
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

// A matrix of one binary, self: no external etcd needed. Each cell records
// the binary and its release, and is keyed by the release.
func TestSuiteMatrixSelf(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd member processes")
	}
	res, js := matrixSuite(t, cluster.EtcdBinSelf)
	if len(res.Cells) != 1 {
		t.Fatalf("%d cells, want 1", len(res.Cells))
	}
	s := res.Cells[0].Summary
	if s.Etcd != "self" || s.EtcdVersion != cluster.EmbeddedVersion || s.Key() != "queue/contention/etcd="+cluster.EmbeddedVersion {
		t.Errorf("cell etcd %q version %q key %q", s.Etcd, s.EtcdVersion, s.Key())
	}
	if !strings.Contains(js, `"etcd_version": "`+cluster.EmbeddedVersion+`"`) || !res.Cells[0].Matches {
		t.Errorf("suite.json lacks the release, or the cell is not as expected: %s", res.Cells[0].Note)
	}
}

// self and Debian's etcd 3.4.23 side by side: one cell each, in binary
// order, with distinct keys. Skipped without /usr/bin/etcd (apt-get
// install etcd-server).
func TestSuiteMatrixTwoBinaries(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd member processes")
	}
	if _, err := os.Stat("/usr/bin/etcd"); err != nil {
		t.Skip("no /usr/bin/etcd (apt-get install etcd-server)")
	}
	res, _ := matrixSuite(t, cluster.EtcdBinSelf, "/usr/bin/etcd")
	var keys []string
	for _, c := range res.Cells {
		keys = append(keys, c.Summary.Key())
		if !c.Matches {
			t.Errorf("%s: not as expected: %s", c.Summary.Key(), c.Note)
		}
	}
	if len(keys) != 2 || keys[0] != "queue/contention/etcd="+cluster.EmbeddedVersion || !strings.HasPrefix(keys[1], "queue/contention/etcd=3.4.") {
		t.Errorf("keys %v, want self's then 3.4's", keys)
	}
}

// A suite takes a scenario some cluster kind cannot run: its cells are
// skipped with a note per binary, not the whole suite refused.
func TestSuiteValidateLeavesRefusalsToCells(t *testing.T) {
	s := metaSpec(t)
	s.Out = t.TempDir()
	pause, err := scenarios.ParseFile("../examples/pause-leader.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s.Scenarios = append(s.Scenarios, pause)
	if err := s.Validate(); err != nil {
		t.Errorf("embedded suite with pause-leader refused: %v", err)
	}
	s.EtcdBins = []string{cluster.EtcdBinSelf}
	if err := s.Validate(); err != nil {
		t.Errorf("process suite with pause-leader refused: %v", err)
	}
}
