package rundir

import (
	"os"
	"path/filepath"
)

// IsBench reports whether dir is a bench folder (it holds bench.json), so
// that a command given a folder can tell a benchmark from a run.
func IsBench(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, BenchFile))
	return err == nil && !st.IsDir()
}
