package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/suite"
)

// suiteOptions are suite's flags.
type suiteOptions struct {
	locks, scenarios string
	seeds            int
	firstSeed        int64
	out, benchOut    string
	junit            string
	quick            time.Duration
	output           outputFlags
	// leftOut are the default scenarios an external cluster cannot run.
	leftOut []string
	cluster clusterFlags
	client  clientFlags
	ext     extFlags
	set     map[string]bool
	reps    int
	inject  injectDelayFlag
	shard   string
	workers int
	// extended adds the extended set to the default --scenarios.
	extended bool
}

// suiteCommand is `lockbench suite`: the strategy × scenario × seed
// matrix on one cluster.
func suiteCommand(ctx context.Context, e *env, args []string) error {
	return suiteAs(ctx, e, "suite", "suite [--locks a,b] [--scenarios x,y] [--extended] [--seeds N] [--etcd-bin self,PATH] [flags]", nil, args)
}

// suiteAs is a suite under another command's name and synopsis, with
// other defaults for some of its flags (flag name → value, shown as the
// default by --help): a command that is a suite of its own cells
// (`lockbench redis`) takes every suite flag.
func suiteAs(ctx context.Context, e *env, name, synopsis string, defaults map[string]string, args []string) error {
	fs := newFlags(e, name, synopsis)
	o := suiteOptions{inject: injectDelayFlag{}}
	o.register(fs)
	for _, n := range slices.Sorted(maps.Keys(defaults)) {
		f := fs.Lookup(n)
		if err := f.Value.Set(defaults[n]); err != nil {
			return fmt.Errorf("%s's default --%s %q: %w", name, n, defaults[n], err)
		}
		f.DefValue = defaults[n]
	}
	if err := fs.parseFlagsOnly(args); err != nil {
		return err
	}
	o.set = fs.given()
	spec, err := o.spec(ctx)
	if err != nil {
		return err
	}
	return runSuite(ctx, e, &o, spec)
}

// register adds suite's flags to fs; o.inject must be made.
func (o *suiteOptions) register(fs *flagSet) {
	fs.StringVar(&o.shard, "shard", "", "run only shard I of N of the matrix (I/N, e.g. 2/4): its cells balanced by expected time, the same on every machine; lockbench merge joins the shards' folders")
	fs.IntVar(&o.workers, "parallel", 1, "run N cells at a time, each worker on its own cluster (with --endpoints, all on that one); cells gathered back in matrix order, the commit floor measured once, on the first")
	fs.IntVar(&o.reps, "reps", 1, "run every seed of every cell N times: the samples compare tests (≥4 a side for timings to gate)")
	fs.Var(o.inject, "inject-delay", injectUsage)
	fs.StringVar(&o.locks, "locks", strings.Join(locks.Names(), ","), "comma-separated lock strategies")
	fs.StringVar(&o.scenarios, "scenarios", strings.Join(scenarios.Names(), ","), "comma-separated scenarios (built-in names, of the default or the extended set, or .yaml paths)")
	fs.BoolVar(&o.extended, "extended", false, "run the extended set too: the default scenarios, then "+strings.Join(scenarios.ExtendedNames(), ", ")+" (etcd's peer faults, 4–14 s a cell, each cell on a cluster with what its faults need; the redis-* ones are for Redis's locks only, lockbench redis); with --scenarios, those alone (extended ones are found by name either way)")
	fs.IntVar(&o.seeds, "seeds", 1, "run every cell with N seeds, from --first-seed on")
	fs.Int64Var(&o.firstSeed, "first-seed", 1, "the first of the --seeds seeds (e.g. --seeds 10 --first-seed 11: seeds 11..20)")
	fs.StringVar(&o.out, "out", harness.DefaultOut, "parent folder: the suite is written to OUT/suite-<time>/ (as run's --out; bench's --out is the bench folder itself)")
	fs.DurationVar(&o.quick, "quick-duration", suite.DefaultQuickDuration, "cap on the duration of scenarios without fault steps (0: no cap)")
	o.output.register(fs, "suite.json (the suite folder's path goes to stderr)", true)
	fs.StringVar(&o.benchOut, "bench-out", "", "also write every cell's figures as Go benchmark lines to this file (- for stdout), for benchstat")
	fs.StringVar(&o.junit, "junit", "", "also write the suite as JUnit XML to this file, - for stdout (a testcase per run, lock/scenario/seed and its other dimensions; a failure per run not as expected, skipped when interrupted or not run)")
	o.client.register(fs, true, false)
	o.cluster.register(fs)
	o.cluster.etcdList = true
	fs.StringVar(&o.ext.endpoints, "endpoints", "", "comma-separated client URLs of an external etcd cluster (http:// or https://) to run every cell on; no embedded cluster is started, member-fault scenarios are refused (left out of the default list, said)")
	fs.StringVar(&o.ext.prefix, "prefix", "", "external cluster: the folder of the cells' key namespaces, each PREFIX<run-id>/ and deleted at its end; must start with / (default /lockbench/, and with --shard I/N /lockbench/shardIofN/, so that shards sharing a cluster never touch each other's keys)")
	o.ext.registerAccess(fs)
}

// spec checks the flags and builds the suite, before anything starts:
// each --etcd-bin binary is asked its release here, so that a bad one is
// refused before any folder is made.
func (o *suiteOptions) spec(ctx context.Context) (suite.Spec, error) {
	ext, err := o.ext.parse(o.set)
	if err != nil {
		return suite.Spec{}, err
	}
	if ext != nil {
		// Each cell's prefix is PREFIX<run-id>/: the flag names their folder.
		ext.Parent, ext.Prefix = ext.Prefix, ""
		if err := ext.Validate(); err != nil {
			return suite.Spec{}, badInput(err)
		}
	}
	rpcT, err := o.client.rpcTimeoutSpec()
	if err != nil {
		return suite.Spec{}, err
	}
	cl, err := o.cluster.options()
	if err != nil {
		return suite.Spec{}, err
	}
	if err := o.client.checkLeaseTTL(o.set); err != nil {
		return suite.Spec{}, err
	}
	if o.quick < 0 {
		return suite.Spec{}, badInputf("--quick-duration %s: must be ≥0 (0: no cap)", o.quick)
	}
	lockNames, err := namesList("locks", o.locks)
	if err != nil {
		return suite.Spec{}, err
	}
	if o.extended && !o.set["scenarios"] {
		o.scenarios += "," + strings.Join(scenarios.ExtendedNames(), ",")
	}
	scenNames, err := namesList("scenarios", o.scenarios)
	if err != nil {
		return suite.Spec{}, err
	}
	// Each keepalive policy given is a dimension of the matrix.
	kas, err := o.client.keepAlives(true)
	if err != nil {
		return suite.Spec{}, err
	}
	if o.reps < 1 {
		return suite.Spec{}, badInputf("--reps %d: must be ≥1", o.reps)
	}
	if o.firstSeed < 1 {
		return suite.Spec{}, badInputf("--first-seed %d: must be ≥1", o.firstSeed)
	}
	if o.workers < 1 {
		return suite.Spec{}, badInputf("--parallel %d: must be ≥1 (cells at a time)", o.workers)
	}
	var shard suite.ShardSpec
	if o.set["shard"] {
		if shard, err = suite.ParseShard(o.shard); err != nil {
			return suite.Spec{}, badInputf("--shard %w", err)
		}
		if ext != nil && !o.set["prefix"] {
			// Shards sharing the cluster never touch each other's keys.
			ext.Parent = shard.Prefix()
		}
	}
	spec := suite.Spec{
		Locks: lockNames, Seeds: o.seeds, FirstSeed: o.firstSeed, KeepAlives: kas, RPCTimeout: rpcT, Out: o.out,
		Cluster: cl, QuickDuration: o.quick,
		Reps: o.reps, InjectDelay: o.inject, External: ext, Shard: shard, Parallel: o.workers,
	}
	if o.quick == 0 {
		spec.QuickDuration = -1
	}
	if bins := splitList(o.cluster.etcdBin); len(bins) > 0 {
		// Every binary a dimension (one binary: a matrix of one).
		if _, err := cluster.ResolveBinaries(ctx, bins); err != nil {
			return spec, badInput(fmt.Errorf("--%w", err))
		}
		spec.EtcdBins, spec.Cluster.EtcdBin = bins, ""
	}
	if spec.Scenarios, err = o.scenarioList(scenNames, ext != nil, cl.Members); err != nil {
		return spec, err
	}
	if err := spec.Validate(); err != nil {
		return spec, badInput(flagError(err, map[string]string{"Seeds": "seeds", "FirstSeed": "first-seed", "Reps": "reps", "InjectDelay": "inject-delay", "Parallel": "parallel", "Shard": "shard"}))
	}
	if err := checkOutputs(o.out, o.benchOut); err != nil {
		return spec, err
	}
	if err := o.output.checkStdout(map[string]string{"bench-out": o.benchOut, "junit": o.junit}); err != nil {
		return spec, err
	}
	if o.junit != "" && o.junit != "-" {
		return spec, checkFile("junit", o.junit)
	}
	return spec, nil
}

// scenarioList looks up the --scenarios, each once, with --lease-ttl
// applied; on an external cluster (external) a scenario with member faults
// is refused when named, and left out of the default list (o.leftOut).
func (o *suiteOptions) scenarioList(names []string, external bool, members int) ([]scenarios.Scenario, error) {
	var out []scenarios.Scenario
	given := map[string]string{} // scenario name → how it was given
	for _, n := range names {
		sc, err := scenarios.Lookup(n)
		if err != nil {
			return nil, badInput(err)
		}
		// Two entries for one scenario (a name and a file of that name):
		// its cells would run twice and its hash be one of the two.
		if prev, dup := given[sc.Name]; dup {
			return nil, badInputf("--scenarios: %q and %q are both scenario %q (want each scenario once)", prev, n, sc.Name)
		}
		given[sc.Name] = n
		if external && sc.Needs().Members {
			if o.set["scenarios"] {
				return nil, badInputf("scenario %s injects member faults (crash, partition), which need the embedded cluster: leave it out with --endpoints; on an external cluster only client faults work", sc.Name)
			}
			o.leftOut = append(o.leftOut, sc.Name)
			continue
		}
		if o.set["lease-ttl"] {
			sc.LeaseTTL = scenarios.Duration(o.client.leaseTTL)
		}
		// Only etcd's cluster has --members; another backend's deployment
		// says which members it has before each of its cells.
		if err := sc.CheckMembers(members); err != nil && sc.For(etcdlocks.Backend) {
			return nil, badInput(err)
		}
		out = append(out, sc)
	}
	return out, nil
}

// runSuite runs the checked suite and prints its table.
func runSuite(ctx context.Context, e *env, o *suiteOptions, spec suite.Spec) error {
	e.raiseFDLimit(o.cluster.verbose)
	var err error
	if spec.External != nil {
		if err := probeEtcd(ctx, spec.External); err != nil {
			return err
		}
		if spec.Shard.Count > 0 && !o.set["prefix"] {
			fmt.Fprintf(o.output.info(e), "lockbench: shard %d/%d's keys live under %s (lockbench clean --shard %d/%d removes what a killed shard left there)\n",
				spec.Shard.Index, spec.Shard.Count, spec.External.Parent, spec.Shard.Index, spec.Shard.Count)
		}
		if len(o.leftOut) > 0 {
			fmt.Fprintf(o.output.info(e), "lockbench: on an external cluster, left out the scenarios with member faults: %s\n", strings.Join(o.leftOut, ", "))
		}
	} else if spec.Cluster, err = o.cluster.withData(e, spec.Cluster); err != nil {
		return err
	}
	progress := report.NewProgress(e.stderr, report.IsTerminal(os.Stderr) && e.stderr == io.Writer(os.Stderr), o.output.quiet)
	start := time.Now()
	spec.Progress = func(done, total int, cell string) {
		elapsed := time.Since(start)
		progress.Update(fmt.Sprintf("cell %d/%d %s — %s elapsed%s", done+1, total, cell, elapsed.Round(time.Second), eta(elapsed, done, total)))
	}
	res, err := suite.Run(ctx, spec)
	progress.Done()
	if res != nil {
		if perr := printSuite(e, res, time.Since(start), o.benchOut, err == nil, o.output.json); perr != nil && err == nil {
			err = perr
		}
		if jerr := writeJUnitFile(e, o.junit, res); jerr != nil && err == nil {
			err = jerr
		}
	}
	switch {
	case res == nil:
		// Refused before the suite's folder: bad input, as for run.
		return harnessErr(ctx, err, nil)
	case ctx.Err() != nil:
		return interrupted(err)
	case err != nil:
		return err
	}
	return suiteOutcome(res.Mismatches, res.Saturated)
}

// suiteOutcome is the outcome of a suite's judged cells: a violation when
// any is not as expected, else the harness's when some were not on a
// saturated harness.
func suiteOutcome(mismatches, saturatedCells int) error {
	switch {
	case mismatches > 0:
		return errViolation
	case saturatedCells > 0:
		return saturated(fmt.Sprintf("%d cells were not as expected on a saturated harness (their rows say harness saturated)", saturatedCells))
	}
	return nil
}

// saturatedCount is what a suite's folder line adds for its saturated
// cells.
func saturatedCount(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d on a saturated harness", n)
}

// printSuite prints the suite's table, folder and notes, and writes
// --bench-out when the suite finished.
func printSuite(e *env, res *suite.Result, took time.Duration, benchOut string, finished, asJSON bool) error {
	folderTo := e.stdout
	switch {
	case asJSON && res.Written:
		// --json: suite.json on stdout, as the folder holds it.
		if err := printFile(e, filepath.Join(res.Dir, rundir.SuiteFile)); err != nil {
			return err
		}
		folderTo = e.stderr
	case asJSON:
		folderTo = e.stderr
	case len(res.Cells) > 0:
		if err := report.SuiteTable(e.stdout, res.Cells); err != nil {
			return fmt.Errorf("print the suite's table: %w", err)
		}
	}
	if len(res.Cells) > 0 || res.Written {
		fmt.Fprintf(folderTo, "suite folder: %s (%d cells, %d not as expected%s, %s%s)\n", res.Dir, len(res.Cells), res.Mismatches, saturatedCount(res.Saturated), took.Round(time.Second), stoppedEarly(res))
	}
	for _, n := range res.Notes {
		fmt.Fprintf(e.stderr, "lockbench: %s\n", n)
	}
	if benchOut == "" || !finished {
		return nil
	}
	sums := make([]report.Summary, 0, len(res.Cells))
	for _, c := range res.Cells {
		sums = append(sums, c.Summary)
	}
	return writeBenchFile(e, benchOut, sums)
}

// stoppedEarly is what the suite folder line adds for a suite that did not
// run every cell: whether suite.json records what ran, and how much did
// not, so the line never reads as a finished suite's.
func stoppedEarly(res *suite.Result) string {
	h := res.Header
	switch {
	case !res.Written:
		return "; suite.json NOT written: the folder holds only the run folders"
	case h.Error != "" || h.Interrupted:
		return fmt.Sprintf("; stopped early: suite.json lists the cells that ran and the %d not run", len(h.NotRun))
	}
	return ""
}

// writeJUnitFile writes --junit (nothing when it is "", "-" standard
// output, else a file written atomically: writeOutput): the cells run so
// far, also when the suite stopped early, so CI shows what ran.
func writeJUnitFile(e *env, path string, res *suite.Result) error {
	if path == "" {
		return nil
	}
	return writeOutput(e, "junit", path, func(w io.Writer) error {
		return report.WriteJUnit(w, filepath.Base(res.Dir), res.Dir, res.Cells, res.Header.NotRun)
	})
}

// eta is ", ~D left" for a suite that started done of total cells in
// elapsed, at the pace so far; "" before three cells have started, when
// a pace means little.
func eta(elapsed time.Duration, done, total int) string {
	if done < 3 || done >= total {
		return ""
	}
	left := elapsed / time.Duration(done) * time.Duration(total-done)
	return fmt.Sprintf(", ~%s left", left.Round(time.Second))
}
