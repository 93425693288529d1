package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
)

// Files of a run folder (DESIGN.md: the run folder is a contract). The
// harness writes the first three; report.html is rendered from them.
const (
	ConfigFile  = "config.json"
	HistoryFile = "history.jsonl"
	SummaryFile = "summary.json"
	HTMLFile    = "report.html"
)

// ErrNotRunFolder is wrapped by LoadRun when dir is not a run folder.
var ErrNotRunFolder = errors.New("not a run folder")

// RunFolder is a saved run as LoadRun reads it.
type RunFolder struct {
	Dir string
	// Config is config.json as written (any fields), for display.
	Config json.RawMessage
	Events []history.Event
	// Saved is summary.json as recorded at the time of the run.
	Saved Summary
}

// runConfig is what LoadRun needs from config.json; the harness's Config
// has more, all kept in RunFolder.Config.
type runConfig struct {
	RunID    string `json:"run_id"`
	Lock     string `json:"lock"`
	Seed     int64  `json:"seed"`
	Scenario struct {
		Name     string       `json:"name"`
		Clients  int          `json:"clients"`
		LeaseTTL flexDuration `json:"lease_ttl"`
	} `json:"scenario"`
	Cluster struct {
		ElectionMS int64 `json:"election_ms"`
	} `json:"cluster"`
}

// LoadRun reads a run folder: config.json, history.jsonl and summary.json.
// A folder missing any of them, or one that is not a folder, gives an error
// wrapping ErrNotRunFolder that says what is missing; a file that exists
// but does not parse gives an error naming the file.
func LoadRun(dir string) (*RunFolder, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", dir, ErrNotRunFolder, pathErr(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: %w: it is a file (a run folder holds %s, %s and %s)", dir, ErrNotRunFolder, ConfigFile, HistoryFile, SummaryFile)
	}
	var missing []string
	for _, f := range []string{ConfigFile, HistoryFile, SummaryFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: %w: no %s (lockbench run writes %s, %s and %s into each run folder)",
			dir, ErrNotRunFolder, joinAnd(missing), ConfigFile, HistoryFile, SummaryFile)
	}
	rf := &RunFolder{Dir: dir}
	cfg, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		return nil, err
	}
	if !json.Valid(cfg) {
		return nil, fmt.Errorf("%s: not valid JSON", filepath.Join(dir, ConfigFile))
	}
	rf.Config = cfg
	if rf.Events, err = history.ReadFile(filepath.Join(dir, HistoryFile)); err != nil {
		return nil, err
	}
	sb, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(sb, &rf.Saved); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, SummaryFile), err)
	}
	return rf, nil
}

// CheckOptions are the checker options for this run: the liveness bound is
// the scenario's lease TTL plus the cluster's election timeout (DESIGN.md
// §4), each defaulted as the harness defaults it.
func (rf *RunFolder) CheckOptions() check.Options {
	c := rf.config()
	ttl := time.Duration(c.Scenario.LeaseTTL)
	if ttl <= 0 {
		ttl = check.DefaultLeaseTTL
	}
	el := time.Duration(c.Cluster.ElectionMS) * time.Millisecond
	if el <= 0 {
		el = check.DefaultElectionTimeout
	}
	return check.Options{LivenessBound: ttl + el}
}

// Run identifies the run for Summarize, from summary.json, falling back on
// config.json for what the summary lacks.
func (rf *RunFolder) Run() Run {
	c := rf.config()
	s := rf.Saved
	r := Run{ID: s.RunID, Lock: s.Lock, Scenario: s.Scenario, Clients: s.Clients, Seed: s.Seed,
		Elapsed:     time.Duration(s.DurationS * float64(time.Second)),
		Interrupted: s.Interrupted, Stopped: s.Stopped, LeaseTTL: time.Duration(c.Scenario.LeaseTTL)}
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
func (rf *RunFolder) Recheck() Summary {
	return Summarize(rf.Run(), rf.Events, check.Check(rf.Events, rf.CheckOptions()))
}

func (rf *RunFolder) config() runConfig {
	var c runConfig
	_ = json.Unmarshal(rf.Config, &c) // best effort: display data only
	return c
}

// flexDuration reads a duration written either as nanoseconds (a number)
// or as text ("5s"), as config.json has had both.
type flexDuration time.Duration

func (d *flexDuration) UnmarshalJSON(b []byte) error {
	var n int64
	if err := json.Unmarshal(b, &n); err == nil {
		*d = flexDuration(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s == "" {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = flexDuration(v)
	return nil
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

func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	out := ""
	for i, x := range xs {
		switch {
		case i == len(xs)-1:
			out += " or " + x
		case i > 0:
			out += ", " + x
		default:
			out += x
		}
	}
	return out
}
