package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/scenarios"
)

// flagSet is a command's flags: errors are returned, not printed with the
// whole usage, and --help prints the command's usage to stdout.
type flagSet struct {
	*flag.FlagSet
	synopsis string
	stdout   io.Writer
}

// newFlags makes the flag set of command name; synopsis follows
// "Usage: lockbench" in its --help.
func newFlags(e *env, name, synopsis string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// flag's own error output repeats the whole usage; errors are reported
	// once by Run instead.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, synopsis: synopsis, stdout: e.stdout}
}

// parse parses args: --help prints the usage and returns errHelpShown;
// any other problem is bad input that points at --help.
func (fs *flagSet) parse(args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(fs.stdout, "%s\n\nFlags:\n", fitLines("Usage: lockbench "+fs.synopsis, helpWidth))
		fs.printDefaults(fs.stdout)
		return errHelpShown
	}
	return badInputf("%s%s (see lockbench %s --help)", doubleDash(fs.valueReason(err.Error())), fs.didYouMean(err.Error()), fs.Name())
}

// undefinedFlag finds the name in the flag package's "not defined" error.
var undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -{1,2}(.+)$`)

// didYouMean is "; did you mean --NAME?" when the flag given is not
// defined but one of the command's is a letter or two away (run's --lock
// typed as suite's --locks), else "".
func (fs *flagSet) didYouMean(msg string) string {
	m := undefinedFlag.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	best, bestD := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		if d := editDistance(m[1], f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	})
	if best == "" {
		return ""
	}
	return "; did you mean --" + best + "?"
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// badValue finds the value and the flag in the flag package's "invalid
// value" error.
var badValue = regexp.MustCompile(`^invalid value "(.*)" for flag -([A-Za-z][-A-Za-z0-9]*): parse error$`)

// valueReason replaces the flag package's bare "parse error" with what
// is wrong with the value, for the flag's type: a duration's reason
// ("missing unit") and what one looks like, or the kind of number wanted.
func (fs *flagSet) valueReason(msg string) string {
	m := badValue.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	fl := fs.Lookup(m[2])
	if fl == nil {
		return msg
	}
	g, ok := fl.Value.(flag.Getter)
	if !ok {
		return msg
	}
	var why string
	switch g.Get().(type) {
	case time.Duration:
		_, err := time.ParseDuration(m[1])
		if err == nil {
			return msg
		}
		why = strings.TrimPrefix(err.Error(), "time: ") + " (a duration with its unit, e.g. 3s, 500ms, 1m30s)"
	case int, int64:
		why = "not a whole number"
	case uint, uint64:
		why = "not a whole number ≥ 0"
	case float64:
		why = "not a number"
	default:
		return msg
	}
	return fmt.Sprintf("invalid value %q for flag -%s: %s", m[1], m[2], why)
}

// flagNameInError finds the flag's name in the flag package's errors,
// which spell it -name ("flag provided but not defined: -x", "invalid
// value ... for flag -x", "flag needs an argument: -x").
var flagNameInError = regexp.MustCompile(`(defined: |for flag |for |argument: )-{1,2}([A-Za-z])`)

// doubleDash spells the flag in a flag package error --name, as help, the
// README and every other message do.
func doubleDash(msg string) string { return flagNameInError.ReplaceAllString(msg, "${1}--${2}") }

// printDefaults writes every flag with its usage and default, as
// flag.PrintDefaults does (it alone knows each type's zero value), but
// spelled --flag, as the README and every error message spell it: Go's
// flag package accepts both, and one spelling is less to explain.
func (fs *flagSet) printDefaults(w io.Writer) {
	var b bytes.Buffer
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	// PrintDefaults starts each flag's line with "  -NAME" and indents its
	// usage with a tab, so only a flag's own line starts "  -".
	for line := range strings.Lines(b.String()) {
		if strings.HasPrefix(line, "  -") {
			line = "  --" + line[len("  -"):]
		}
		if rest, ok := strings.CutPrefix(line, usageIndent); ok {
			line = usageIndent + wrap(strings.TrimSuffix(rest, "\n"), usageWidth, "\n"+usageIndent) + "\n"
		}
		io.WriteString(w, line)
	}
}

// usageIndent starts each line of a flag's usage in PrintDefaults'
// output, and usageWidth is how long such a line may run after it.
const (
	usageIndent = "    \t"
	usageWidth  = 88
)

// helpWidth is the longest line --help prints.
const helpWidth = 100

// fitLines wraps each line of text longer than width, its continuation
// lines indented as it is (by four more spaces when it is not indented),
// or, for a row of a two-column list (a name, two spaces or more, its
// text), under its text.
func fitLines(text string, width int) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if len(l) <= width {
			continue
		}
		rest := strings.TrimLeft(l, " ")
		head := l[:len(l)-len(rest)]
		if j := strings.Index(rest, "  "); j > 0 && len(head) > 0 {
			k := j + len(rest[j:]) - len(strings.TrimLeft(rest[j:], " "))
			head, rest = head+rest[:k], rest[k:]
		}
		cont := strings.Repeat(" ", len(head))
		if head == "" {
			cont = "    "
		}
		lines[i] = head + wrap(rest, width-len(cont), "\n"+cont)
	}
	return strings.Join(lines, "\n")
}

// wrap breaks s at spaces into lines of at most width bytes, joined by
// sep; a longer word is broken after its commas (a list of names), else
// stays whole.
func wrap(s string, width int, sep string) string {
	var words []string
	for _, w := range strings.Fields(s) {
		for len(w) > width {
			i := strings.LastIndex(w[:width], ",")
			if i < 0 {
				break
			}
			words, w = append(words, w[:i+1]), w[i+1:]
		}
		words = append(words, w)
	}
	var b strings.Builder
	n := 0
	for i, word := range words {
		if i > 0 && n+1+len(word) > width {
			b.WriteString(sep)
			n = 0
		} else if i > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}

// parseFlagsOnly parses args of a command that takes no positional
// arguments.
func (fs *flagSet) parseFlagsOnly(args []string) error {
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInputf("unexpected argument %q (flags only)", fs.Arg(0))
	}
	return nil
}

// parseInterspersed parses flags that may come before, between or after
// positional arguments, and returns the positional ones in order.
func (fs *flagSet) parseInterspersed(args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// given returns the names of the flags set on the command line.
func (fs *flagSet) given() map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// clusterFlags configure an embedded etcd cluster: run, suite, bench and
// cluster share them, so they are defined once, here.
type clusterFlags struct {
	members        int
	tick, election time.Duration
	noFsync        bool
	verbose        bool
	dataDir        string
	etcdBin        string
	peerRelays     bool
	snapshotCount  uint64
	// etcdList lets --etcd-bin be a comma-separated list (suite: a version
	// matrix); other commands run one binary.
	etcdList bool
}

// embeddedOnly are clusterFlags' names: with --endpoints they do not apply.
var embeddedOnly = []string{"members", "tick", "election", "unsafe-no-fsync", "verbose", "data-dir", "etcd-bin", "peer-relays", "snapshot-count"}

// register adds the embedded-cluster flags to fs.
func (c *clusterFlags) register(fs *flagSet) {
	fs.IntVar(&c.members, "members", cluster.DefaultMembers, "etcd cluster members (1..9)")
	fs.DurationVar(&c.tick, "tick", cluster.DefaultTick, "raft heartbeat interval of the embedded cluster (≥1ms)")
	fs.DurationVar(&c.election, "election", cluster.DefaultElection, "election timeout of the embedded cluster (≥5× --tick)")
	fs.BoolVar(&c.noFsync, "unsafe-no-fsync", false, "disable fsync in etcd (faster; a member crash may lose data)")
	fs.BoolVar(&c.verbose, "verbose", false, "show etcd's own logs")
	fs.StringVar(&c.etcdBin, "etcd-bin", "", "run the members as processes: 'self' (lockbench's own binary, etcd "+cluster.EmbeddedVersion+") or the path of an etcd binary (3.4 or later; its version is detected); suite takes a comma-separated list, each binary a dimension (default: embedded, inside lockbench; docs/processes.md)")
	fs.BoolVar(&c.peerRelays, "peer-relays", false, "relay the embedded members' peer traffic through lockbench, so that delay-peers and drop-peers can act on it (slows every commit a little; member processes always have relays)")
	fs.Uint64Var(&c.snapshotCount, "snapshot-count", 0, "etcd's --snapshot-count and --snapshot-catchup-entries for the embedded cluster (0: etcd's defaults); snapshot-catchup needs 1..1000")
	fs.StringVar(&c.dataDir, "data-dir", "", "an existing folder to hold etcd's data folder, removed on exit (default $TMPDIR)")
}

// options checks the flags and returns the cluster's options; the data
// folder is left for withData, once nothing else can be wrong.
func (c *clusterFlags) options() (cluster.Options, error) {
	switch {
	case c.members < 1 || c.members > 9:
		return cluster.Options{}, badInputf("--members %d: must be 1..9", c.members)
	case c.tick < time.Millisecond:
		return cluster.Options{}, badInputf("--tick %s: must be ≥1ms", c.tick)
	case c.election < 5*c.tick:
		return cluster.Options{}, badInputf("--election %s: must be ≥5× --tick (%s)", c.election, c.tick)
	}
	if c.dataDir != "" {
		if err := checkDir("data-dir", c.dataDir, true); err != nil {
			return cluster.Options{}, err
		}
	}
	bins := splitList(c.etcdBin)
	if len(bins) > 1 && !c.etcdList {
		return cluster.Options{}, badInputf("--etcd-bin %s: one binary here (a list of binaries is a dimension of suite only)", c.etcdBin)
	}
	for _, b := range bins {
		if err := checkEtcdBin(b); err != nil {
			return cluster.Options{}, err
		}
	}
	if c.snapshotCount > 0 && c.etcdBin != "" {
		return cluster.Options{}, badInputf("--snapshot-count %d: applies to the embedded cluster only (not with --etcd-bin)", c.snapshotCount)
	}
	return cluster.Options{Members: c.members, Tick: c.tick, Election: c.election, UnsafeNoFsync: c.noFsync, Verbose: c.verbose, EtcdBin: c.etcdBin,
		PeerRelays: c.peerRelays, SnapshotCount: c.snapshotCount}, nil
}

// withData puts the cluster's data folder inside a scratch folder of e
// (under --data-dir, else $TMPDIR), which the CLI removes on every way
// out. Dead runs' data folders there are removed first, and every one
// removed (now or by the cluster's start) is printed.
func (c *clusterFlags) withData(e *env, o cluster.Options) (cluster.Options, error) {
	o.OnStaleRemoved = staleTo(e.stderr)
	removeStale(c.dataDir, o.OnStaleRemoved)
	dir, err := e.scratch.make(c.dataDir)
	if err != nil {
		return o, err
	}
	o.DataParent = dir
	return o, nil
}

// clientFlags configure the lock clients of run, suite and bench.
type clientFlags struct {
	keepalive   string
	rpcTimeout  time.Duration
	sharedConns int
	leaseTTL    time.Duration
}

// register adds the lock-client flags to fs; --lease-ttl and
// --shared-conns only where the command can honour them.
func (c *clientFlags) register(fs *flagSet, leaseTTL, sharedConns bool) {
	fs.StringVar(&c.keepalive, "keepalive", string(etcdlocks.DefaultKeepAlive), "lease keepalive policy: safe (deadline from each refresh's send time, a refresh every TTL/4; docs/leases.md), auto (etcd's KeepAlive stream, TTL/3) or seed (KeepAliveOnce every 0.8×TTL); suite takes a comma-separated list, each a dimension; a strategy that keeps its own lease (its own etcd session) ignores it and is labelled own")
	fs.DurationVar(&c.rpcTimeout, "rpc-timeout", etcdlocks.DefaultRPCTimeout,
		"deadline of each etcd request of a lock client (not watches): a write stranded by a dead leader fails after it and is settled, instead of waiting out etcd's own ~6 s request timeout (0: none)")
	if leaseTTL {
		fs.DurationVar(&c.leaseTTL, "lease-ttl", 0, "lease TTL, whole seconds (default: the scenario's, else 5s)")
	}
	if sharedConns {
		fs.IntVar(&c.sharedConns, "shared-conns", 0, "lock clients share this many etcd connections (client i uses connection i mod N), for client counts whose own connections would load the machine; not with client faults (0: one connection per client)")
	}
}

// keepAlives checks --keepalive: one policy, or with list a
// comma-separated list of them (suite: each a dimension). Every command
// words a bad one the same way.
func (c *clientFlags) keepAlives(list bool) ([]etcdlocks.KeepAlive, error) {
	names, err := namesList("keepalive", c.keepalive)
	if err != nil {
		return nil, err
	}
	if len(names) > 1 && !list {
		return nil, badInputf("--keepalive %s: one policy here (a list of policies is a dimension of suite only)", c.keepalive)
	}
	var kas []etcdlocks.KeepAlive
	for _, n := range names {
		ka, err := etcdlocks.ParseKeepAlive(n)
		if err != nil {
			valid := make([]string, len(etcdlocks.KeepAlives))
			for i, k := range etcdlocks.KeepAlives {
				valid[i] = string(k)
			}
			return nil, badInputf("--keepalive %s: valid policies are %s", n, strings.Join(valid, ", "))
		}
		kas = append(kas, ka)
	}
	return kas, nil
}

// checkSharedConns checks --shared-conns before the harness does, so that
// every command names the flag the same way.
func (c *clientFlags) checkSharedConns(sc scenarios.Scenario) error {
	switch n := c.sharedConns; {
	case n < 0:
		return badInputf("--shared-conns %d: must be ≥0 (0: one connection per client)", n)
	case n > 0 && sc.Needs().ClientProxy:
		return badInputf("--shared-conns %d: scenario %s has client faults, which act on one client's own connection: run it without --shared-conns", n, sc.Name)
	}
	return nil
}

// rpcTimeoutSpec is the harness's RPCTimeout for --rpc-timeout (0: none,
// which the harness spells -1).
func (c *clientFlags) rpcTimeoutSpec() (time.Duration, error) {
	switch d := c.rpcTimeout; {
	case d < 0:
		return 0, badInputf("--rpc-timeout %s: must be ≥0 (0: none)", d)
	case d == 0:
		return -1, nil
	}
	return c.rpcTimeout, nil
}

// checkLeaseTTL checks --lease-ttl, when given, so that its error names
// the flag rather than the scenario it would have been written into.
func (c *clientFlags) checkLeaseTTL(set map[string]bool) error {
	if !set["lease-ttl"] {
		return nil
	}
	if d := c.leaseTTL; d < time.Second || d%time.Second != 0 {
		return badInputf("--lease-ttl %s: must be a whole number of seconds ≥1s (etcd leases are whole seconds)", d)
	}
	return nil
}

// checkEtcdBin checks --etcd-bin before anything starts: "self", or an
// executable file (its version is asked when the cluster starts).
func checkEtcdBin(bin string) error {
	if bin == "" || bin == cluster.EtcdBinSelf {
		return nil
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return badInputf("--etcd-bin %s: not an executable (give 'self' or the path of an etcd binary): %v", bin, err)
	}
	if info, err := os.Stat(path); err != nil || info.IsDir() {
		return badInputf("--etcd-bin %s: not an executable file", bin)
	}
	return nil
}
