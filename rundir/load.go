package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/report"
)

// Folder is a saved run as Load reads it: enough to draw its report again
// or re-check it with today's checker, without a cluster.
type Folder struct {
	Dir    string
	Config Config
	Events []history.Event
	// Saved is summary.json as recorded at the time of the run, to tell
	// what changed when today's checker disagrees.
	Saved report.Summary
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
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", cfgPath, err)
	}
	if err := json.Unmarshal(b, &f.Config); err != nil {
		return nil, fmt.Errorf("%s: %w", cfgPath, err)
	}
	if f.Events, err = history.ReadFile(filepath.Join(dir, HistoryFile)); err != nil {
		return nil, err
	}
	sumPath := filepath.Join(dir, SummaryFile)
	if b, err = os.ReadFile(sumPath); err != nil {
		return nil, fmt.Errorf("read %s: %w", sumPath, err)
	}
	if err := json.Unmarshal(b, &f.Saved); err != nil {
		return nil, fmt.Errorf("%s: %w", sumPath, err)
	}
	return f, nil
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

// CheckOptions are the checker options the run was checked with (see
// Config.LivenessBound).
func (f *Folder) CheckOptions() check.Options { return f.Config.CheckOptions() }

// Run identifies the run for report.Summarize, from summary.json, falling
// back on config.json for what an old summary lacks.
func (f *Folder) Run() report.Run {
	c, s := f.Config, f.Saved
	r := report.Run{ID: s.RunID, Lock: s.Lock, Scenario: s.Scenario, Clients: s.Clients, Seed: s.Seed,
		Elapsed:     time.Duration(s.DurationS * float64(time.Second)),
		Interrupted: s.Interrupted, Stopped: s.Stopped, LeaseTTL: c.Scenario.TTL()}
	if r.LeaseTTL <= 0 {
		r.LeaseTTL = check.DefaultLeaseTTL
	}
	if r.ID == "" {
		r.ID = c.RunID
	}
	if r.Lock == "" {
		r.Lock = c.Lock
	}
	if r.Scenario == "" {
		r.Scenario = c.Scenario.Name
	}
	if r.Clients == 0 {
		r.Clients = c.Scenario.Clients
	}
	if r.Seed == 0 {
		r.Seed = c.Seed
	}
	return r
}

// Recheck checks the history again with today's checker and summarizes it,
// so that old runs get new figures.
func (f *Folder) Recheck() report.Summary {
	return report.Summarize(f.Run(), f.Events, check.Check(f.Events, f.CheckOptions()))
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
