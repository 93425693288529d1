// Package scenario is what a run does, as data: clients, workload,
// duration, fault steps and expectations, read from YAML and validated, and
// the built-in scenarios (embedded YAML). Package runner executes them.
package scenarios

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lockbench/lockbench/chaos"
	"github.com/lockbench/lockbench/internal/wholefile"
	"github.com/lockbench/lockbench/verdict"
)

// Workload kinds.
const (
	// WorkloadHold acquires, holds for Hold, releases, thinks for Think.
	WorkloadHold = "hold"
	// WorkloadCounter reads a shared counter in etcd inside the critical
	// section, holds, then writes read+1: a stale holder loses updates.
	WorkloadCounter = "counter"
	// WorkloadCounterFenced writes through a txn guarded by the grant's
	// token, so a stale holder's write is rejected.
	WorkloadCounterFenced = "counter-fenced"
)

var workloads = []string{WorkloadHold, WorkloadCounter, WorkloadCounterFenced}

// Duration is a time.Duration written as "1.5s" in YAML and JSON.
type Duration time.Duration

// D is d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads "1.5s", a number of nanoseconds, or "" (zero):
// config.json, which embeds a Scenario, has held all three over time, and
// a run folder must stay readable.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("duration %s: want a string like \"1.5s\" or a number of nanoseconds", b)
		}
		*d = Duration(n)
		return nil
	}
	if s == "" {
		*d = 0
		return nil
	}
	return d.parse(s)
}

// UnmarshalYAML reads "1.5s"; a bare 0 is allowed.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Value == "0" {
		*d = 0
		return nil
	}
	if err := d.parse(n.Value); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}

func (d *Duration) parse(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("bad duration %q: want a number with a unit, e.g. 500ms, 2s, 1m", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// Workload is what each client does in a loop.
type Workload struct {
	Kind string `json:"kind" yaml:"kind"`
	// Hold is how long a client keeps the lock once granted.
	Hold Duration `json:"hold" yaml:"hold"`
	// Think is how long a client waits after a release before the next
	// acquire.
	Think Duration `json:"think" yaml:"think"`
	// Stagger delays client i's first acquire by i×Stagger, so that the
	// queue forms in client order and waiter:K names a known position.
	Stagger Duration `json:"stagger,omitempty" yaml:"stagger"`
	// ReleaseLost makes a holder that learns its lease is lost call Unlock
	// on the lost grant anyway, as a client that learns late still does:
	// a correct lock then leaves its successor's key alone.
	ReleaseLost bool `json:"release_lost,omitempty" yaml:"release_lost"`
	// Locks is how many lock names the clients share (0 or 1: the one
	// name "lock"; N > 1: job1…jobN, so that job1 and job10 both exist
	// from 10 on and a strategy that lists job1's waiters by a bare key
	// prefix counts job10's too). Added later, additive: omitted, a file
	// reads and hashes as before.
	Locks int `json:"locks,omitempty" yaml:"locks"`
	// Pick is how each acquisition chooses its name when Locks > 1:
	// uniform (default), round-robin or zipf:S (ParsePick), drawn from the
	// client's seeded stream, so the same seed makes the same picks.
	Pick string `json:"pick,omitempty" yaml:"pick"`
	// Rate, when set, makes the load open-loop: acquisitions arrive at
	// this rate over all clients whatever the lock's latency, each served
	// by a free client, and its latency counts from its intended start
	// (docs/design.md §3), so a slow lock cannot hide its queue.
	Rate Rate `json:"rate,omitempty" yaml:"rate"`
	// Arrivals is the open-loop arrival process: uniform (default) or
	// poisson, drawn from the run's seed.
	Arrivals string `json:"arrivals,omitempty" yaml:"arrivals"`
}

// Step is one fault in a scenario file.
type Step struct {
	At     Duration `json:"at" yaml:"at"`
	Fault  string   `json:"fault" yaml:"fault"`
	Target string   `json:"target,omitempty" yaml:"target"`
	For    Duration `json:"for,omitempty" yaml:"for"`
	// Delay is the latency delay-client adds each way, or delay-answers
	// to the answers (default 200ms).
	Delay Duration `json:"delay,omitempty" yaml:"delay"`
	// Every is the interval of a fault that repeats while its step lasts
	// (compact-loop, default 100ms).
	Every Duration `json:"every,omitempty" yaml:"every"`
	// By is how far clock-jump moves the member's wall clock forward
	// (required). Added later, additive: omitted, a step reads and
	// hashes as before.
	By Duration `json:"by,omitempty" yaml:"by"`
	// On times the step to a call (acquire or release) instead of its
	// at alone: see chaos.Step.On. Added later, additive: omitted, a step
	// reads and hashes as before.
	On   string `json:"on,omitempty" yaml:"on"`
	line int
}

// UnmarshalYAML keeps the step's line for error messages.
func (s *Step) UnmarshalYAML(n *yaml.Node) error {
	type plain Step
	var p plain
	if err := decodeStrict(n, &p); err != nil {
		return err
	}
	*s = Step(p)
	s.line = n.Line
	return nil
}

// Scenario is a run described as data, so it can be read, edited and
// re-run with the same schedule.
type Scenario struct {
	Name        string `json:"name" yaml:"name"`
	Description string `json:"description" yaml:"description"`
	Clients     int    `json:"clients" yaml:"clients"`
	// LeaseTTL is every client's lease TTL (default 5s).
	LeaseTTL Duration `json:"lease_ttl,omitempty" yaml:"lease_ttl"`
	Duration Duration `json:"duration" yaml:"duration"`
	Workload Workload `json:"workload" yaml:"workload"`
	Steps    []Step   `json:"steps,omitempty" yaml:"steps"`
	// Nemesis is a random mix of faults drawn from the seed (nemesis.go).
	Nemesis *Nemesis `json:"nemesis,omitempty" yaml:"nemesis"`
	// Backends, when set, are the only backends the scenario is for (a
	// fault or a claim that means nothing elsewhere); a suite skips its
	// cells of other backends' strategies, with a note, and run refuses
	// them. Unset, it is for every backend that can take its faults.
	Backends []string             `json:"backends,omitempty" yaml:"backends"`
	Expect   verdict.Expectations `json:"expect,omitempty" yaml:"expect"`
	// Source is the file the scenario came from ("builtin:NAME" for ours).
	Source string `json:"source,omitempty" yaml:"-"`

	// faults are Steps parsed into faults and targets, once, by Validate
	// (Parse calls it); expectLines are the lines of Expect's keys in
	// Source, for CheckNames' messages, and expectWhy the comments above
	// them, for AnyReason.
	faults      []chaos.Step
	nemesis     *chaos.Nemesis
	expectLines map[string]int
	expectWhy   map[string]string
	// workloadLines are the lines of the workload's keys, for
	// validateNames' messages.
	workloadLines map[string]int
}

// DefaultLeaseTTL is a scenario's lease TTL when it gives none; the lock
// strategies default to the same (a test in package harness keeps it
// equal to locks.DefaultTTL). clients and duration have no default: a
// scenario without them is refused (Validate), and hold and think
// default to 0.
const DefaultLeaseTTL = 5 * time.Second

// where prefixes an error with the scenario's file and, when known, line.
func (s Scenario) where(line int) string {
	src := s.Source
	if src == "" {
		src = "scenario " + s.Name
	}
	if line > 0 {
		return fmt.Sprintf("%s:%d", src, line)
	}
	return src
}

// Validate reports the first thing wrong with s, naming the file, the line
// where known, the field and what is valid, and parses its steps into
// faults (Faults). The names of strategies and keepalive policies in
// Expect are checked by CheckNames, by whoever knows the registry.
func (s *Scenario) Validate() error {
	w := s.where(0)
	switch {
	case s.Name == "":
		return fmt.Errorf("%s: scenario has no name", w)
	case s.Clients < 1:
		return fmt.Errorf("%s: clients %d: must be ≥1 (a required key: there is no default)", w, s.Clients)
	case s.Duration <= 0:
		return fmt.Errorf("%s: duration %s: must be > 0 (a required key: there is no default)", w, s.Duration)
	case s.Workload.Hold < 0:
		return fmt.Errorf("%s: hold %s: must be ≥0", w, s.Workload.Hold)
	case s.Workload.Think < 0:
		return fmt.Errorf("%s: think %s: must be ≥0", w, s.Workload.Think)
	case s.Workload.Stagger < 0:
		return fmt.Errorf("%s: stagger %s: must be ≥0", w, s.Workload.Stagger)
	case s.LeaseTTL != 0 && s.msTTL() && s.LeaseTTL < Duration(MinMillisecondTTL):
		return fmt.Errorf("%s: lease_ttl %s: must be ≥%s (a scenario for %s only, whose keys expire to the millisecond)", w, s.LeaseTTL, MinMillisecondTTL, msTTLBackend)
	case s.LeaseTTL != 0 && !s.msTTL() && (s.LeaseTTL < Duration(time.Second) || s.LeaseTTL%Duration(time.Second) != 0):
		return fmt.Errorf("%s: lease_ttl %s: must be a whole number of seconds ≥1s (or, in a scenario for %s only, ≥%s)", w, s.LeaseTTL, msTTLBackend, MinMillisecondTTL)
	}
	if !contains(workloads, s.Workload.Kind) {
		return fmt.Errorf("%s: workload kind %q: valid kinds are %s", w, s.Workload.Kind, strings.Join(workloads, ", "))
	}
	if err := s.validateNames(); err != nil {
		return err
	}
	if err := s.Workload.validateOpenLoop(w); err != nil {
		return err
	}
	faults, err := s.parseSteps()
	if err != nil {
		return err
	}
	s.faults = faults
	if s.nemesis, err = s.parseNemesis(); err != nil {
		return err
	}
	anyName := func(string) error { return nil }
	return s.CheckNames(verdict.Names{Lock: anyName, KeepAlive: anyName, Backend: anyName})
}

// CheckNames reports the first key of Expect that names no strategy or
// keepalive policy names knows, with its line, or an unknown check or
// verdict.
func (s Scenario) CheckNames(names verdict.Names) error {
	for _, b := range s.Backends {
		if err := names.Backend(b); err != nil {
			return fmt.Errorf("%s: backends: %w", s.where(0), err)
		}
	}
	return s.Expect.Validate(func(key string) string { return s.where(s.expectLines[key]) }, names)
}

// msTTLBackend is the backend whose locks' keys expire to the
// millisecond (Redis's PX): a scenario for it only may give a lease_ttl
// under a second, as a pause inside the acquire needs one shorter than
// its clients' read timeout. etcd's leases and ZooKeeper's sessions are
// whole seconds.
const msTTLBackend = "redis"

// MinMillisecondTTL is the shortest lease_ttl of a scenario for Redis
// only.
const MinMillisecondTTL = 100 * time.Millisecond

// msTTL says whether the scenario is for msTTLBackend only.
func (s Scenario) msTTL() bool {
	return len(s.Backends) == 1 && s.Backends[0] == msTTLBackend
}

// For says whether the scenario is for backend (Backends).
func (s Scenario) For(backend string) bool {
	return len(s.Backends) == 0 || slices.Contains(s.Backends, backend)
}

// keyNodes returns the key nodes of the top-level mapping field in a
// YAML document (nil when there is none): their lines, for error messages
// about entries of a map-typed field, and the comments above them.
func keyNodes(b []byte, field string) []*yaml.Node {
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	top := doc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value != field || top.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		m := top.Content[i+1]
		var out []*yaml.Node
		for j := 0; j+1 < len(m.Content); j += 2 {
			out = append(out, m.Content[j])
		}
		return out
	}
	return nil
}

// commentText is a YAML head comment as one line of text, without its
// "#" marks.
func commentText(c string) string {
	var words []string
	for line := range strings.Lines(c) {
		words = append(words, strings.Fields(strings.TrimLeft(strings.TrimSpace(line), "#"))...)
	}
	return strings.Join(words, " ")
}

// AnyReason is why the scenario does not judge check for sub: the
// comment above the entry of Expect that decides it
// (Expectations.Decider) when that entry says "any"; "" when it says
// something else, when no entry names the check, or when the entry has
// no comment. The suite table shows it, so that "any" says why.
func (s Scenario) AnyReason(sub verdict.Subject, check string) string {
	key := s.Expect.Decider(sub, check)
	if key == "" || s.Expect[key][check] != verdict.Any {
		return ""
	}
	return s.expectWhy[key]
}

// parseSteps parses the steps into faults and targets.
func (s Scenario) parseSteps() ([]chaos.Step, error) {
	var out []chaos.Step
	for i, st := range s.Steps {
		w := s.where(st.line)
		f, err := chaos.Lookup(st.Fault)
		if err != nil {
			return nil, fmt.Errorf("%s: step %d: %w", w, i+1, err)
		}
		t, err := chaos.ParseTarget(st.Target, f)
		if err != nil {
			return nil, fmt.Errorf("%s: step %d: %w", w, i+1, err)
		}
		if err := s.checkTarget(t, 0); err != nil {
			return nil, fmt.Errorf("%s: step %d: %w", w, i+1, err)
		}
		switch {
		case st.At < 0:
			return nil, fmt.Errorf("%s: step %d: at %s: must be ≥0", w, i+1, st.At)
		case st.At >= s.Duration:
			return nil, fmt.Errorf("%s: step %d: at %s: must be before the end of the run (duration %s)", w, i+1, st.At, s.Duration)
		case st.For < 0:
			return nil, fmt.Errorf("%s: step %d: for %s: must be ≥0", w, i+1, st.For)
		case st.On != "" && st.On != chaos.OnAcquire && st.On != chaos.OnRelease:
			return nil, fmt.Errorf("%s: step %d: on %q: valid are %s", w, i+1, st.On, chaos.ValidOn)
		}
		arg, err := st.arg(f)
		if err != nil {
			return nil, fmt.Errorf("%s: step %d: %w", w, i+1, err)
		}
		out = append(out, chaos.Step{At: st.At.D(), Fault: f, Target: t, For: st.For.D(), Arg: arg, On: st.On})
	}
	return out, nil
}

// arg is the step's parameter for f, from the field f takes it from
// (chaos.Needs.Arg); a field set for a fault that does not take it is an
// error naming the faults that do.
func (st Step) arg(f chaos.Fault) (time.Duration, error) {
	var out time.Duration
	for _, a := range []struct {
		field string
		v     Duration
	}{{chaos.ArgDelay, st.Delay}, {chaos.ArgEvery, st.Every}, {chaos.ArgBy, st.By}} {
		switch {
		case a.v < 0:
			return 0, fmt.Errorf("%s %s: must be ≥0", a.field, a.v)
		case a.v == 0 && a.field == chaos.ArgBy && f.Needs().Arg == a.field:
			// No default: how far a clock jumps is the scenario's point.
			return 0, fmt.Errorf("%s needs by: how far the clock jumps forward (e.g. by: 60s)", f.Name())
		case a.v != 0 && f.Needs().Arg != a.field:
			return 0, fmt.Errorf("%s applies only to %s", a.field, strings.Join(chaos.Taking(a.field), ", "))
		case f.Needs().Arg == a.field:
			out = a.v.D()
		}
	}
	return out, nil
}

// Faults are the steps as faults and targets, parsed once by Validate. A
// scenario whose steps were never validated (one built in code, or read
// from a run folder's config.json) is parsed here; invalid steps are then
// a programming error, since every run validates its scenario first.
func (s Scenario) Faults() []chaos.Step {
	if len(s.faults) == len(s.Steps) {
		return s.faults
	}
	out, err := s.parseSteps()
	if err != nil {
		panic(fmt.Sprintf("scenarios: Faults of a scenario that does not validate: %v", err))
	}
	return out
}

// checkTarget rejects a numbered target the run cannot have: client:N
// needs N < clients, waiter:K needs K < clients-1 (the holder is not a
// waiter), member:N needs N < members (when members > 0 is known). A
// target out of range would otherwise do nothing, silently.
func (s Scenario) checkTarget(t chaos.Target, members int) error {
	switch {
	case t.Kind == chaos.TClient && t.N >= s.Clients:
		return fmt.Errorf("target %s: the scenario has clients 0..%d", t, s.Clients-1)
	case t.Kind == chaos.TWaiter && t.N >= s.Clients-1:
		return fmt.Errorf("target %s: with %d clients there are at most %d waiters (waiter:0..%d)", t, s.Clients, s.Clients-1, s.Clients-2)
	case t.Kind == chaos.TMember && members > 0 && t.N >= members:
		return fmt.Errorf("target %s: the cluster has members 0..%d", t, members-1)
	}
	return nil
}

// CheckMembers rejects member:N targets beyond a cluster of the given size,
// naming the step's file and line; the cluster size is known only when a
// run is set up, not when the scenario is read.
func (s Scenario) CheckMembers(members int) error {
	for i, st := range s.Faults() {
		if err := s.checkTarget(st.Target, members); err != nil {
			return fmt.Errorf("%s: step %d: %w", s.where(s.Steps[i].line), i+1, err)
		}
	}
	return nil
}

// TTL is the scenario's lease TTL, or the default.
func (s Scenario) TTL() time.Duration {
	if s.LeaseTTL == 0 {
		return DefaultLeaseTTL
	}
	return s.LeaseTTL.D()
}

// Needs is what the scenario's faults need of the run, all steps and the
// nemesis together (see chaos.Needs).
func (s Scenario) Needs() chaos.Needs {
	var n chaos.Needs
	for _, fault := range s.FaultKinds() {
		f := fault.Needs()
		n.ClientProxy = n.ClientProxy || f.ClientProxy
		n.Members = n.Members || f.Members
		n.MemberProcesses = n.MemberProcesses || f.MemberProcesses
		n.PeerRelays = n.PeerRelays || f.PeerRelays
		n.SnapshotCount = n.SnapshotCount || f.SnapshotCount
		n.AsyncReplication = n.AsyncReplication || f.AsyncReplication
		n.OperatorAPI = n.OperatorAPI || f.OperatorAPI
		n.PeerNetwork = n.PeerNetwork || f.PeerNetwork
		if f.Protocol != "" {
			n.Protocol = f.Protocol
		}
		n.EmptyRestart = n.EmptyRestart || f.EmptyRestart
		n.Clock = n.Clock || f.Clock
	}
	return n
}

// Hash is "sha256:" and the hex SHA-256 of s's JSON encoding (struct
// fields in order, map keys sorted: canonical for one version of the
// Scenario type). Two runs whose hashes for a scenario differ ran
// different definitions under the same name.
func (s Scenario) Hash() string {
	b, err := json.Marshal(s)
	if err != nil {
		return "unhashable: " + err.Error()
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Parse reads a scenario file. Unknown keys, bad durations, unknown faults
// or targets are errors naming the file, the line and the valid choices.
func Parse(name string, r io.Reader) (Scenario, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return Scenario{}, fmt.Errorf("%s: %w", name, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return Scenario{}, fmt.Errorf("%s: empty scenario file", name)
		}
		return Scenario{}, fmt.Errorf("%s: %v", name, cleanYAMLError(err, b))
	}
	s.Source = name
	s.workloadLines = workloadLines(b)
	for _, k := range keyNodes(b, "expect") {
		if s.expectLines == nil {
			s.expectLines, s.expectWhy = map[string]int{}, map[string]string{}
		}
		s.expectLines[k.Value] = k.Line
		if c := commentText(k.HeadComment); c != "" {
			s.expectWhy[k.Value] = c
		}
	}
	if err := s.Validate(); err != nil {
		return Scenario{}, err
	}
	return s, nil
}

// decodeStrict decodes a node, rejecting keys the target does not have.
// yaml.v3 drops KnownFields inside custom unmarshalers, so the node is
// re-encoded and decoded strictly, shifted to keep its line numbers. It
// is re-encoded alone, away from the anchors its aliases name, so aliases
// and merge keys ("<<: *slow", "delay: *d") are resolved first (resolve).
func decodeStrict(n *yaml.Node, v any) error {
	budget := maxResolvedNodes
	r, err := resolve(n, &budget, map[*yaml.Node]bool{})
	if err != nil {
		return err
	}
	b, err := yaml.Marshal(r)
	if err != nil {
		return err
	}
	// Re-decoding loses the node's line numbers, so shift them back.
	dec := yaml.NewDecoder(bytes.NewReader(append(bytes.Repeat([]byte("\n"), max(n.Line-1, 0)), b...)))
	dec.KnownFields(true)
	err = dec.Decode(v)
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// maxResolvedNodes bounds the nodes resolve may copy for one node: a step
// is a handful, and aliases of aliases would otherwise expand a 1 MiB file
// into billions of nodes.
const maxResolvedNodes = 10000

// resolve returns a copy of n that stands alone: every alias replaced by a
// copy of the node it names, in flow style so that it takes the alias's
// one line and the lines after it stay as they are. Merge keys ("<<: *slow")
// are left to the decoder, which merges YAML's way (the mapping's own keys
// win) and checks merged keys as strictly as the rest; a merge of anything
// but a mapping or a list of mappings is refused here, with its line.
func resolve(n *yaml.Node, budget *int, open map[*yaml.Node]bool) (*yaml.Node, error) {
	if *budget--; *budget < 0 {
		return nil, fmt.Errorf("line %d: aliases expand to more than %d nodes", n.Line, maxResolvedNodes)
	}
	if n.Kind == yaml.AliasNode {
		if open[n.Alias] {
			return nil, fmt.Errorf("line %d: alias *%s refers to a node that contains it", n.Line, n.Value)
		}
		open[n.Alias] = true
		defer delete(open, n.Alias)
		r, err := resolve(n.Alias, budget, open)
		if err != nil {
			return nil, err
		}
		oneLine(r)
		return r, nil
	}
	c := *n
	c.Anchor, c.Content = "", make([]*yaml.Node, 0, len(n.Content))
	for i, k := range n.Content {
		r, err := resolve(k, budget, open)
		if err != nil {
			return nil, err
		}
		if n.Kind == yaml.MappingNode && i%2 == 1 && n.Content[i-1].Tag == "!!merge" && !mergeable(r) {
			return nil, fmt.Errorf("line %d: << must merge a mapping or a list of mappings (e.g. <<: *slow, where - &slow {at: 1s, ...} is a step)", n.Content[i-1].Line)
		}
		c.Content = append(c.Content, r)
	}
	return &c, nil
}

// oneLine puts a resolved alias's copy in flow style, down to its
// leaves, so that it re-encodes on one line.
func oneLine(n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode, yaml.SequenceNode:
		n.Style = yaml.FlowStyle
	case yaml.ScalarNode:
		if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			n.Style = yaml.DoubleQuotedStyle
		}
	}
	for _, c := range n.Content {
		oneLine(c)
	}
}

// mergeable reports whether v may be a merge key's value: a mapping, or a
// list of mappings.
func mergeable(v *yaml.Node) bool {
	switch v.Kind {
	case yaml.MappingNode:
		return true
	case yaml.SequenceNode:
		for _, m := range v.Content {
			if m.Kind != yaml.MappingNode {
				return false
			}
		}
		return true
	}
	return false
}

// cleanYAMLError rewrites yaml.v3's errors, which name Go types
// ("cannot unmarshal !!seq into scenarios.Scenario", "field x not found in
// type scenarios.Workload"), as what the scenario format calls things:
// the key, what is valid there, and what the file has instead. src is the
// file, read for the key on the error's line.
func cleanYAMLError(err error, src []byte) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n")
	var parts []string
	for _, line := range strings.Split(msg, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			parts = append(parts, cleanYAMLLine(line, src))
		}
	}
	return errors.New(strings.Join(parts, "; "))
}

// yamlTypeError is one line of a yaml.v3 type error: the line, the YAML
// kind found, its text for a scalar, and the Go type it did not fit.
var yamlTypeError = regexp.MustCompile("^line ([0-9]+): cannot unmarshal !!([a-z]+)(?: `([^`]*)`)? into (.+)$")

// yamlWants says, per Go type of the scenario's decoding, what the format
// wants there.
var yamlWants = map[string]string{
	"scenarios.Scenario":         "a mapping with keys " + scenarioKeys,
	"scenarios.Workload":         "a mapping with keys " + workloadKeys,
	"[]scenarios.Step":           "a list of steps",
	"scenarios.plain":            "a mapping with keys " + stepKeys,
	"scenarios.Nemesis":          "a mapping with keys " + nemesisKeys,
	"[]string":                   "a list of strings",
	"verdict.Expectations":       "a mapping of default, a strategy's name or keepalive:POLICY to the checks expected",
	"map[string]verdict.Verdict": "a mapping of check names (" + strings.Join(verdict.CheckNames, ", ") + ") to verdicts",
	"verdict.Verdict":            "one of pass, fail, unknown, any",
	"int":                        "an integer",
	"string":                     "a string",
	"bool":                       "true or false",
}

// The keys of a scenario file, a workload and a step.
const (
	scenarioKeys = "name, description, clients, lease_ttl, duration, workload, steps, nemesis, expect"
	workloadKeys = "kind, hold, think, stagger, release_lost, locks, pick, rate, arrivals"
	stepKeys     = "at, fault, target, for, delay, every"
)

// yamlKinds names YAML's tags as a reader of the file says them.
var yamlKinds = map[string]string{"seq": "a list", "map": "a mapping", "str": "the string",
	"int": "the number", "float": "the number", "bool": "the boolean", "null": "nothing"}

// cleanYAMLLine rewrites one line of a yaml.v3 error (see cleanYAMLError).
func cleanYAMLLine(line string, src []byte) string {
	for _, r := range [...][2]string{
		{"in type scenarios.Scenario", "(valid keys: " + scenarioKeys + ")"},
		{"in type scenarios.Workload", "in workload (valid keys: " + workloadKeys + ")"},
		{"in type scenarios.plain", "in step (valid keys: " + stepKeys + ")"},
		{"in type scenarios.Nemesis", "in nemesis (valid keys: " + nemesisKeys + ")"},
	} {
		line = strings.ReplaceAll(line, r[0], r[1])
	}
	m := yamlTypeError.FindStringSubmatch(line)
	if m == nil {
		return line
	}
	n, _ := strconv.Atoi(m[1])
	got := yamlKinds[m[2]]
	if got == "" {
		got = "a " + m[2]
	}
	if m[3] != "" {
		got += " " + m[3]
	}
	want, ok := yamlWants[m[4]]
	if !ok {
		want = "another kind of value"
	}
	var what string
	switch key := yamlKeyAt(src, n, m[2], m[3]); {
	case m[4] == "scenarios.Scenario":
		what = "the scenario" // the whole file
	case m[4] == "scenarios.plain":
		what = "a step" // an item of steps, which has no key
	case key != "":
		what = key
	default:
		what = "the value"
	}
	return fmt.Sprintf("line %d: %s must be %s, not %s", n, what, want, got)
}

// yamlKey is a mapping key on a line; what follows it is its value.
var yamlKey = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_-]*):(?:\s+|$)`)

// yamlKeyAt returns the key on line n of src whose value is the one an
// error is about — the scalar value, else the last key whose value opens
// a list (kind "seq") or a mapping ("map") — or the line's first key, or
// "" when it has none.
func yamlKeyAt(src []byte, n int, kind, value string) string {
	lines := bytes.Split(src, []byte("\n"))
	if n < 1 || n > len(lines) {
		return ""
	}
	line := string(lines[n-1])
	value = strings.TrimSuffix(value, "...") // yaml.v3 cuts long values so
	first, found := "", ""
	for _, m := range yamlKey.FindAllStringSubmatchIndex(line, -1) {
		key, rest := line[m[2]:m[3]], strings.Trim(line[m[1]:], `"'`)
		if first == "" {
			first = key
		}
		switch {
		case value != "" && strings.HasPrefix(rest, value),
			value == "" && kind == "seq" && strings.HasPrefix(rest, "["),
			value == "" && kind == "map" && strings.HasPrefix(rest, "{"):
			found = key
			if value != "" {
				return found
			}
		}
	}
	if found != "" {
		return found
	}
	return first
}

// ParseFile reads a scenario from a file. A path that is not a regular
// file (a FIFO, /dev/zero) or is over wholefile.ScenarioLimit is refused
// before it is read, with a *wholefile.Error.
func ParseFile(p string) (Scenario, error) {
	b, err := wholefile.Read(p, "scenario", wholefile.ScenarioLimit)
	if err != nil {
		return Scenario{}, err
	}
	return Parse(p, bytes.NewReader(b))
}

//go:embed builtin/*.yaml builtin/extended/*.yaml
var builtinFS embed.FS

// ExtendedDir is the folder, under builtin/, of the extended set: the
// built-in scenarios too long for the default suite (the peer faults
// take 6–14 s a cell, and `make run` must stay within 8 min), run by
// `suite --extended` or by name.
const ExtendedDir = "extended"

// builtins are the default suite's scenarios and extended the extended
// set's, both shipped with lockbench and parsed once; no name is in both.
var builtins, extended = loadBuiltins("builtin"), loadBuiltins(path.Join("builtin", ExtendedDir))

func init() {
	for n := range extended {
		if _, dup := builtins[n]; dup {
			panic(fmt.Sprintf("built-in scenario %s is in the default and the extended set", n))
		}
	}
}

// loadBuiltins parses the embedded scenarios of folder dir (not its
// subfolders), each Source "builtin:" and its path under builtin/.
func loadBuiltins(dir string) map[string]Scenario {
	ents, err := builtinFS.ReadDir(dir)
	if err != nil {
		panic(err)
	}
	out := map[string]Scenario{}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		p := path.Join(dir, e.Name())
		b, err := builtinFS.ReadFile(p)
		if err != nil {
			panic(err)
		}
		s, err := Parse("builtin:"+strings.TrimPrefix(p, "builtin/"), bytes.NewReader(b))
		if err != nil {
			panic(fmt.Sprintf("built-in scenario is invalid: %v", err))
		}
		out[s.Name] = s
	}
	return out
}

// Names lists the built-in scenarios of the default suite, sorted.
func Names() []string { return slices.Sorted(maps.Keys(builtins)) }

// ExtendedNames lists the extended set's scenarios, sorted: built in and
// found by name like the default ones, but not in the default suite.
func ExtendedNames() []string { return slices.Sorted(maps.Keys(extended)) }

// Builtins returns every built-in scenario, in Names' order: the default
// suite's scenarios, for what must cover exactly them (the committed
// baseline, the mutant catalogue).
func Builtins() ([]Scenario, error) {
	var out []Scenario
	for _, n := range Names() {
		sc, err := Lookup(n)
		if err != nil {
			return nil, fmt.Errorf("built-in scenario %s: %w", n, err)
		}
		out = append(out, sc)
	}
	return out, nil
}

// Lookup returns a built-in scenario (of the default or the extended set)
// by name, or reads a scenario file when name looks like a path (ends in
// .yaml/.yml or contains a slash).
func Lookup(name string) (Scenario, error) {
	if strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.Contains(name, "/") {
		return ParseFile(name)
	}
	if s, ok := builtins[name]; ok {
		return s, nil
	}
	if s, ok := extended[name]; ok {
		return s, nil
	}
	return Scenario{}, fmt.Errorf("unknown scenario %q: valid scenarios are %s (extended set: %s), or a path to a .yaml file",
		name, strings.Join(Names(), ", "), strings.Join(ExtendedNames(), ", "))
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}
