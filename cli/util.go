package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
)

// writeOutput writes what render produces to the path given to --flag:
// "-" is standard output (on every command that writes one), any other
// path a file written atomically (rundir.WriteFile), so that a reader
// never sees half of it and a failed render leaves a previous file alone.
func writeOutput(e *env, flag, path string, render func(io.Writer) error) error {
	var err error
	if path == "-" {
		err = render(e.stdout)
	} else {
		err = rundir.WriteFile(path, render)
	}
	if err != nil {
		return fmt.Errorf("--%s: %w", flag, err)
	}
	return nil
}

// writeBenchFile writes the summaries as Go benchmark lines for
// benchstat to --bench-out's path (writeOutput), with this machine's
// configuration lines: the runs just ran here.
func writeBenchFile(e *env, path string, sums []report.Summary) error {
	return writeOutput(e, "bench-out", path, func(w io.Writer) error {
		return report.WriteBenchLines(w, rundir.ThisHost(), sums)
	})
}

// firstN is xs cut to at most n elements.
func firstN[T any](xs []T, n int) []T {
	if len(xs) > n {
		return xs[:n]
	}
	return xs
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// flagError restates a *harness.FieldError with the flag's name from
// flags: "--floor-duration 0s: must be > 0" rather than "floor duration
// 0s: must be > 0": the library names its fields, the CLI its flags.
// Other errors are returned as they are.
func flagError(err error, flags map[string]string) error {
	var fe *harness.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	name, ok := flags[fe.Field]
	if !ok {
		return err
	}
	if fe.Value == nil {
		return fmt.Errorf("--%s: %w", name, fe.Err)
	}
	return fmt.Errorf("--%s %v: %w", name, fe.Value, fe.Err)
}

// namesList reads flag's "a, b,c" as [a b c] like splitList, but refuses
// an empty entry ("a,,b") or a name given twice: either would run a matrix
// other than the one typed (a cell twice, or a typo's name dropped) without
// a word. An empty or blank value is no names, for the caller to judge.
func namesList(flag, s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for i, x := range strings.Split(s, ",") {
		x = strings.TrimSpace(x)
		if x == "" {
			return nil, badInputf("--%s %q: entry %d is empty (want comma-separated names, none empty, each once)", flag, s, i+1)
		}
		if slices.Contains(out, x) {
			return nil, badInputf("--%s %q: %q is listed twice (want each name once)", flag, s, x)
		}
		out = append(out, x)
	}
	return out, nil
}

// splitList reads "a, b,c" as [a b c].
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// parseInts reads flag's value "2,8,64".
func parseInts(flag, s string) ([]int, error) {
	var out []int
	for _, x := range splitList(s) {
		n, err := strconv.Atoi(x)
		if err != nil {
			return nil, badInputf("%s %q: %q is not a whole number (e.g. 2,8,64)", flag, s, x)
		}
		switch {
		case n < 1 && x == s:
			// One count: worded as run's --clients.
			return nil, badInputf("%s %d: must be ≥1", flag, n)
		case n < 1:
			return nil, badInputf("%s %s: %d: must be ≥1", flag, s, n)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, badInputf("%s is empty: give client counts, e.g. 2,8,64", flag)
	}
	return out, nil
}

// joinInts writes [2 8 64] as "2,8,64".
func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
