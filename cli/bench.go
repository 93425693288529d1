package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/lockbench/lockbench/bench"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/scenarios"
)

const benchSynopsis = "bench [--clients 2,8,64] [--locks a,b] [--duration D] [flags]\n\n" +
	"Measures, in one process on one embedded cluster: the commit floor (one client\n" +
	"Putting one key in a loop) and the same with two writers at once (a lock's\n" +
	"release commits beside another client's join: a handoff chain's ceiling),\n" +
	"the ideal handoff (clients passing a turn with one conditional commit a\n" +
	"step, seen through a watch: the limit a lock is compared against, ×ideal),\n" +
	"what the members' front doors and a fault proxy cost per RPC (relay cost),\n" +
	"then every lock at every client count under contention with hold 0\n" +
	"(throughput, handoff p50/p99, each as a ratio to the floor and to mutex),\n" +
	"then the target cell against the ideal in alternating slices (paired\n" +
	"rounds: the machine's drift falls on both, and the ideal targets are\n" +
	"judged on their median), each round with a slice of the target lock in\n" +
	"a bare Lock/Unlock loop, which splits the gap to the ideal into the\n" +
	"lock's share and the runner's (judged on 20 rounds or more), then the\n" +
	"target cell in one run with recording\n" +
	"switched on and off in alternating slices. Cells whose scenario has no\n" +
	"member fault (all bench cells) dial the members directly, not through the\n" +
	"front doors. After a cell of a strategy on etcd's lock service (rpc) it\n" +
	"probes that service on every member and replaces a cluster where it is\n" +
	"stuck (an etcd bug: see the README).\n" +
	"Writes bench.json and one run folder per cell into --out. etcd's data\n" +
	"folder is made under --data-dir, else $TMPDIR.\n" +
	"With --rate R (or --rate sweep) the bench is open-loop instead: after the\n" +
	"floor, each lock serves acquisitions arriving at R/s (uniform or poisson,\n" +
	"--arrivals) with a pool of --clients clients, its acquire latency measured\n" +
	"from each arrival's intended start, so a lock that falls behind shows its\n" +
	"queue; a sweep finds each lock's saturation rate (doubling, then\n" +
	"bisecting; bench.json says the criterion) and reports 50, 80 and 95 % of\n" +
	"it. It also writes bench.html, latency against offered rate."

// benchOptions are bench's flags.
type benchOptions struct {
	clients, locks, locksPerRun string
	spec                        bench.BenchSpec // durations, target, seed: filled by the flags
	out, benchOut               string
	output                      outputFlags
	cpuProfile                  string
	cluster                     clusterFlags
	client                      clientFlags
	// open is --rate and --arrivals (benchrate.go); given is the flags set
	// on the command line, which an open-loop bench checks.
	open  openFlags
	given map[string]bool
}

// benchFlags names the flag of each bench.BenchSpec field that Validate
// may find wrong, so that errors name what the user typed.
var benchFlags = map[string]string{
	"Clients": "clients", "Duration": "duration", "Hold": "hold", "Ramp": "ramp", "LeaseTTL": "lease-ttl", "FloorDuration": "floor-duration",
	"CellFloor": "cell-floor", "RecordRuns": "record-runs", "RecordDuration": "record-duration",
	"TargetLock": "target-lock", "TargetClients": "target-clients",
	"PairedRounds": "paired-rounds", "PairedSlice": "paired-slice", "LocksPerRun": "locks-per-run",
	"Rate": "rate", "Arrivals": "arrivals",
}

// benchCommand is `lockbench bench`: throughput and handoff latency of
// every strategy at several client counts, against the commit floor.
func benchCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "bench", benchSynopsis)
	var o benchOptions
	o.register(fs)
	if err := fs.parseFlagsOnly(args); err != nil {
		return err
	}
	o.given = fs.given()
	if err := o.check(); err != nil {
		return err
	}
	return runBench(ctx, e, &o)
}

// register adds bench's flags, the shared groups included, to fs.
func (o *benchOptions) register(fs *flagSet) {
	s := &o.spec
	fs.StringVar(&o.clients, "clients", joinInts(bench.DefaultBenchClients), "comma-separated client counts")
	fs.StringVar(&o.locksPerRun, "locks-per-run", "", "comma-separated counts of lock names (e.g. 1,16,256): also run every lock at every client count with its acquisitions spread over that many names, against the cluster's parallel write ceiling measured with as many writers (default: one name only)")
	fs.StringVar(&o.locks, "locks", strings.Join(locks.Names(), ","), "comma-separated lock strategies")
	fs.DurationVar(&s.Duration, "duration", bench.DefaultBenchDuration, "run time of each cell")
	fs.DurationVar(&s.Hold, "hold", 0, "how long each grant is held")
	fs.DurationVar(&s.Ramp, "ramp", 0, "clients join over this long instead of at once (client i's first acquire after i × ramp ÷ clients), as a fleet starts; shorter than --duration (0: all at once)")
	fs.DurationVar(&s.LeaseTTL, "lease-ttl", 0, "the clients' lease TTL, whole seconds; with thousands of clients it sizes the keepalive traffic (one refresh per lease every TTL/3 under auto, TTL/4 under safe) (0: the scenario's, 5s)")
	fs.DurationVar(&s.FloorDuration, "floor-duration", bench.DefaultFloorDuration, "how long the commit floor is measured")
	fs.DurationVar(&s.CellFloor, "cell-floor", 0, "also measure a floor this long just before each cell, and compute that cell's ratios against it (e.g. 1s; 0: off)")
	fs.StringVar(&s.TargetLock, "target-lock", bench.DefaultTargetLock, "lock of the cell held to the targets and measured with recording on and off")
	fs.IntVar(&s.TargetClients, "target-clients", bench.DefaultTargetClients, "client count of that cell")
	fs.IntVar(&s.RecordRuns, "record-runs", bench.DefaultRecordRuns, "recording on/off pairs of slices in one run of the target cell (0: skip)")
	fs.DurationVar(&s.RecordDuration, "record-duration", bench.DefaultRecordDuration, "length of each recording on/off slice (0: --duration)")
	fs.IntVar(&s.PairedRounds, "paired-rounds", bench.DefaultPairedRounds, "rounds of one ideal-handoff slice, one target-cell slice and one of the target lock in a bare Lock/Unlock loop, in alternating order; the targets are judged on their medians, the bare loop's on 20 rounds or more (0: skip)")
	fs.DurationVar(&s.PairedSlice, "paired-slice", bench.DefaultPairedSlice, "length of each paired slice")
	fs.Int64Var(&s.Seed, "seed", 1, "seed of every cell")
	fs.StringVar(&o.out, "out", "", "the bench folder itself, unlike run's and suite's --out (a parent folder): bench.json and a run folder per cell go straight into it (default "+filepath.Join(harness.DefaultOut, "bench-<timestamp>")+")")
	fs.StringVar(&o.benchOut, "bench-out", "", "also write Go benchmark-format lines to this file (- for stdout), for benchstat")
	o.output.register(fs, "bench.json (the bench folder's path goes to stderr)", true)
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole benchmark (clients and etcd members) to this file")
	o.client.register(fs, false, true)
	o.cluster.register(fs)
	o.open.register(fs)
}

// check validates every flag and completes the spec, before anything
// starts.
func (o *benchOptions) check() error {
	clients, err := parseInts("--clients", o.clients)
	if err != nil {
		return err
	}
	if o.locksPerRun != "" {
		if o.spec.LocksPerRun, err = parseInts("--locks-per-run", o.locksPerRun); err != nil {
			return err
		}
	}
	if o.spec.Open, err = o.open.spec(o.given); err != nil {
		return err
	}
	if o.spec.Open != nil && !o.given["clients"] {
		clients = []int{bench.DefaultRateClients}
	}
	cl, err := o.cluster.options()
	if err != nil {
		return err
	}
	rpcT, err := o.client.rpcTimeoutSpec()
	if err != nil {
		return err
	}
	lockNames, err := namesList("locks", o.locks)
	if err != nil {
		return err
	}
	kas, err := o.client.keepAlives(false)
	if err != nil {
		return err
	}
	// Bench cells run the contention scenario: no client faults.
	if err := o.client.checkSharedConns(scenarios.Scenario{}); err != nil {
		return err
	}
	s := &o.spec
	s.Locks, s.Clients, s.Cluster, s.RPCTimeout = lockNames, clients, cl, rpcT
	s.KeepAlive, s.SharedConns = kas[0], o.client.sharedConns
	s.Dir = o.out
	if s.Dir == "" {
		s.Dir = bench.NewBenchDir(harness.DefaultOut)
	}
	if err := s.Validate(); err != nil {
		return badInput(flagError(err, benchFlags))
	}
	if err := checkDir("out", s.Dir, false); err != nil {
		return err
	}
	if err := checkBenchOut(o.benchOut); err != nil {
		return err
	}
	if err := o.output.checkStdout(map[string]string{"bench-out": o.benchOut}); err != nil {
		return err
	}
	if o.cpuProfile != "" {
		return checkFile("cpuprofile", o.cpuProfile)
	}
	return nil
}

// runBench runs the checked benchmark and prints its table.
func runBench(ctx context.Context, e *env, o *benchOptions) error {
	spec := o.spec
	info := o.output.info(e)
	spec.Notice = noticeTo(info)
	e.raiseFDLimit(o.cluster.verbose)
	var err error
	if spec.Cluster, err = o.cluster.withData(e, spec.Cluster); err != nil {
		return err
	}
	if o.cpuProfile != "" {
		stop, err := startProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	fsync := "fsync on"
	if spec.Cluster.UnsafeNoFsync {
		fsync = "fsync OFF"
	}
	if spec.Open != nil {
		fmt.Fprintf(info, "lockbench: open-loop bench %s, %s, pool of %d clients, %s per run, hold %s, %d-member etcd, %s\n",
			strings.Join(spec.Locks, ","), openText(spec.Open), spec.Clients[0], spec.Duration, spec.Hold, spec.Cluster.Members, fsync)
	} else {
		fmt.Fprintf(info, "lockbench: bench %s × clients %s, %s per cell, hold %s, %d-member etcd, %s\n",
			strings.Join(spec.Locks, ","), joinInts(spec.Clients), spec.Duration, spec.Hold, spec.Cluster.Members, fsync)
	}
	progress := report.NewProgress(e.stderr, report.IsTerminal(os.Stderr) && e.stderr == io.Writer(os.Stderr), o.output.quiet)
	spec.Progress = progress.Update
	b, err := bench.RunBench(ctx, spec)
	progress.Done()
	if b != nil {
		if perr := printBench(e, b, spec.Dir, o.benchOut, o.output.json); perr != nil && err == nil {
			err = perr
		}
	}
	switch {
	case ctx.Err() != nil:
		return interrupted(err)
	case err != nil:
		return err
	case b.HasViolations():
		return errViolation
	case b.SaturatedFailures() > 0:
		return saturated(fmt.Sprintf("%d cells found violations on a saturated harness (their notes say harness saturated)", b.SaturatedFailures()))
	}
	return nil
}

// startProfile starts the CPU profile; stop ends it.
func startProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, badInputf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// printBench prints the benchmark's table and folder, and writes
// --bench-out.
func printBench(e *env, b *report.Bench, dir, benchOut string, asJSON bool) error {
	folderTo := e.stdout
	var err error
	if asJSON {
		// --json: bench.json on stdout, as the folder holds it.
		err, folderTo = printFile(e, filepath.Join(dir, rundir.BenchFile)), e.stderr
	} else {
		err = report.BenchTable(e.stdout, b)
	}
	if benchOut != "" {
		lerr := writeOutput(e, "bench-out", benchOut, func(w io.Writer) error { return report.WriteBenchResultLines(w, b) })
		if lerr != nil && err == nil {
			err = lerr
		}
	}
	fmt.Fprintf(folderTo, "bench folder: %s (%s)\n", dir, time.Duration(b.ElapsedS*float64(time.Second)).Round(time.Second))
	return err
}
