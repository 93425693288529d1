package rundir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockbench/lockbench/clocks"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/wholefile"
)

// Folder is a saved run as Load reads it: enough to draw its report again
// or re-check it with today's checker, without a cluster.
type Folder struct {
	Dir    string
	Config Config
	Events []history.Event
	// Summary is summary.json as recorded at the time of the run (its
	// bytes, checked to be a JSON object: package report reads it), to
	// tell what changed when today's checker disagrees.
	Summary json.RawMessage
	// Probes are a worker's probe writes (ProbesFile), none in the folder
	// of a run that one process drove.
	Probes []clocks.Probe
}

// Load reads a run folder: config.json, history.jsonl and summary.json.
// A folder missing any of them, or one that is not a folder, gives an error
// wrapping ErrNotRunFolder that says what is missing; a file that exists
// but does not parse gives an error naming the file.
func Load(dir string) (*Folder, error) {
	if err := isRunFolder(dir); err != nil {
		return nil, err
	}
	f := &Folder{Dir: dir}
	cfgPath := filepath.Join(dir, ConfigFile)
	b, err := wholefile.Read(cfgPath, ConfigFile, wholefile.JSONLimit)
	if err != nil {
		return nil, readErr(cfgPath, err)
	}
	if err := json.Unmarshal(b, &f.Config); err != nil {
		return nil, fmt.Errorf("%s: %w", cfgPath, err)
	}
	if f.Events, err = history.ReadFile(filepath.Join(dir, HistoryFile)); err != nil {
		return nil, err
	}
	sumPath := filepath.Join(dir, SummaryFile)
	if b, err = wholefile.Read(sumPath, SummaryFile, wholefile.JSONLimit); err != nil {
		return nil, readErr(sumPath, err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("%s: %w", sumPath, err)
	}
	f.Summary = b
	if f.Config.Worker != nil {
		if f.Probes, err = readProbes(filepath.Join(dir, ProbesFile)); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// readProbes reads a worker's probes file.
func readProbes(path string) ([]clocks.Probe, error) {
	b, err := wholefile.Read(path, ProbesFile, wholefile.JSONLimit)
	if err != nil {
		return nil, readErr(path, err)
	}
	var out []clocks.Probe
	n := 0
	for line := range bytes.Lines(b) {
		n++
		if line = bytes.TrimSpace(line); len(line) == 0 {
			continue
		}
		var p clocks.Probe
		if err := json.Unmarshal(line, &p); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, n, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// ProbesRender renders probes as ProbesFile.
func ProbesRender(probes []clocks.Probe) func(io.Writer) error {
	return func(w io.Writer) error {
		enc := json.NewEncoder(w)
		for _, p := range probes {
			if err := enc.Encode(p); err != nil {
				return err
			}
		}
		return nil
	}
}

// isRunFolder says, as an error wrapping ErrNotRunFolder, why dir is not a
// run folder, or returns nil when it holds the files Load reads.
func isRunFolder(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: %w: %v", dir, ErrNotRunFolder, pathErr(err))
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: %w: it is a file (a run folder holds %s, %s and %s)", dir, ErrNotRunFolder, ConfigFile, HistoryFile, SummaryFile)
	}
	var missing []string
	for _, name := range []string{ConfigFile, HistoryFile, SummaryFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: %w: no %s (lockbench run writes %s, %s and %s into each run folder)",
			dir, ErrNotRunFolder, joinOr(missing), ConfigFile, HistoryFile, SummaryFile)
	}
	return nil
}

// readErr is a failed read of path with its context; a file
// wholefile refused already names the path and says why.
func readErr(path string, err error) error {
	if wholefile.IsRefused(err) {
		return err
	}
	return fmt.Errorf("read %s: %w", path, err)
}

func pathErr(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such folder"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	return err.Error()
}

// joinOr lists names as "a, b or c".
func joinOr(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}
