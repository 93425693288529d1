package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/suite"
	"github.com/lockbench/lockbench/verdict"
)

// runOptions are run's flags.
type runOptions struct {
	lock, scenario string
	clients        int
	duration, hold time.Duration
	seed           int64
	out, benchOut  string
	cluster        clusterFlags
	client         clientFlags
	ext            extFlags
	set            map[string]bool // the flags given
	spec           harness.RunSpec // built by check
	external       *harness.External
	inject         injectDelayFlag
	output         outputFlags
	worker         string
	workerWait     time.Duration
	clockSkew      time.Duration
}

// runCommand is `lockbench run`: one strategy × one scenario.
func runCommand(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		// A bare run says what it takes rather than start a run of
		// defaults nobody chose.
		return badInputf("say what to run: lockbench run --lock NAME --scenario NAME|FILE.yaml (lockbench list names both; lockbench run --help explains every flag; with only some flags, the others default to mutex × contention)")
	}
	fs := newFlags(e, "run", "run --lock NAME --scenario NAME [flags]")
	o := runOptions{inject: injectDelayFlag{}}
	fs.Var(o.inject, "inject-delay", injectUsage)
	fs.StringVar(&o.lock, "lock", "mutex", "lock strategy: "+strings.Join(locks.Names(), ", ")+"; or a lock client (lockbench list), such as zk-queue, go-zookeeper, redis-setnx, redlock, which run on a ZooKeeper ensemble or Redis deployment lockbench starts")
	fs.StringVar(&o.scenario, "scenario", "contention", "scenario: "+strings.Join(scenarios.Names(), ", ")+"; of the extended set (suite --extended) "+strings.Join(scenarios.ExtendedNames(), ", ")+"; or a .yaml file")
	fs.IntVar(&o.clients, "clients", 0, "number of clients, each with its own etcd connection (default: the scenario's)")
	fs.DurationVar(&o.duration, "duration", 0, "how long clients run, e.g. 10s (default: the scenario's)")
	fs.DurationVar(&o.hold, "hold", 0, "how long a client holds the lock, e.g. 1ms (default: the scenario's)")
	fs.Int64Var(&o.seed, "seed", 1, "seed for every random choice: same seed, same schedule")
	fs.StringVar(&o.out, "out", harness.DefaultOut, "parent folder: the run is written to OUT/<run-id>/ (as suite's --out; bench's --out is the bench folder itself)")
	fs.StringVar(&o.benchOut, "bench-out", "", "also write the run's figures as Go benchmark lines to this file (- for stdout), for benchstat")
	fs.StringVar(&o.worker, "worker", "", "drive only share I of N of the run's clients (I/N, e.g. 2/4: clients I-1, I-1+N, ...), one process of N on one or many machines against one cluster (--endpoints, the same --prefix for all); the N workers start together, and lockbench merge joins their run folders into the run's (docs/scale.md)")
	fs.DurationVar(&o.workerWait, "worker-wait", runner.DefaultWorkerWait, "with --worker: how long to wait for the other workers to start, and worker 1 for them to finish")
	fs.DurationVar(&o.clockSkew, "clock-skew", 0, "test-only, with --worker: every time this worker records reads D (≥0) ahead, as a machine with a wrong clock would; the merge must find it from its probes")
	o.client.register(fs, true, true)
	o.cluster.register(fs)
	o.ext.register(fs)
	o.output.register(fs, "the run's summary.json (the run folder's path goes to stderr)", true)
	if err := fs.parseFlagsOnly(args); err != nil {
		return err
	}
	o.set = fs.given()
	if err := o.check(); err != nil {
		return err
	}
	return runRun(ctx, e, &o)
}

// check validates every flag and builds the spec, before anything
// starts: bad input leaves nothing behind.
func (o *runOptions) check() error {
	ext, err := o.ext.parse(o.set)
	if err != nil {
		return err
	}
	o.external = ext
	if err := o.ownDeployment(); err != nil {
		return err
	}
	sc, err := o.scenarioSpec()
	if err != nil {
		return err
	}
	rpcT, err := o.client.rpcTimeoutSpec()
	if err != nil {
		return err
	}
	kas, err := o.client.keepAlives(false)
	if err != nil {
		return err
	}
	if err := o.client.checkSharedConns(sc); err != nil {
		return err
	}
	cl, err := o.cluster.options()
	if err != nil {
		return err
	}
	o.spec = harness.RunSpec{
		Lock: o.lock, Scenario: sc, Seed: o.seed, KeepAlive: kas[0], RPCTimeout: rpcT,
		SharedConns: o.client.sharedConns, Out: o.out, Cluster: cl,
	}
	if o.spec.InjectDelay, err = o.inject.only(o.lock); err != nil {
		return err
	}
	if err := o.workerSpec(ext); err != nil {
		return err
	}
	if err := o.spec.Validate(); err != nil {
		return badInput(flagError(err, runFlags))
	}
	if ext != nil {
		if sc.Needs().Members {
			return badInputf("scenario %s injects member faults (crash, partition), which need the embedded cluster: run it without --endpoints; on an external cluster only client faults work", sc.Name)
		}
		if err := ext.Validate(); err != nil {
			return badInput(err)
		}
	}
	if err := o.output.checkStdout(map[string]string{"bench-out": o.benchOut}); err != nil {
		return err
	}
	return checkOutputs(o.out, o.benchOut)
}

// ownDeployment refuses, for a strategy of a backend other than etcd,
// the flags that choose or shape an etcd cluster: it runs on a deployment
// of its backend that lockbench starts for it.
func (o *runOptions) ownDeployment() error {
	name, own := harness.OwnDeployment(o.lock)
	if !own {
		return nil // etcd's, or an unknown name, refused with the list of valid ones below
	}
	etcdFlags := append([]string{"endpoints", "worker", "worker-wait", "clock-skew", "keepalive", "rpc-timeout", "shared-conns", "inject-delay"}, extOnly...)
	for _, f := range append(etcdFlags, embeddedOnly...) {
		if o.set[f] && f != "data-dir" { // the deployment's data folder goes there too
			return badInputf("--%s: %s runs on a %s deployment that lockbench starts for it (docs/backends.md), where --%s does not apply", f, o.lock, name, f)
		}
	}
	return nil
}

// workerSpec sets the spec's --worker and --clock-skew: a worker shares
// an external cluster and a prefix with the others.
func (o *runOptions) workerSpec(ext *harness.External) error {
	switch {
	case (o.set["clock-skew"] || o.set["worker-wait"]) && !o.set["worker"]:
		return badInputf("--clock-skew and --worker-wait are for a worker's run: give --worker I/N too")
	case o.clockSkew < 0:
		return badInputf("--clock-skew %s: must be ≥0", o.clockSkew)
	case o.workerWait <= 0:
		return badInputf("--worker-wait %s: must be > 0", o.workerWait)
	case !o.set["worker"]:
		return nil
	}
	w, err := suite.ParseWorker(o.worker)
	if err != nil {
		return badInputf("--worker %w", err)
	}
	switch {
	case w.Count > 1 && ext == nil:
		return badInputf("--worker %s: workers drive one run on a cluster they share: give its --endpoints (and one --prefix for all of them)", o.worker)
	case w.Count > 1 && !o.set["prefix"]:
		return badInputf("--worker %s: every worker of a run must use the same key prefix: give --prefix (e.g. /lockbench/run1/)", o.worker)
	}
	w.Wait = o.workerWait
	o.spec.Worker, o.spec.ClockSkew = w, o.clockSkew
	return nil
}

// checkOutputs checks --out (a folder) and --bench-out (a file, if given)
// before anything runs.
func checkOutputs(out, benchOut string) error {
	if err := checkDir("out", out, false); err != nil {
		return err
	}
	return checkBenchOut(benchOut)
}

// checkBenchOut checks --bench-out, if given: "-" (standard output) or a
// file that can be written.
func checkBenchOut(path string) error {
	if path == "" || path == "-" {
		return nil
	}
	return checkFile("bench-out", path)
}

// scenarioSpec is the scenario with the flags that override it.
func (o *runOptions) scenarioSpec() (scenarios.Scenario, error) {
	sc, err := scenarios.Lookup(o.scenario)
	if err != nil {
		return sc, badInput(err)
	}
	if err := o.client.checkLeaseTTL(o.set); err != nil {
		return sc, err
	}
	switch {
	case o.set["clients"] && o.clients < 1:
		return sc, badInputf("--clients %d: must be ≥1", o.clients)
	case o.set["duration"] && o.duration <= 0:
		return sc, badInputf("--duration %s: must be > 0", o.duration)
	case o.set["hold"] && o.hold < 0:
		return sc, badInputf("--hold %s: must be ≥0", o.hold)
	}
	if o.set["clients"] {
		sc.Clients = o.clients
	}
	if o.set["duration"] {
		sc.Duration = scenarios.Duration(o.duration)
	}
	if o.set["hold"] {
		sc.Workload.Hold = scenarios.Duration(o.hold)
	}
	if o.set["lease-ttl"] {
		sc.LeaseTTL = scenarios.Duration(o.client.leaseTTL)
	}
	return sc, nil
}

// runRun runs the checked options, prints the tables and returns the
// outcome.
func runRun(ctx context.Context, e *env, o *runOptions) error {
	spec, sc := o.spec, o.spec.Scenario
	info := o.output.info(e)
	spec.Notice = noticeTo(info)
	e.raiseFDLimit(o.cluster.verbose)
	var res *harness.Result
	var err error
	progress := report.NewProgress(e.stderr, report.IsTerminal(os.Stderr) && e.stderr == io.Writer(os.Stderr), o.output.quiet)
	spec.Progress = func(elapsed time.Duration, grants int64) {
		progress.Update(fmt.Sprintf("%s × %s: %s of %s, %d grants", spec.Lock, sc.Name, elapsed.Round(time.Second), sc.Duration, grants))
	}
	if o.external != nil {
		if err := probeEtcd(ctx, o.external); err != nil {
			return err
		}
		fmt.Fprintf(info, "lockbench: %s × %s, %d clients, %s, seed %d, %s\n",
			spec.Lock, sc.Name, sc.Clients, sc.Duration, spec.Seed, o.ext.describe(o.external))
		if w := spec.Worker; w.Count > 1 {
			fmt.Fprintf(info, "lockbench: worker %s of the run under %s: it waits up to %s for the other workers to start\n", w, o.external.Prefix, o.workerWait)
		}
		res, err = harness.RunExternal(ctx, *o.external, spec)
	} else {
		if spec.Cluster, err = o.cluster.withData(e, spec.Cluster); err != nil {
			return err
		}
		name, system := etcdlocks.Backend, fmt.Sprintf("%d-member etcd", spec.Cluster.Members)
		if st, _ := locks.Lookup(spec.Lock); st.Backend != etcdlocks.Backend {
			name, system = st.Backend, st.Backend
		}
		fmt.Fprintf(info, "lockbench: %s × %s, %d clients, %s, seed %d, %s\n",
			spec.Lock, sc.Name, sc.Clients, sc.Duration, spec.Seed, system)
		spec.Started = func(endpoints []string) {
			fmt.Fprintf(info, "lockbench: %s up at %s; running\n", name, strings.Join(endpoints, ","))
		}
		res, err = harness.Run(ctx, spec)
	}
	progress.Done()
	if res == nil {
		return harnessErr(ctx, err, runFlags)
	}
	show := printRun
	if o.output.json {
		show = printRunJSON
	}
	if perr := show(e, res, sc.Duration, o.benchOut); perr != nil && err == nil {
		err = perr
	}
	return runOutcome(res.Summary, err)
}

// harnessErr is the outcome of a harness call that returned no result:
// its *InputError and *FieldError are bad input, the latter naming the
// flag from flags (e.g. --clients over the machine's budget).
func harnessErr(ctx context.Context, err error, flags map[string]string) error {
	var ie *harness.InputError
	var fe *harness.FieldError
	switch {
	case ctx.Err() != nil:
		return interrupted(err)
	case errors.As(err, &ie):
		return badInput(err)
	case errors.As(err, &fe):
		return badInput(flagError(err, flags))
	}
	return err
}

// printRun prints a finished run: its tables (whose verdict says when
// the run was interrupted), its first violations and its folder, and
// writes --bench-out.
func printRun(e *env, res *harness.Result, planned scenarios.Duration, benchOut string) error {
	shown := res.Summary
	switch {
	case shown.Interrupted:
		shown.Verdict = verdict.Verdict(string(shown.Verdict) + " (interrupted)")
	case shown.Saturated() && shown.Verdict != verdict.Pass:
		shown.Verdict = verdict.Verdict(string(shown.Verdict) + " (harness saturated)")
	case shown.EtcdSaturated():
		shown.Verdict = verdict.Verdict(string(shown.Verdict) + " (etcd saturated)")
	}
	if err := report.RunTable(e.stdout, shown); err != nil {
		return fmt.Errorf("print the run's table: %w", err)
	}
	for _, v := range firstN(res.Summary.Violations, 5) {
		fmt.Fprintf(e.stdout, "violation: %s\n", v.Explained())
	}
	if shown.Interrupted {
		fmt.Fprintf(e.stdout, "interrupted after %.1fs of %s: what ran is checked and written, marked interrupted\n",
			res.Summary.DurationS, planned)
	}
	if shown.Saturated() {
		fmt.Fprintf(e.stdout, "harness saturated: %s\n", res.Summary.Saturation.Reason)
		if shown.Verdict == verdict.Pass {
			fmt.Fprintln(e.stdout, "every check passed, but the figures include the harness's own queueing")
		}
	}
	if shown.EtcdSaturated() {
		fmt.Fprintln(e.stdout, etcdSaturatedLine(res.Summary))
	}
	fmt.Fprintf(e.stdout, "run folder: %s\n", res.Dir)
	if benchOut != "" {
		return writeBenchFile(e, benchOut, []report.Summary{res.Summary})
	}
	return nil
}

// etcdSaturatedLine says a run's etcd was overloaded, and what that means
// for its verdicts and figures.
func etcdSaturatedLine(sum report.Summary) string {
	return fmt.Sprintf("etcd saturated: %s; the verdicts stand, the figures are an overloaded etcd's", sum.EtcdOverload.Reason)
}

// printRunJSON is printRun for --json: the run's summary.json on stdout,
// its folder (and saturation) on stderr, --bench-out to its file.
func printRunJSON(e *env, res *harness.Result, _ scenarios.Duration, benchOut string) error {
	if err := printFile(e, filepath.Join(res.Dir, rundir.SummaryFile)); err != nil {
		return err
	}
	if res.Summary.Saturated() {
		fmt.Fprintf(e.stderr, "harness saturated: %s\n", res.Summary.Saturation.Reason)
	}
	if res.Summary.EtcdSaturated() {
		fmt.Fprintln(e.stderr, etcdSaturatedLine(res.Summary))
	}
	fmt.Fprintf(e.stderr, "run folder: %s\n", res.Dir)
	if benchOut != "" {
		return writeBenchFile(e, benchOut, []report.Summary{res.Summary})
	}
	return nil
}

// runOutcome is a written run's outcome; err is a failure after it was
// written (etcd's members did not stop).
func runOutcome(sum report.Summary, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("the run is written, but: %w", err)
	case sum.Interrupted:
		return errInterrupted
	case sum.Stopped != "":
		return fmt.Errorf("run stopped early: %s", sum.Stopped)
	case sum.Saturated() && sum.Verdict != verdict.Pass:
		return saturated(fmt.Sprintf("%s; the run is written, verdict %s", sum.Saturation.Reason, sum.Verdict))
	}
	return verdictOutcome(sum.Verdict)
}
