package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lockbench/lockbench/report"
)

// Bench is bench.json: the benchmark's figures (report.Bench, which draws
// them) and the machine and cluster they were measured on, which only make
// sense beside them. The embedded figures keep bench.json one flat object.
type Bench struct {
	report.Bench
	Host    HostInfo      `json:"host"`
	Cluster ClusterConfig `json:"cluster"`
}

// IsBench reports whether dir is a bench folder (it holds bench.json), so
// that a command given a folder can tell a benchmark from a run.
func IsBench(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, BenchFile))
	return err == nil && !st.IsDir()
}

// LoadBench reads a bench folder's bench.json, to draw its table again.
func LoadBench(dir string) (*Bench, error) {
	path := filepath.Join(dir, BenchFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read bench folder: %w", err)
	}
	var b Bench
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &b, nil
}
