package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/wholefile"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/scenarios"
	"github.com/lockbench/lockbench/verdict"
)

// checkOptions are check's arguments.
type checkOptions struct {
	file   string // "-": standard input
	asJSON bool
	// livenessBound is --liveness-bound, the fault-free bound
	// (check.Options.QuietBound); 0: derived from the history.
	livenessBound time.Duration
	// order is --order: what the strategy that made the history promises.
	order verdict.Order
	// overrunBound is --overrun-bound; 0: the checker's default.
	overrunBound time.Duration
}

// checkCommand is `lockbench check FILE.jsonl`: re-checks any history,
// saved or hand-written (docs/design.md §3).
func checkCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "check", "check FILE.jsonl|- [--json] [--liveness-bound D] [--order fifo|none] [--overrun-bound D]")
	var o checkOptions
	fs.BoolVar(&o.asJSON, "json", false, "print the check report as JSON, with the file's name and event count")
	fs.DurationVar(&o.livenessBound, "liveness-bound", 0, fmt.Sprintf(
		"the longest the lock may stay free while someone waits outside every fault's window (default: max(%s, %d × the history's median release latency, %d × its longest)); a fault's window is what it may cost a correct lock, e.g. %s + 1s after a client fault",
		check.MinQuietBound, check.QuietReleases, check.TailReleases, check.DefaultLivenessBound))
	order := fs.String("order", "", fmt.Sprintf("the grant order the strategy promises: %s (a later request granted first fails fairness) or %s (default: none promised)", verdict.FIFO, verdict.NoOrder))
	fs.DurationVar(&o.overrunBound, "overrun-bound", 0, fmt.Sprintf(
		"the longest a holder may believe it holds after its key went with its lease: the keepalive policy's stated overrun (default %s, auto's at a %s TTL; safe at a 1s TTL: 750ms; docs/leases.md)",
		check.DefaultOverrunBound, check.DefaultLeaseTTL))
	pos, err := fs.parseInterspersed(args)
	if err != nil {
		return err
	}
	if fs.given()["order"] {
		if o.order, err = verdict.ParseOrder(*order); err != nil {
			return badInputf("--order: %v", err)
		}
	}
	switch len(pos) {
	case 0:
		return badInput(errors.New("no history file given: lockbench check FILE.jsonl (or - for standard input)"))
	case 1:
		o.file = pos[0]
	default:
		return badInputf("unexpected argument %q: check takes one history file", pos[1])
	}
	if fs.given()["liveness-bound"] && o.livenessBound <= 0 {
		return badInputf("--liveness-bound %s: must be > 0 (the longest a free lock may keep a waiter waiting with no fault, e.g. 1s)", o.livenessBound)
	}
	if fs.given()["overrun-bound"] && o.overrunBound <= 0 {
		return badInputf("--overrun-bound %s: must be > 0 (the keepalive policy's stated overrun, e.g. 1.5s for auto at a 1s TTL)", o.overrunBound)
	}
	return runCheck(ctx, e, o)
}

// checkJSON is what `check --json` prints: the report's keys, plus which
// history it is about, so that a tool collecting many can tell them apart.
type checkJSON struct {
	// File is the history's path as given ("-": standard input).
	File string `json:"file"`
	// Events is how many events it held (blank lines do not count).
	Events int `json:"events"`
	check.Report
}

// runCheck checks o.file and prints the report.
func runCheck(ctx context.Context, e *env, o checkOptions) error {
	events, err := readHistory(ctx, e, o.file)
	switch {
	case errors.Is(err, errInterrupted):
		return err
	case err != nil:
		return badInput(err)
	}
	rep := check.Check(events, check.Options{QuietBound: o.livenessBound, Order: o.order, OverrunBound: o.overrunBound}).Report
	if o.asJSON {
		if err := writeJSON(e.stdout, checkJSON{File: o.file, Events: len(events), Report: rep}); err != nil {
			return fmt.Errorf("print the report: %w", err)
		}
	} else {
		name := o.file
		if name == "-" {
			name = "standard input"
		}
		if err := printReport(e.stdout, name, len(events), rep); err != nil {
			return err
		}
	}
	return verdictOutcome(rep.Verdict)
}

// readHistory decodes the history at path, or standard input for "-", as
// it streams in: only the events are kept, never the file's bytes whole.
// A file is decoded on every core (history.ReadFile); standard input line
// by line, until ctx ends: a signal stops a read that waits on a pipe
// (its goroutine, blocked in a read, ends with the process).
func readHistory(ctx context.Context, e *env, path string) ([]history.Event, error) {
	if path != "-" {
		defer holdCollector(path)()
		return history.ReadFile(path)
	}
	type read struct {
		events []history.Event
		err    error
	}
	done := make(chan read, 1)
	go func() {
		events, err := history.Read(&capped{ctx: ctx, r: e.stdin, left: wholefile.HistoryLimit})
		done <- read{events, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			if ctx.Err() != nil {
				return nil, interrupted(nil)
			}
			return nil, fmt.Errorf("standard input: %w", r.err)
		}
		return r.events, nil
	case <-ctx.Done():
		return nil, interrupted(nil)
	}
}

// capped reads r until left bytes have been read, then fails: standard
// input is held to the limit a history file is (wholefile.HistoryLimit),
// rather than grow the events without bound. It stops once ctx ends.
type capped struct {
	ctx  context.Context
	r    io.Reader
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if c.left <= 0 {
		return 0, fmt.Errorf("more than %s: a history is at most that", wholefile.Size(wholefile.HistoryLimit))
	}
	p = p[:min(int64(len(p)), c.left)]
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// holdCollector holds the garbage collector off while the history at
// path is read, unless the user tuned it (GOGC, GOMEMLIMIT), and returns
// what puts it back. Why: the events stay live until check exits and
// decoding them makes almost no garbage, so a collection while reading
// only rescans them; and by reading the fresh event slice before the
// decoders write it, it made the kernel copy the zero page into each of
// its pages (10M events: 4.7–5.0 s instead of 9–12 s, docs/checker.md
// "Speed"). A memory limit of three times the file (decoded events take
// about 1.7×) still collects if odd lines (encoding/json's path) make
// garbage. Holding it through the checks as well saved nothing
// measurable and added 50 MB.
func holdCollector(path string) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	st, err := os.Stat(path)
	if err != nil {
		return func() {}
	}
	held.Lock()
	defer held.Unlock()
	if held.n == 0 {
		held.limit = debug.SetMemoryLimit(-1)
		held.percent = debug.SetGCPercent(-1)
	}
	held.n++
	held.bytes += 3*st.Size() + 256<<20
	debug.SetMemoryLimit(min(held.limit, held.bytes))
	return func() {
		held.Lock()
		defer held.Unlock()
		held.n--
		held.bytes -= 3*st.Size() + 256<<20
		if held.n > 0 {
			debug.SetMemoryLimit(min(held.limit, held.bytes))
			return
		}
		debug.SetGCPercent(held.percent)
		debug.SetMemoryLimit(held.limit)
	}
}

// held is the collector's setting while any check reads (several may,
// in tests or a program that runs commands side by side): the first to
// hold it saves it, the last puts it back.
var held struct {
	sync.Mutex
	n, percent   int
	limit, bytes int64
}

// printReport prints a check report as text: the checks' table as run
// and report draw it, then each check's first violations.
func printReport(w io.Writer, file string, n int, rep check.Report) error {
	fmt.Fprintf(w, "%s: %d events, verdict %s\n", file, n, rep.Verdict)
	if err := report.ChecksTable(w, report.Summary{Checks: rep.Checks}); err != nil {
		return fmt.Errorf("print the checks' table: %w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(rep.Checks)) {
		for _, v := range firstN(rep.Checks[name].Violations, 5) {
			fmt.Fprintf(w, "violation: %s\n", v.Explained())
		}
	}
	return nil
}

// listCommand is `lockbench list`: every registered strategy (a program
// built on Main lists its own too), the lock clients run by name, and
// every built-in scenario.
func listCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "list", "list")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInputf("list takes no arguments, got %q: it lists every lock strategy and scenario", fs.Arg(0))
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LOCK\tBACKEND\tDESCRIPTION\tORIGIN")
	for _, s := range locks.All() {
		name := s.Name
		if s.Buggy {
			name += " (known-buggy)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, s.Backend, s.Description, s.Origin)
	}
	if clients := locks.HiddenWithRuntime(); len(clients) > 0 {
		fmt.Fprintln(tw, "\nLOCK CLIENT (by name, not in the default suite)\tBACKEND\tRUNTIME\tDESCRIPTION")
		for _, s := range clients {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, s.Backend, runtimeStatus(ctx, s), s.Description)
		}
	}
	fmt.Fprintln(tw, "\nSCENARIO\tDESCRIPTION\t\t")
	for _, n := range scenarios.Names() {
		sc, _ := scenarios.Lookup(n)
		fmt.Fprintf(tw, "%s\t%s\t\t\n", sc.Name, sc.Description)
	}
	fmt.Fprintln(tw, "\nEXTENDED SCENARIO (suite --extended, or by name)\tDESCRIPTION\t\t")
	for _, n := range scenarios.ExtendedNames() {
		sc, _ := scenarios.Lookup(n)
		fmt.Fprintf(tw, "%s\t%s\t\t\n", sc.Name, sc.Description)
	}
	return tw.Flush()
}
