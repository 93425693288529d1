package cli

import (
	"fmt"
	"io"

	"github.com/lockbench/lockbench/internal/wholefile"
)

// outputFlags are --json and --quiet, spelled and meant the same on every
// command that has them (docs/design.md §9): --json prints the command's
// result as JSON on stdout (the record it wrote: summary.json,
// suite.json, bench.json) instead of its tables, and --quiet drops the
// informational lines on stderr (banners, progress, notes); errors are
// printed either way.
type outputFlags struct {
	json, quiet bool
}

// register adds --json (printing what) and, with quiet, --quiet to fs.
func (o *outputFlags) register(fs *flagSet, what string, quiet bool) {
	fs.BoolVar(&o.json, "json", false, "print "+what+" as JSON on stdout instead of the tables")
	if quiet {
		fs.BoolVar(&o.quiet, "quiet", false, "no informational lines on stderr (banners, progress, notes); errors still print")
	}
}

// checkStdout refuses --json beside an output file that is standard
// output too (by flag name, its path): the two would interleave.
func (o *outputFlags) checkStdout(files map[string]string) error {
	if !o.json {
		return nil
	}
	for flag, path := range files {
		if path == "-" {
			return badInputf("--json and --%s -: both write standard output (give --%s a file)", flag, flag)
		}
	}
	return nil
}

// info is where informational lines go: stderr, or nowhere with --quiet.
func (o *outputFlags) info(e *env) io.Writer {
	if o.quiet {
		return io.Discard
	}
	return e.stderr
}

// printFile copies the JSON record a command just wrote to stdout
// (--json): what is printed is what the folder holds.
func printFile(e *env, path string) error {
	b, err := wholefile.Read(path, "JSON record", wholefile.JSONLimit)
	if err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	_, err = e.stdout.Write(b)
	return err
}
