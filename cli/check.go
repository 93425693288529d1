package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"text/tabwriter"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
)

// checkOptions are check's arguments.
type checkOptions struct {
	file   string
	asJSON bool
}

// checkCommand is `lockbench check FILE.jsonl`: re-checks any history,
// saved or hand-written (docs/design.md §3).
func checkCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "check", "check FILE.jsonl [--json]")
	var o checkOptions
	fs.BoolVar(&o.asJSON, "json", false, "print the check report as JSON")
	pos, err := fs.parseInterspersed(args)
	if err != nil {
		return err
	}
	switch len(pos) {
	case 0:
		return badInput(errors.New("no history file given: lockbench check FILE.jsonl"))
	case 1:
		o.file = pos[0]
	default:
		return badInputf("unexpected argument %q: check takes one history file", pos[1])
	}
	return runCheck(ctx, e, o)
}

// runCheck checks o.file and prints the report.
func runCheck(_ context.Context, e *env, o checkOptions) error {
	events, err := history.ReadFile(o.file)
	if err != nil {
		return badInput(err)
	}
	rep := check.Check(events, check.Options{}).Report
	if o.asJSON {
		if err := writeJSON(e.stdout, rep); err != nil {
			return fmt.Errorf("print the report: %w", err)
		}
	} else {
		printReport(e.stdout, o.file, len(events), rep)
	}
	if rep.Verdict == verdict.Fail {
		return errViolation
	}
	return nil
}

// printReport prints a check report as text.
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

// listCommand is `lockbench list`: every registered strategy (a program
// built on Main lists its own too) and every built-in scenario.
func listCommand(_ context.Context, e *env, args []string) error {
	fs := newFlags(e, "list", "list")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInputf("list takes no arguments, got %q: it lists every lock strategy and scenario", fs.Arg(0))
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LOCK\tDESCRIPTION\tORIGIN")
	for _, s := range locks.All() {
		name := s.Name
		if s.Buggy {
			name += " (known-buggy)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, s.Description, s.Origin)
	}
	fmt.Fprintln(tw, "\nSCENARIO\tDESCRIPTION\t")
	for _, n := range scenarios.Names() {
		sc, _ := scenarios.Lookup(n)
		fmt.Fprintf(tw, "%s\t%s\t\n", sc.Name, sc.Description)
	}
	return tw.Flush()
}
