package suite

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockbench/lockbench/etcd/etcdlocks"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/runner"
)

// A sharded suite runs one part of a matrix per process (suite --shard
// I/N), each on its own cluster, so that CI's job matrix or a Kubernetes
// Indexed Job spreads a suite over machines; lockbench merge joins the
// parts (docs/scale.md).

// ShardSpec is which part of the matrix a suite runs: shard Index of
// Count (1..Count); the zero value is the whole matrix.
type ShardSpec struct{ Index, Count int }

// ParseShard parses --shard's "I/N": 1 ≤ I ≤ N.
func ParseShard(s string) (ShardSpec, error) {
	i, n, err := parseIndexOf(s, "shard")
	return ShardSpec{Index: i, Count: n}, err
}

// ParseWorker parses run --worker's "I/N": 1 ≤ I ≤ N.
func ParseWorker(s string) (runner.Worker, error) {
	i, n, err := parseIndexOf(s, "worker")
	return runner.Worker{Index: i, Count: n}, err
}

// parseIndexOf parses "I/N", part I of N of what.
func parseIndexOf(s, what string) (i, n int, err error) {
	is, ns, ok := strings.Cut(s, "/")
	i, ierr := strconv.Atoi(is)
	n, nerr := strconv.Atoi(ns)
	if !ok || ierr != nil || nerr != nil {
		return 0, 0, fmt.Errorf("%q is not I/N (%s I of N, e.g. 1/4)", s, what)
	}
	if err := harness.CheckIndexOf(i, n); err != nil {
		return 0, 0, fmt.Errorf("%q: %w", s, err)
	}
	return i, n, nil
}

// sharded reports whether the spec runs only part of the matrix.
func (s ShardSpec) sharded() bool { return s.Count > 0 }

// Prefix is the folder of shard s's key namespaces on an external
// cluster when the user names none: harness.DefaultCleanPrefix + "shardIofN/",
// e.g. /lockbench/shard1of4/. Shards sharing one cluster then never
// touch each other's keys, and one shard's clean (clean --shard I/N)
// removes what it left, never what another shard still runs on.
func (s ShardSpec) Prefix() string {
	return fmt.Sprintf("%sshard%dof%d/", harness.DefaultCleanPrefix, s.Index, s.Count)
}

// withShardPrefix gives a sharded suite on an external cluster whose
// caller named no prefix its shard's own (ShardSpec.Prefix).
func (s Spec) withShardPrefix() Spec {
	if x := s.External; x != nil && s.Shard.sharded() && x.Prefix == "" && x.Parent == "" {
		ext := *x
		ext.Parent = s.Shard.Prefix()
		s.External = &ext
	}
	return s
}

// CellOverhead is what a cell costs beyond its scenario's duration in a
// shard's expected time: cluster check, settling, the checker, the folder.
const CellOverhead = 2 * time.Second

// ShardUnit is a cell key of the matrix and its expected time, every run
// of it (seeds × repetitions): a key is never split between shards, so a
// shard's suite.json lists it as run or not run as a whole.
type ShardUnit struct {
	Key  string
	Cost time.Duration
}

// AssignShards gives each unit to one of n shards, balancing expected
// time: longest processing time first (ties by key), each to the shard
// with the least time so far (ties: the lowest). The result is each
// shard's keys in units' order; it depends only on the units, so every
// machine computes the same assignment.
func AssignShards(units []ShardUnit, n int) [][]string {
	order := slices.Clone(units)
	slices.SortStableFunc(order, func(a, b ShardUnit) int {
		return cmp.Or(cmp.Compare(b.Cost, a.Cost), cmp.Compare(a.Key, b.Key))
	})
	load := make([]time.Duration, n)
	owner := map[string]int{}
	for _, u := range order {
		least := 0
		for i := range load {
			if load[i] < load[least] {
				least = i
			}
		}
		load[least] += u.Cost
		owner[u.Key] = least
	}
	out := make([][]string, n)
	for _, u := range units {
		out[owner[u.Key]] = append(out[owner[u.Key]], u.Key)
	}
	return out
}

// shardUnits are the matrix's keys in run order with their expected
// times.
func (s Spec) shardUnits(bins []suiteBin) []ShardUnit {
	var out []ShardUnit
	runs := time.Duration(s.Seeds * max(s.Reps, 1))
	for _, sc := range s.Scenarios {
		d := s.capped(sc).Duration.D()
		for _, key := range s.cellKeys(sc.Name, bins) {
			out = append(out, ShardUnit{Key: key.Key(), Cost: runs * (d + CellOverhead)})
		}
	}
	return out
}

// shardKeys are the keys this spec's shard runs, nil for the whole matrix.
func (s Spec) shardKeys(bins []suiteBin) []string {
	if !s.Shard.sharded() {
		return nil
	}
	return AssignShards(s.shardUnits(bins), s.Shard.Count)[s.Shard.Index-1]
}

// matrix is the suite's whole matrix as suite.json records it; h is the
// header with its scenario hashes and expectations, which its id covers.
func (s Spec) matrix(bins []suiteBin, h report.Suite) *report.Matrix {
	m := &report.Matrix{Locks: s.Locks, Seeds: s.Seeds, FirstSeed: max(s.FirstSeed, 1)}
	for _, sc := range s.Scenarios {
		m.Scenarios = append(m.Scenarios, sc.Name)
	}
	for _, ka := range s.keepAlives() {
		m.KeepAlives = append(m.KeepAlives, string(etcdlocks.KeepAliveOrDefault(ka)))
	}
	for _, b := range bins {
		if b.version != "" {
			m.Etcd = append(m.Etcd, b.version)
		}
	}
	for _, u := range s.shardUnits(bins) {
		m.Keys = append(m.Keys, u.Key)
	}
	id, _ := json.Marshal(struct {
		M            *report.Matrix
		Reps         int
		Hashes       map[string]string
		Expected     any
		Inject       map[string]string
		RPCTimeout   time.Duration
		Members      int
		Tick, Elect  time.Duration
		NoFsync, TLS bool
		External     bool
	}{m, h.Reps, h.ScenarioHashes, h.Expected, h.InjectDelay, s.RPCTimeout, s.Cluster.Members,
		s.Cluster.Tick, s.Cluster.Election, s.Cluster.UnsafeNoFsync, s.Cluster.TLS, s.External != nil})
	sum := sha256.Sum256(id)
	m.ID = hex.EncodeToString(sum[:8])
	return m
}

// cellOrder compares two cells by the matrix's run order: scenario,
// strategy, keepalive policy, seed, then binary (a version matrix's
// binaries side by side); a stable sort keeps repetitions in run order.
func cellOrder(m *report.Matrix) func(a, b report.Cell) int {
	idx := func(names []string, n string) int { return slices.Index(names, n) }
	return func(a, b report.Cell) int {
		x, y := a.Summary, b.Summary
		return cmp.Or(cmp.Compare(idx(m.Scenarios, x.Scenario), idx(m.Scenarios, y.Scenario)),
			cmp.Compare(idx(m.Locks, x.Lock), idx(m.Locks, y.Lock)),
			cmp.Compare(idx(m.KeepAlives, x.KeepAlive), idx(m.KeepAlives, y.KeepAlive)),
			cmp.Compare(x.Seed, y.Seed),
			cmp.Compare(idx(m.Etcd, x.EtcdVersion), idx(m.Etcd, y.EtcdVersion)))
	}
}
