// Command lockbench benchmarks and chaos-tests distributed locks on etcd.
// It only wires flags to the packages that do the work.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/cluster"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/scenario"
	"github.com/lockbench/lockbench/verdict"
)

// Exit codes, the same for every command.
const (
	exitPass        = 0   // every check passed
	exitViolation   = 1   // a check failed (or an expectation/regression)
	exitUsage       = 2   // bad input or usage
	exitError       = 3   // the harness could not do its job (e.g. etcd did not start)
	exitInterrupted = 130 // stopped by SIGINT/SIGTERM; what ran was still written
)

const usage = `lockbench — benchmark and chaos-test distributed locks on etcd

Usage:
  lockbench run     --lock NAME --scenario NAME [flags]  run one scenario on an embedded (or --endpoints) etcd cluster
  lockbench suite   [--locks a,b] [--scenarios x,y] [--seeds N]
                                                         run the strategy × scenario matrix; exit 1 when a verdict differs from its expectation
  lockbench bench   [--clients 2,8,64] [--locks ...]     contended throughput and handoff latency against the commit floor
  lockbench check   FILE.jsonl [--json]                  re-check a saved (or hand-written) history
  lockbench report  RUN_DIR                              re-render a run's tables and report.html
  lockbench compare BASE.json NEW.json [--threshold 20%] exit 1 on a worse verdict or a regression
  lockbench cluster [--members 3] [--tls]                keep an embedded cluster up for experiments until Ctrl-C
  lockbench list                                         list lock strategies and scenarios

Run 'lockbench COMMAND --help' for a command's flags.

Exit status: 0 all checks pass; 1 a violation; 2 bad input or usage;
3 the harness failed (e.g. etcd did not start); 130 interrupted.
`

// command runs one subcommand; it returns the exit code, and an error to
// print (a usageError for bad input).
type command func(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error)

// commands is filled by each command's file (init), so that a new command
// is one new file.
var commands = map[string]command{}

func init() {
	commands["run"] = cmdRun
	commands["check"] = func(_ context.Context, args []string, stdout, _ io.Writer) (int, error) {
		return cmdCheck(args, stdout)
	}
	commands["list"] = func(_ context.Context, args []string, stdout, _ io.Writer) (int, error) {
		return cmdList(args, stdout)
	}
}

// usageError marks errors that are the user's input, not the run's outcome.
type usageError struct{ error }

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopSignals := onSignal(cancel, stderr)
	defer stopSignals()
	if h := args[0]; h == "help" || h == "-h" || h == "-help" || h == "--help" {
		fmt.Fprint(stdout, usage)
		return exitPass
	}
	var code int
	cmd, ok := commands[args[0]]
	var err error
	if ok {
		code, err = cmd(ctx, args[1:], stdout, stderr)
	} else {
		err = usageError{fmt.Errorf("unknown command %q: valid commands are %s", args[0], strings.Join(slices.Sorted(maps.Keys(commands)), ", "))}
	}
	if err != nil {
		fmt.Fprintf(stderr, "lockbench %s: %v\n", args[0], err)
		var ue usageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		if code == 0 {
			code = exitError
		}
	}
	return code
}

// onSignal cancels the work on the first SIGINT/SIGTERM so that it stops
// cleanly (history written, cluster closed), and restores the default
// action so that a second signal exits at once.
func onSignal(cancel context.CancelFunc, stderr io.Writer) (stop func()) {
	sigs := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-sigs:
			signal.Reset(os.Interrupt, syscall.SIGTERM)
			fmt.Fprintf(stderr, "lockbench: %s — finishing cleanly (signal again to exit at once)\n", s)
			cancel()
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// newFlags makes a flag set that reports errors instead of exiting, with a
// help text that explains the command.
func newFlags(name, synopsis string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// flag's own error output repeats the whole usage; errors are reported
	// once by realMain instead, and --help prints the usage to stdout.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	helpFor[fs] = func() {
		fmt.Fprintf(stdout, "Usage: lockbench %s\n\nFlags:\n", synopsis)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// helpFor prints each flag set's --help text.
var helpFor = map[*flag.FlagSet]func(){}

// parse parses flags; --help is not an error, any other problem is a usage
// error.
func parse(fs *flag.FlagSet, args []string) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			helpFor[fs]()
			return true, nil
		}
		return false, usageError{fmt.Errorf("%v (see lockbench %s --help)", err, fs.Name())}
	}
	return false, nil
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("run", "run --lock NAME --scenario NAME [flags]", stdout)
	lock := fs.String("lock", "mutex", "lock strategy: "+strings.Join(locks.Names(), ", "))
	scenarioName := fs.String("scenario", "contention", "scenario: "+strings.Join(scenario.Names(), ", "))
	clients := fs.Int("clients", 0, "number of clients, each with its own etcd connection (default: the scenario's)")
	duration := fs.Duration("duration", 0, "how long clients run, e.g. 10s (default: the scenario's)")
	hold := fs.Duration("hold", 0, "how long a client holds the lock, e.g. 1ms (default: the scenario's)")
	seed := fs.Int64("seed", 1, "seed for every random choice: same seed, same schedule")
	out := fs.String("out", harness.DefaultOut, "parent folder of run folders")
	ttl := fs.Duration("lease-ttl", 0, "lease TTL, whole seconds (default: the scenario's, else 5s)")
	keepalive := fs.String("keepalive", string(locks.KeepAliveAuto), "lease keepalive policy: auto (KeepAlive stream, TTL/3), seed (KeepAliveOnce every 0.8×TTL) or safe (deadline from each refresh's send time; docs/leases.md)")
	rpcTimeout := rpcTimeoutFlag(fs)
	sharedConns := sharedConnsFlag(fs)
	members := fs.Int("members", cluster.DefaultMembers, "etcd cluster members")
	noFsync := fs.Bool("unsafe-no-fsync", false, "disable fsync in etcd (faster; a member crash may lose data)")
	verbose := fs.Bool("verbose", false, "show etcd's own logs")
	benchOut := fs.String("bench-out", "", "also write the run's figures as Go benchmark lines to this file (for benchstat)")
	ext := externalFlags(fs)
	if help, err := parse(fs, args); help || err != nil {
		return exitPass, err
	}
	if fs.NArg() > 0 {
		return 0, usageError{fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0))}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	external, err := ext.parse(set)
	if err != nil {
		return 0, usageError{err}
	}
	sc, err := scenario.Lookup(*scenarioName)
	if err != nil {
		return 0, usageError{err}
	}
	if set["clients"] {
		if *clients < 1 {
			return 0, usageError{fmt.Errorf("--clients %d: must be ≥1", *clients)}
		}
		sc.Clients = *clients
	}
	if set["duration"] {
		if *duration <= 0 {
			return 0, usageError{fmt.Errorf("--duration %s: must be > 0", *duration)}
		}
		sc.Duration = scenario.Duration(*duration)
	}
	if set["hold"] {
		if *hold < 0 {
			return 0, usageError{fmt.Errorf("--hold %s: must be ≥0", *hold)}
		}
		sc.Workload.Hold = scenario.Duration(*hold)
	}
	if set["lease-ttl"] {
		sc.LeaseTTL = scenario.Duration(*ttl)
	}
	rpcT, err := rpcTimeoutSpec(*rpcTimeout)
	if err != nil {
		return 0, err
	}
	spec := harness.RunSpec{
		Lock: *lock, Scenario: sc, Seed: *seed, KeepAlive: locks.KeepAlive(*keepalive), RPCTimeout: rpcT, SharedConns: *sharedConns, Out: *out,
		Cluster: cluster.Options{Members: *members, UnsafeNoFsync: *noFsync, Verbose: *verbose},
	}
	if err := spec.Validate(); err != nil {
		return 0, usageError{err}
	}
	var res *harness.Result
	if external != nil {
		if sc.NeedsMembers() {
			return 0, usageError{fmt.Errorf("scenario %s injects member faults (crash, partition), which need the embedded cluster: run it without --endpoints; on an external cluster only client faults work", sc.Name)}
		}
		if err := external.Validate(); err != nil {
			return 0, usageError{err}
		}
		fmt.Fprintf(stderr, "lockbench: %s × %s, %d clients, %s, seed %d, external etcd %s\n",
			spec.Lock, sc.Name, sc.Clients, sc.Duration, spec.Seed, strings.Join(external.Endpoints, ","))
		res, err = harness.RunExternal(ctx, *external, spec)
	} else {
		if *members < 1 || *members > 9 {
			return 0, usageError{fmt.Errorf("--members %d: must be 1..9", *members)}
		}
		fmt.Fprintf(stderr, "lockbench: %s × %s, %d clients, %s, seed %d, %d-member etcd\n",
			spec.Lock, sc.Name, sc.Clients, sc.Duration, spec.Seed, *members)
		spec.Started = func(endpoints []string) {
			fmt.Fprintf(stderr, "lockbench: etcd up at %s; running\n", strings.Join(endpoints, ","))
		}
		res, err = harness.Run(ctx, spec)
	}
	if err != nil && res == nil {
		var ie *harness.InputError
		switch {
		case ctx.Err() != nil:
			return exitInterrupted, err
		case errors.As(err, &ie):
			return 0, usageError{err}
		}
		return exitError, err
	}
	if err := report.RunTable(stdout, res.Summary); err != nil {
		return exitError, err
	}
	for _, v := range firstN(res.Summary.Violations, 5) {
		fmt.Fprintf(stdout, "violation: %s\n", v.Message)
	}
	fmt.Fprintf(stdout, "run folder: %s\n", res.Dir)
	if *benchOut != "" {
		if err := writeBenchFile(*benchOut, []report.Summary{res.Summary}); err != nil {
			return exitError, err
		}
	}
	switch {
	case err != nil:
		// The run is written, but the harness failed after it (etcd's
		// members did not stop).
		return exitError, err
	case res.Summary.Interrupted:
		return exitInterrupted, nil
	case res.Summary.Stopped != "":
		fmt.Fprintf(stderr, "lockbench: run stopped early: %s\n", res.Summary.Stopped)
		return exitError, nil
	case res.Summary.Verdict == verdict.Fail:
		return exitViolation, nil
	}
	return exitPass, nil
}

func cmdCheck(args []string, stdout io.Writer) (int, error) {
	fs := newFlags("check", "check FILE.jsonl [--json]", stdout)
	asJSON := fs.Bool("json", false, "print the check report as JSON")
	// Accept the file before or after flags.
	var file string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		file, args = args[0], args[1:]
	}
	if help, err := parse(fs, args); help || err != nil {
		return exitPass, err
	}
	if file == "" && fs.NArg() > 0 {
		file = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return 0, usageError{fmt.Errorf("unexpected argument %q: check takes one history file", fs.Arg(0))}
	}
	if file == "" {
		return 0, usageError{errors.New("no history file given: lockbench check FILE.jsonl")}
	}
	events, err := history.ReadFile(file)
	if err != nil {
		return 0, usageError{err}
	}
	rep := check.Check(events, check.Options{})
	if *asJSON {
		if err := writeJSON(stdout, rep); err != nil {
			return exitError, err
		}
	} else {
		printReport(stdout, file, len(events), rep)
	}
	if rep.Verdict == verdict.Fail {
		return exitViolation, nil
	}
	return exitPass, nil
}

func printReport(w io.Writer, file string, n int, rep check.Report) {
	fmt.Fprintf(w, "%s: %d events, verdict %s\n", file, n, rep.Verdict)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, name := range slices.Sorted(maps.Keys(rep.Checks)) {
		r := rep.Checks[name]
		fmt.Fprintf(tw, "  %s\t%s\t%d violations\t%s\n", name, r.Verdict, r.Count, r.Note)
	}
	tw.Flush()
	for _, name := range slices.Sorted(maps.Keys(rep.Checks)) {
		for _, v := range firstN(rep.Checks[name].Violations, 5) {
			fmt.Fprintf(w, "  %s: %s\n", name, v.Message)
		}
	}
}

func cmdList(args []string, stdout io.Writer) (int, error) {
	fs := newFlags("list", "list", stdout)
	if help, err := parse(fs, args); help || err != nil {
		return exitPass, err
	}
	if fs.NArg() > 0 {
		return exitUsage, usageError{fmt.Errorf("list takes no arguments, got %q: it lists every lock strategy and scenario", fs.Arg(0))}
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LOCK\tDESCRIPTION\tORIGIN")
	for _, s := range locks.All() {
		name := s.Name
		if s.Buggy {
			name += " (known-buggy)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, s.Description, s.Origin)
	}
	fmt.Fprintln(tw, "\nSCENARIO\tDESCRIPTION\t")
	for _, n := range scenario.Names() {
		sc, _ := scenario.Lookup(n)
		fmt.Fprintf(tw, "%s\t%s\t\n", sc.Name, sc.Description)
	}
	return exitPass, tw.Flush()
}
