package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/scenarios"
)

// finishRun checks a finished run's history once, summarizes that checked
// value and writes the run folder from it: one pairing of the history
// feeds the verdicts, the figures and the page. inSuite says parent is a
// suite's folder, whose page the run's links to.
func finishRun(parent string, cfg rundir.Config, sc scenarios.Scenario, out *runner.Outcome, sat *report.Saturation, inSuite bool) (*Result, error) {
	c := check.Check(out.Events, checkOptions(sc, cfg))
	sum := report.Summarize(report.RunInfo{
		Run: cfg.Run, Scenario: sc.Name, Clients: sc.Clients, LeaseTTL: sc.TTL(),
		Elapsed: out.Elapsed, Interrupted: out.Interrupted, Stopped: out.Stopped, Stuck: out.Stuck,
		Saturation: sat,
	}, c)
	files := []rundir.File{
		rundir.JSONFile(rundir.ConfigFile, cfg),
		{Name: rundir.HistoryFile, Render: func(w io.Writer) error { return history.Write(w, out.Events) }},
		rundir.JSONFile(rundir.SummaryFile, sum),
		{Name: rundir.HTMLFile, Render: func(w io.Writer) error {
			return report.WriteRunHTML(w, cfg, c, runContext(cfg, sc, sum, inSuite))
		}},
	}
	if cfg.Worker != nil {
		files = append(files, rundir.File{Name: rundir.ProbesFile, Render: rundir.ProbesRender(out.Probes)})
	}
	dir, err := rundir.Write(parent, cfg.RunID, files...)
	if err != nil {
		return nil, err
	}
	return &Result{Dir: dir, Summary: sum}, nil
}

// checkOptions are the checker's options for a run of sc recorded in
// cfg, what each fault may cost a correct lock there (docs/design.md §4):
// a client fault the scenario's lease TTL plus the cluster's election
// timeout, a member fault two elections plus the clients' request
// deadline (none recorded: the client fault's bound); and the order the
// strategy promises, when this build knows the strategy; and the belief
// overrun the run's keepalive policy allows at the scenario's TTL
// (etcdlocks.KeepAlive.Overrun: a config.json without a policy is from before
// policies were recorded, when every run was auto, which is also what a
// strategy that keeps its own lease is held to). A cluster record
// without its election timeout (an old or hand-made config.json) gets the
// harness's default. A run and a re-check of its folder use it, so both
// apply the same bounds.
func checkOptions(sc scenarios.Scenario, cfg rundir.Config) check.Options {
	election := time.Duration(cfg.Cluster.ElectionMS) * time.Millisecond
	if election <= 0 {
		election = check.DefaultElectionTimeout
	}
	request := time.Duration(cfg.RPCTimeoutMS) * time.Millisecond
	if request <= 0 {
		request = -1
	}
	o := check.Options{LivenessBound: sc.TTL() + election, ElectionTimeout: election, RequestTimeout: request,
		OverrunBound: etcdlocks.KeepAlive(cfg.KeepAlive).Overrun(sc.TTL())}
	if st, err := locks.Lookup(cfg.Lock); err == nil {
		o.Order = st.Order
	}
	return o
}

// Rechecked is a saved run checked again with today's checker.
type Rechecked struct {
	Folder *rundir.Folder
	// Checked and Summary are today's verdicts and figures; Saved is
	// summary.json as recorded, to tell what changed.
	Checked check.Checked
	Summary report.Summary
	Saved   report.Summary
	// Scenario is the scenario as the run ran it (config.json; zero in a
	// hand-made folder without one).
	Scenario scenarios.Scenario
}

// Recheck loads the run folder dir and checks its history again with
// today's checker, so that old runs get new figures. Its identity comes
// from config.json, where the run wrote it; what a folder from before the
// identity was recorded there lacks is taken from its summary.json.
func Recheck(dir string) (*Rechecked, error) {
	f, err := rundir.Load(dir)
	if err != nil {
		return nil, err
	}
	r := &Rechecked{Folder: f}
	if err := json.Unmarshal(f.Summary, &r.Saved); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, rundir.SummaryFile), err)
	}
	sc := &r.Scenario
	if len(f.Config.Scenario) > 0 {
		if err := json.Unmarshal(f.Config.Scenario, sc); err != nil {
			return nil, fmt.Errorf("%s: scenario: %w", filepath.Join(dir, rundir.ConfigFile), err)
		}
	}
	// How the run ended and how loaded its harness was are not in the
	// history: they come from the saved summary.
	info := report.RunInfo{Run: f.Config.Run, Scenario: sc.Name, Clients: sc.Clients, LeaseTTL: sc.TTL(),
		Elapsed:     time.Duration(r.Saved.DurationS * float64(time.Second)),
		Interrupted: r.Saved.Interrupted, Stopped: r.Saved.Stopped, Stuck: r.Saved.Stuck, Saturation: r.Saved.Saturation}
	fillOldIdentity(&info, r.Saved)
	r.Checked = check.Check(f.Events, checkOptions(*sc, f.Config))
	r.Summary = report.Summarize(info, r.Checked)
	// The summary is computed now, in this build's format, however old the
	// folder (lockbench report --write-summary writes it): its schema is
	// this build's, while lockbench_version stays the build that ran.
	r.Summary.Schema = rundir.SchemaVersion
	return r, nil
}

// fillOldIdentity takes from a run's saved summary what config.json did
// not record before the run identity was one record (the member
// processes' binary and release lived in the summary only), and from a
// hand-made config.json without a scenario, the scenario's name.
func fillOldIdentity(info *report.RunInfo, saved report.Summary) {
	id, old := &info.Run, saved.Run
	if id.Etcd == "" && id.EtcdVersion == "" {
		id.Etcd, id.EtcdVersion = old.Etcd, old.EtcdVersion
	}
	if info.Scenario == "" {
		info.Scenario, info.Clients = saved.Scenario, saved.Clients
	}
}

// WriteHTML writes the re-checked run's report.html to path.
func (r *Rechecked) WriteHTML(path string) error {
	inSuite := IsSuite(filepath.Dir(r.Folder.Dir))
	return rundir.WriteFile(path, func(w io.Writer) error {
		return report.WriteRunHTML(w, r.Folder.Config, r.Checked, runContext(r.Folder.Config, r.Scenario, r.Summary, inSuite))
	})
}

// runContext is what a run's page says of it beside its files: the run
// judged against what sc expects of its strategy (nothing, for a folder
// without its scenario), the command that runs it again, and the link to
// its suite's page (inSuite: the run folder is a suite's).
func runContext(cfg rundir.Config, sc scenarios.Scenario, sum report.Summary, inSuite bool) report.RunContext {
	rc := report.RunContext{Cell: report.Cell{Summary: sum}}
	if sc.Name != "" {
		expect := ExpectationsFor(sc, cfg.Lock, cfg.KeepAlive)
		rc.Cell = Judge(sum, expect)
		rc.Cell.AnyReasons = AnyReasons(WithReasons(sc), cfg.Lock, cfg.KeepAlive, expect)
		rc.Reproduce = reproduceCommand(cfg, sc)
	}
	if inSuite {
		rc.Suite = "../" + rundir.HTMLFile
	}
	return rc
}

// reproduceCommand is the lockbench run that runs cfg's cell again: its
// lock, scenario (by name when built in, else the file it came from),
// seed, keepalive policy when not the default, and member binary.
func reproduceCommand(cfg rundir.Config, sc scenarios.Scenario) string {
	scen := sc.Name
	if sc.Source != "" && !strings.HasPrefix(sc.Source, "builtin:") {
		scen = sc.Source
	}
	args := []string{"lockbench", "run", "--lock", cfg.Lock, "--scenario", scen, "--seed", strconv.FormatInt(cfg.Seed, 10)}
	if ka := etcdlocks.KeepAlive(cfg.KeepAlive); ka != "" && ka != etcdlocks.DefaultKeepAlive && ka != etcdlocks.KeepAliveOwn {
		args = append(args, "--keepalive", cfg.KeepAlive)
	}
	if cfg.Etcd != "" {
		args = append(args, "--etcd-bin", cfg.Etcd)
	}
	for i, a := range args {
		if strings.ContainsAny(a, " \t'\"$`\\") {
			args[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(args, " ")
}
