package chaos

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestNoFaultNameOutsideChaos: what a fault needs and costs is asked of
// the fault (Needs, Cost), never decided by its name elsewhere, so that
// adding a fault touches this package only. No Go file outside chaos/
// (tests aside: their histories are data) may hold a fault's name as a
// string literal.
func TestNoFaultNameOutsideChaos(t *testing.T) {
	names := map[string]bool{}
	for _, n := range Names() {
		names[n] = true
	}
	root := ".."
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "chaos" || strings.HasPrefix(d.Name(), ".") && p != root) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && names[s] {
					t.Errorf("%s: fault name %q as a literal: ask the fault (chaos.Fault.Needs, Cost) instead", fset.Position(lit.Pos()), s)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFaultsDescribeThemselves: what each fault says of itself is
// consistent with what it acts on, since the checker, the cluster and the
// scenario validation believe it: a member fault needs members lockbench
// controls and costs an election; a fault that needs a client's proxy
// targets a client; only delay-client's kind takes a delay, and
// only compact-loop an interval.
func TestFaultsDescribeThemselves(t *testing.T) {
	for _, n := range Names() {
		f, _ := Lookup(n)
		needs, cost := f.Needs(), f.Cost()
		switch {
		case cost == CostUnknown:
			t.Errorf("%s: no cost: the checker could not weigh it", n)
		case f.Targets() == MemberTarget && (!needs.Members || cost != CostElection):
			t.Errorf("%s: a member fault must need members and cost an election: %+v %v", n, needs, cost)
		case needs.ClientProxy && f.Targets() != ClientTarget:
			t.Errorf("%s: needs a client proxy but targets %s", n, f.Targets())
		case (needs.MemberProcesses || needs.PeerRelays || needs.SnapshotCount) && !needs.Members:
			t.Errorf("%s: needs member processes, peer relays or a snapshot count but not members", n)
		case needs.Protocol != "" && !needs.ClientProxy:
			t.Errorf("%s: reads a client protocol but needs no client relay to read it at", n)
		case needs.Arg != "" && needs.Arg != ArgDelay && needs.Arg != ArgEvery && needs.Arg != ArgBy:
			t.Errorf("%s: takes an unknown argument %q", n, needs.Arg)
		}
		if CostOf(n) != cost {
			t.Errorf("CostOf(%s) = %v, want %v", n, CostOf(n), cost)
		}
	}
	if CostOf("a-fault-of-another-tool") != CostUnknown {
		t.Error("an unknown fault must cost CostUnknown, so the checker judges it by its target")
	}
	if got := Taking(ArgDelay); !slices.Equal(got, []string{"delay-acquire-replies", "delay-answers", "delay-client", "delay-peers"}) {
		t.Errorf("Taking(delay) = %v", got)
	}
	if got := Taking(ArgEvery); len(got) != 1 || got[0] != "compact-loop" {
		t.Errorf("Taking(every) = %v", got)
	}
	if got := Taking(ArgBy); len(got) != 1 || got[0] != "clock-jump" {
		t.Errorf("Taking(by) = %v", got)
	}
}
