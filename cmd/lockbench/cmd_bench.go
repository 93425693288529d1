package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/lockbench/lockbench/cluster"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/report"
)

func init() { commands["bench"] = cmdBench }

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("bench", "bench [--clients 2,8,64] [--locks a,b] [--duration D] [flags]\n\n"+
		"Measures, in one process on one embedded cluster: the commit floor (one client\n"+
		"Putting one key in a loop) and the same with two writers at once (a lock's\n"+
		"release commits beside another client's join: a handoff chain's ceiling),\n"+
		"then every lock at every client count under contention with hold 0\n"+
		"(throughput, handoff p50/p99, each as a ratio to the floor and to mutex),\n"+
		"then the target cell with recording on and off. After a cell of a strategy\n"+
		"on etcd's lock service (rpc) it probes that service on every member and\n"+
		"replaces a cluster where it is stuck (an etcd bug: see the README).\n"+
		"Writes bench.json and one run folder per cell into --out. etcd's data\n"+
		"folder is made under $TMPDIR.", stdout)
	clientList := fs.String("clients", joinInts(harness.DefaultBenchClients), "comma-separated client counts")
	lockList := fs.String("locks", strings.Join(locks.Names(), ","), "comma-separated lock strategies")
	duration := fs.Duration("duration", harness.DefaultBenchDuration, "run time of each cell")
	hold := fs.Duration("hold", 0, "how long each grant is held")
	floorDur := fs.Duration("floor-duration", harness.DefaultFloorDuration, "how long the commit floor is measured")
	cellFloor := fs.Duration("cell-floor", 0, "also measure a floor this long just before each cell, and compute that cell's ratios against it (e.g. 1s; 0: off)")
	targetLock := fs.String("target-lock", harness.DefaultTargetLock, "lock of the cell held to the targets and measured with recording on and off")
	targetClients := fs.Int("target-clients", harness.DefaultTargetClients, "client count of that cell")
	recordRuns := fs.Int("record-runs", harness.DefaultRecordRuns, "recording on/off pairs of the target cell (0: skip)")
	recordDur := fs.Duration("record-duration", harness.DefaultRecordDuration, "run time of each recording on/off run")
	seed := fs.Int64("seed", 1, "seed of every cell")
	out := fs.String("out", "", "the bench folder (default "+filepath.Join(harness.DefaultOut, "bench-<timestamp>")+")")
	benchOut := fs.String("bench-out", "", "also write Go benchmark-format lines to this file (- for stdout)")
	keepalive := fs.String("keepalive", string(locks.KeepAliveAuto), "lease keepalive policy: auto, seed or safe (see docs/leases.md)")
	rpcTimeout := rpcTimeoutFlag(fs)
	sharedConns := sharedConnsFlag(fs)
	members := fs.Int("members", cluster.DefaultMembers, "etcd cluster members")
	noFsync := fs.Bool("unsafe-no-fsync", false, "disable fsync in etcd (faster; a member crash may lose data)")
	verbose := fs.Bool("verbose", false, "show etcd's own logs")
	quiet := fs.Bool("quiet", false, "no progress output")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole benchmark (clients and etcd members) to this file")
	if help, err := parse(fs, args); help || err != nil {
		return exitPass, err
	}
	if fs.NArg() > 0 {
		return 0, usageError{fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0))}
	}
	clients, err := parseInts("--clients", *clientList)
	if err != nil {
		return 0, usageError{err}
	}
	if *members < 1 || *members > 9 {
		return 0, usageError{fmt.Errorf("--members %d: must be 1..9", *members)}
	}
	dir := *out
	if dir == "" {
		dir = harness.NewBenchDir(harness.DefaultOut)
	}
	rpcT, err := rpcTimeoutSpec(*rpcTimeout)
	if err != nil {
		return 0, err
	}
	spec := harness.BenchSpec{
		Locks: splitList(*lockList), Clients: clients, Duration: *duration, Hold: *hold, FloorDuration: *floorDur, CellFloor: *cellFloor,
		TargetLock: *targetLock, TargetClients: *targetClients, RecordRuns: *recordRuns, RecordDuration: *recordDur,
		Seed: *seed, KeepAlive: locks.KeepAlive(*keepalive), RPCTimeout: rpcT, SharedConns: *sharedConns, Dir: dir,
		Cluster: cluster.Options{Members: *members, UnsafeNoFsync: *noFsync, Verbose: *verbose},
	}
	if err := spec.Validate(); err != nil {
		return 0, usageError{flagError(err, benchFlags)}
	}
	var lines *os.File
	if *benchOut != "" && *benchOut != "-" {
		// Opened before anything runs, so that a bad path costs no minutes.
		if lines, err = os.Create(*benchOut); err != nil {
			return 0, usageError{fmt.Errorf("--bench-out: %w", err)}
		}
		defer lines.Close()
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return 0, usageError{fmt.Errorf("--cpuprofile: %w", err)}
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return exitError, fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	fsync := "fsync on"
	if *noFsync {
		fsync = "fsync OFF"
	}
	fmt.Fprintf(stderr, "lockbench: bench %s × clients %s, %s per cell, hold %s, %d-member etcd, %s\n",
		strings.Join(spec.Locks, ","), joinInts(clients), spec.Duration, spec.Hold, *members, fsync)
	progress := report.NewProgress(stderr, report.IsTerminal(os.Stderr) && stderr == io.Writer(os.Stderr), *quiet)
	spec.Progress = progress.Update
	b, err := harness.RunBench(ctx, spec)
	progress.Done()
	if b != nil {
		if terr := report.BenchTable(stdout, &b.Bench); terr != nil && err == nil {
			err = terr
		}
		var lerr error
		switch {
		case *benchOut == "-":
			lerr = report.WriteBenchResultLines(stdout, &b.Bench)
		case lines != nil:
			if lerr = report.WriteBenchResultLines(lines, &b.Bench); lerr == nil {
				lerr = lines.Close()
			}
		}
		if lerr != nil && err == nil {
			err = fmt.Errorf("--bench-out: %w", lerr)
		}
		fmt.Fprintf(stdout, "bench folder: %s (%s)\n", dir, time.Duration(b.ElapsedS*float64(time.Second)).Round(time.Second))
	}
	switch {
	case ctx.Err() != nil:
		return exitInterrupted, err
	case err != nil:
		return exitError, err
	case b.HasViolations():
		return exitViolation, nil
	}
	return exitPass, nil
}

// benchFlags names the flag of each harness.BenchSpec field that Validate
// may find wrong, so that errors name what the user typed.
var benchFlags = map[string]string{
	"Clients": "clients", "Duration": "duration", "Hold": "hold", "FloorDuration": "floor-duration",
	"CellFloor": "cell-floor", "RecordRuns": "record-runs", "RecordDuration": "record-duration",
	"TargetLock": "target-lock", "TargetClients": "target-clients",
}

// parseInts reads "2,8,64".
func parseInts(flag, s string) ([]int, error) {
	var out []int
	for _, x := range splitList(s) {
		n, err := strconv.Atoi(x)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %q is not a whole number (e.g. 2,8,64)", flag, s, x)
		}
		if n < 1 {
			return nil, fmt.Errorf("%s %q: %d: must be ≥1", flag, s, n)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New(flag + " is empty: give client counts, e.g. 2,8,64")
	}
	return out, nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
