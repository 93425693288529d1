// Package cli is the whole lockbench command line as a library, so that a
// program can be lockbench with its own lock strategies: it imports the
// packages that register them (locks.Register in an init) and calls Main.
//
//	package main
//
//	import (
//		_ "example.com/mylock"
//		"github.com/lockbench/lockbench/cli"
//	)
//
//	func main() { cli.Main() }
//
// list, run, suite and bench then see the registered strategies.
// cmd/lockbench is exactly this with lockbench's own strategies.
//
// Each command is an options struct filled from its flags and a function
// run(ctx, env, opts) that does the work; the flag groups that several
// commands share (the embedded cluster's, the lock clients', an external
// cluster's) are defined once. Every outcome is an error value, and one
// function (exitCode) turns it into the exit status (docs/design.md §9).
package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	// The shipped adapters (Hidden: run by name) register on import.
	_ "github.com/lockbench/lockbench/adapters"
	"github.com/lockbench/lockbench/etcd/cluster"
)

const usage = `lockbench — benchmark and chaos-test distributed locks on etcd, ZooKeeper and Redis

Usage:
  lockbench run     --lock NAME --scenario NAME [flags]  run one scenario on an embedded (or --endpoints) etcd cluster, or on
                                                         the ZooKeeper ensemble or Redis deployment it starts for a lock of theirs
  lockbench suite   [--locks a,b] [--scenarios x,y] [--seeds N] [--first-seed S]
                                                         run the strategy × scenario matrix; exit 1 when a verdict differs from its expectation
  lockbench merge   SHARD_DIR...|WORKER_DIR... [--out D] join suite --shard I/N's folders into one suite, or run --worker I/N's into one run
  lockbench bench   [--clients 2,8,64] [--locks ...]     contended throughput and handoff latency against the commit floor
  lockbench check   FILE.jsonl|- [--json] [flags]        re-check a saved (or hand-written) history (-: standard input)
  lockbench report  RUN_DIR                              re-render a run's tables and report.html
  lockbench compare BASE.json NEW.json [--threshold 20%] exit 1 on a significant regression, a failed asserted check or an incomplete comparison
  lockbench regress --base REV [--reps N] [suite flags]  build REV, run its suite and this one's interleaved on this machine, compare
  lockbench cluster [--members 3] [--tls]                keep an embedded cluster up for experiments until Ctrl-C
  lockbench clean   --endpoints URLS [--yes]             list (--yes: delete) the keys a killed run left on an external cluster
  lockbench redis   [--locks a,b] [--faults x,y] [--seeds N]
                                                         Redis locks under failovers, beside etcd's lock under a leader kill
  lockbench list    [--json]                             list lock strategies and scenarios
  lockbench version                                      the lockbench build (also --version) and the schema of its files

Run 'lockbench COMMAND --help' (or 'lockbench help COMMAND') for a command's flags.

Exit status: 0 all checks pass; 1 a violation; 2 bad input or usage;
3 the harness failed (e.g. etcd did not start); 4 lockbench panicked (a bug:
please report it with the stack it printed); 5 no check failed but one
could not decide (verdict unknown; run, check, report); 130 interrupted.
`

// command is one subcommand: it parses its arguments into its options and
// runs them. Its error is its outcome (see exitCode).
type command func(ctx context.Context, e *env, args []string) error

// commands maps each subcommand's name to its function; a new command is
// one new file and one entry here.
var commands = map[string]command{
	"run":     runCommand,
	"suite":   suiteCommand,
	"bench":   benchCommand,
	"check":   checkCommand,
	"report":  reportCommand,
	"compare": compareCommand,
	"merge":   mergeCommand,
	"regress": regressCommand,
	"cluster": clusterCommand,
	"clean":   cleanCommand,
	"redis":   redisCommand,
	"list":    listCmd,
	"version": versionCommand,
}

// env is what a command uses besides its options: where it prints, and
// the scratch folders the CLI removes on every way out (forced exits and
// panics included).
type env struct {
	// stdin is what `check -` reads.
	stdin          io.Reader
	stdout, stderr io.Writer
	scratch        *scratch
}

// Main runs the lockbench CLI with os.Args and exits with its status. It
// is all a main package needs: see the package comment.
func Main() {
	// --etcd-bin self re-executes this binary as an etcd member.
	cluster.RunMemberIfAsked()
	os.Exit(Run(os.Args[1:], os.Stdout, os.Stderr))
}

// Run runs the lockbench CLI with args (without the program name),
// printing to stdout and stderr, and returns the exit status (Exit*
// constants). SIGINT and SIGTERM stop the work cleanly while it runs; a
// second one exits the process at once (with ExitInterrupted). Tests and
// wrappers call Run; programs call Main.
func Run(args []string, stdout, stderr io.Writer) (code int) {
	e := &env{stdin: os.Stdin, stdout: stdout, stderr: stderr, scratch: &scratch{}}
	defer e.scratch.removeAll()
	name := "lockbench"
	if len(args) > 0 {
		name += " " + args[0]
	}
	defer func() {
		if r := recover(); r != nil {
			code = e.finish(name, recovered(r))
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := e.onSignal(cancel, os.Exit)
	defer stop()
	return e.finish(name, dispatch(ctx, e, args))
}

// dispatch runs the command args name.
func dispatch(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return errUsageShown
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" {
			// "lockbench help CMD" is "lockbench CMD --help".
			if cmd, ok := commands[args[1]]; ok {
				return cmd(ctx, e, []string{"--help"})
			}
			return badInputf("help %q: unknown command; valid commands are %s", args[1], commandNames())
		}
		fmt.Fprint(e.stdout, usage)
		return nil
	case "-version", "--version":
		return versionCommand(ctx, e, args[1:])
	}
	cmd, ok := commands[args[0]]
	if !ok {
		return badInputf("unknown command %q: valid commands are %s", args[0], commandNames())
	}
	return cmd(ctx, e, args[1:])
}

// commandNames lists the commands for an error message.
func commandNames() string { return strings.Join(slices.Sorted(maps.Keys(commands)), ", ") }

// finish prints err's message, if it has one to print, and returns its
// exit status.
func (e *env) finish(name string, err error) int {
	if msg := message(err); msg != "" {
		fmt.Fprintf(e.stderr, "%s: %s\n", name, msg)
	}
	return exitCode(err)
}
