package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
)

// regressOptions are regress's own flags; every other argument is a
// suite flag, given to both sides' suites.
type regressOptions struct {
	base      string
	reps      int
	out       string
	inject    injectDelayFlag
	compare   compareOptions
	suiteArgs []string
}

// regressOwn are the flags regress keeps for itself (with whether they
// take a value); the rest go to both suites. -h and --help are regress's
// own so that help wins over everything: it prints regress's flags and
// exits 0, before --base is checked or anything is built.
var regressOwn = map[string]bool{"base": true, "reps": true, "out": true, "inject-delay": true,
	"threshold": true, "min-delta": true, "alpha": true, "normalize": true, "json": false,
	"h": false, "help": false}

// regressCommand is `lockbench regress --base REV [--reps N] [suite
// flags]`: an A/B comparison on one machine. It builds REV's lockbench in
// a temporary git worktree, runs REV's and this binary's suites in turn,
// one repetition each, N times (alternating which goes first), merges
// each side's runs and compares them (report.Compare; exit 1 on a
// regression or an incomplete comparison). Interleaving puts both sides
// through the same machine noise, which a committed baseline cannot.
func regressCommand(ctx context.Context, e *env, args []string) error {
	o, err := parseRegress(e, args)
	if err != nil {
		return err
	}
	return runRegress(ctx, e, o)
}

// parseRegress splits args into regress's flags and the suites', and
// checks them before anything is built.
func parseRegress(e *env, args []string) (*regressOptions, error) {
	var own []string
	o := &regressOptions{inject: injectDelayFlag{}}
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		takes, ok := regressOwn[name]
		if !strings.HasPrefix(args[i], "-") || !ok {
			o.suiteArgs = append(o.suiteArgs, args[i])
			continue
		}
		own = append(own, args[i])
		if takes && !hasValue && i+1 < len(args) {
			i++
			own = append(own, args[i])
		}
	}
	fs := newFlags(e, "regress", "regress --base REV [--reps N] [--inject-delay LOCK=D] [compare flags] [suite flags]\n\n"+
		"Every flag not listed below is a suite flag (lockbench suite --help), given to both sides' suites.")
	fs.StringVar(&o.base, "base", "", "the git revision to compare with (e.g. origin/main, HEAD~1)")
	fs.IntVar(&o.reps, "reps", 5, "repetitions of each side's suite, interleaved: the samples a side (≥4 for timings to gate)")
	fs.StringVar(&o.out, "out", harness.DefaultOut, "parent folder of the regress folder (both sides' suites, base.json, new.json)")
	fs.Var(o.inject, "inject-delay", injectUsage+"; the new side only")
	o.compare.threshold = thresholdFlag{v: report.DefaultThreshold}
	fs.Var(&o.compare.threshold, "threshold", "minimum effect of a regression, a `percent` of the base median")
	minDelta := fs.Duration("min-delta", DefaultMinDelta, "latency medians closer than this `duration` never regress")
	fs.Float64Var(&o.compare.alpha, "alpha", report.DefaultAlpha, "significance level after Holm's correction")
	fs.StringVar(&o.compare.normalize, "normalize", report.NormalizeAuto, "divide figures by the commit floor: auto, always (each run by its own suite's floor), never")
	fs.BoolVar(&o.compare.asJSON, "json", false, "print the comparison as JSON")
	if err := fs.parseFlagsOnly(own); err != nil {
		return nil, err
	}
	o.compare.minDelta = float64(*minDelta) / 1e6
	switch {
	case o.base == "":
		return nil, badInputf("--base REV is required: the git revision to compare with, e.g. origin/main")
	case o.reps < 1:
		return nil, badInputf("--reps %d: must be ≥1", o.reps)
	case !(o.compare.alpha > 0 && o.compare.alpha < 1):
		return nil, badInputf("--alpha %g: must be between 0 and 1", o.compare.alpha)
	}
	if err := checkNormalize(o.compare.normalize); err != nil {
		return nil, err
	}
	if out, err := exec.Command("git", "rev-parse", "--verify", "--quiet", o.base+"^{commit}").Output(); err != nil || len(out) == 0 {
		return nil, badInputf("--base %s: not a git revision here (run regress inside the repository; fetch origin first for origin/main)", o.base)
	}
	return o, checkDir("out", o.out, false)
}

// runRegress builds the base, runs the interleaved suites and compares.
func runRegress(ctx context.Context, e *env, o *regressOptions) (err error) {
	dir := filepath.Join(o.out, "regress-"+time.Now().UTC().Format("20060102T150405Z"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create regress folder: %w", err)
	}
	tmp, err := e.scratch.make("")
	if err != nil {
		return err
	}
	baseBin, cleanup, err := buildBase(ctx, o.base, tmp)
	defer func() {
		if cerr := cleanup(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err != nil {
		return err
	}
	newBin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this lockbench binary: %w", err)
	}
	sides := [2]side{{name: "base", bin: baseBin, dir: filepath.Join(dir, "base")},
		{name: "new", bin: newBin, dir: filepath.Join(dir, "new"), extra: injectArgs(o.inject)}}
	for r := range o.reps {
		for i := range 2 {
			s := &sides[(r+i)%2] // A,B then B,A: neither side always runs first
			fmt.Fprintf(e.stderr, "regress: rep %d/%d: %s suite\n", r+1, o.reps, s.name)
			if err := s.run(ctx, o.suiteArgs); err != nil {
				return err
			}
		}
	}
	return compareSides(ctx, e, o, dir, sides)
}

// side is one binary's suites.
type side struct {
	name, bin, dir string
	extra          []string
	parts          []report.Suite
}

// run runs one suite of the side (one repetition) and keeps its
// suite.json. Exit 1 (a cell not as expected) is a result, not a failure:
// compare judges it.
func (s *side) run(ctx context.Context, suiteArgs []string) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	before, _ := filepath.Glob(filepath.Join(s.dir, "suite-*"))
	args := append([]string{"suite", "--quiet", "--out", s.dir}, suiteArgs...)
	cmd := exec.CommandContext(ctx, s.bin, append(args, s.extra...)...)
	cmd.Stdout = nil
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return interrupted(ctx.Err())
	}
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == ExitViolation) {
		return fmt.Errorf("%s suite (%s %s): %w: %s", s.name, s.bin, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	after, _ := filepath.Glob(filepath.Join(s.dir, "suite-*"))
	if len(after) != len(before)+1 {
		return fmt.Errorf("%s suite wrote no suite folder in %s: %s", s.name, s.dir, strings.TrimSpace(stderr.String()))
	}
	suite, err := report.ReadSuiteFile(filepath.Join(after[len(after)-1], rundir.SuiteFile))
	if err != nil {
		return fmt.Errorf("%s suite: %w", s.name, err)
	}
	s.parts = append(s.parts, suite)
	return nil
}

func injectArgs(f injectDelayFlag) []string {
	if len(f) == 0 {
		return nil
	}
	return []string{"--inject-delay", f.String()}
}

// compareSides merges each side's suites into base.json and new.json in
// dir and compares them as compare would.
func compareSides(ctx context.Context, e *env, o *regressOptions, dir string, sides [2]side) error {
	paths := [2]string{}
	for i, s := range sides {
		paths[i] = filepath.Join(dir, s.name+".json")
		if err := rundir.WriteJSON(paths[i], report.Merge(s.parts...)); err != nil {
			return fmt.Errorf("write %s: %w", paths[i], err)
		}
	}
	fmt.Fprintf(e.stderr, "regress: base %s vs this binary, %d interleaved suite(s) a side; both sides' runs in %s\n", o.base, o.reps, dir)
	c := o.compare
	c.base, c.next = paths[0], paths[1]
	return runCompare(ctx, e, c)
}

// buildBase checks rev out into a temporary git worktree under tmp and
// builds its lockbench there. cleanup removes the worktree (and is safe to
// call when building failed); the CLI's scratch removal takes tmp on
// every other way out.
func buildBase(ctx context.Context, rev, tmp string) (bin string, cleanup func() error, err error) {
	src := filepath.Join(tmp, "src")
	cleanup = func() error {
		if out, err := exec.Command("git", "worktree", "remove", "--force", src).CombinedOutput(); err != nil {
			if _, statErr := os.Stat(src); statErr != nil {
				_ = exec.Command("git", "worktree", "prune").Run()
				return nil // never added
			}
			return fmt.Errorf("remove the base worktree %s: %w: %s", src, err, out)
		}
		return nil
	}
	if out, err := exec.CommandContext(ctx, "git", "worktree", "add", "--detach", src, rev).CombinedOutput(); err != nil {
		return "", cleanup, fmt.Errorf("check out %s in a worktree: %w: %s", rev, err, out)
	}
	bin = filepath.Join(tmp, "lockbench-base")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/lockbench")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return "", cleanup, fmt.Errorf("build lockbench at %s: %w: %s", rev, err, out)
	}
	return bin, cleanup, nil
}
