package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/lockbench/lockbench/cluster"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/scenario"
)

func init() { commands["suite"] = cmdSuite }

func cmdSuite(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("suite", "suite [--locks a,b] [--scenarios x,y] [--seeds N] [flags]", stdout)
	lockList := fs.String("locks", strings.Join(locks.Names(), ","), "comma-separated lock strategies")
	scenarioList := fs.String("scenarios", strings.Join(scenario.Names(), ","), "comma-separated scenarios (built-in names or .yaml paths)")
	seeds := fs.Int("seeds", 1, "run every cell with seeds 1..N")
	out := fs.String("out", harness.DefaultOut, "parent folder of the suite folder")
	quick := fs.Duration("quick-duration", harness.DefaultQuickDuration, "cap on the duration of scenarios without fault steps (0: no cap)")
	keepalive := fs.String("keepalive", string(locks.KeepAliveAuto), "lease keepalive policies, comma-separated (auto, seed, safe): each is a dimension of the matrix")
	rpcTimeout := rpcTimeoutFlag(fs)
	noFsync := fs.Bool("unsafe-no-fsync", false, "disable fsync in etcd (faster; a member crash may lose data)")
	verbose := fs.Bool("verbose", false, "show etcd's own logs")
	quiet := fs.Bool("quiet", false, "no progress output")
	benchOut := fs.String("bench-out", "", "also write every cell's figures as Go benchmark lines to this file (for benchstat)")
	if help, err := parse(fs, args); help || err != nil {
		return exitPass, err
	}
	if fs.NArg() > 0 {
		return 0, usageError{fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0))}
	}
	rpcT, err := rpcTimeoutSpec(*rpcTimeout)
	if err != nil {
		return 0, err
	}
	var kas []locks.KeepAlive
	for _, k := range splitList(*keepalive) {
		ka, err := locks.ParseKeepAlive(k)
		if err != nil {
			return 0, usageError{err}
		}
		kas = append(kas, ka)
	}
	spec := harness.SuiteSpec{
		Locks: splitList(*lockList), Seeds: *seeds, KeepAlives: kas, RPCTimeout: rpcT, Out: *out,
		Cluster: cluster.Options{UnsafeNoFsync: *noFsync, Verbose: *verbose}, QuickDuration: *quick,
	}
	if *quick == 0 {
		spec.QuickDuration = -1
	}
	for _, n := range splitList(*scenarioList) {
		sc, err := scenario.Lookup(n)
		if err != nil {
			return 0, usageError{err}
		}
		spec.Scenarios = append(spec.Scenarios, sc)
	}
	if err := spec.Validate(); err != nil {
		return 0, usageError{flagError(err, map[string]string{"Seeds": "seeds"})}
	}
	progress := report.NewProgress(stderr, report.IsTerminal(os.Stderr) && stderr == io.Writer(os.Stderr), *quiet)
	start := time.Now()
	spec.Progress = func(done, total int, cell string) {
		progress.Update(fmt.Sprintf("cell %d/%d %s — %s elapsed", done+1, total, cell, time.Since(start).Round(time.Second)))
	}
	res, err := harness.Suite(ctx, spec)
	progress.Done()
	if res != nil && len(res.Cells) > 0 {
		if terr := report.SuiteTable(stdout, res.Cells); terr != nil && err == nil {
			err = terr
		}
		fmt.Fprintf(stdout, "suite folder: %s (%d cells, %d not as expected, %s)\n", res.Dir, len(res.Cells), res.Mismatches, time.Since(start).Round(time.Second))
	}
	if res != nil {
		for _, n := range res.Notes {
			fmt.Fprintf(stderr, "lockbench: %s\n", n)
		}
	}
	if *benchOut != "" && res != nil && err == nil {
		var sums []report.Summary
		for _, c := range res.Cells {
			sums = append(sums, c.Summary)
		}
		err = writeBenchFile(*benchOut, sums)
	}
	switch {
	case ctx.Err() != nil:
		return exitInterrupted, err
	case err != nil:
		return exitError, err
	case res.Mismatches > 0:
		return exitViolation, nil
	}
	return exitPass, nil
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
