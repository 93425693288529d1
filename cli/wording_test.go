package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagWordingAcrossCommands: the same bad value of a flag that several
// commands share is refused with the same message by each (exit 2), naming
// the flag as typed (--flag), never an internal name ("shared connections
// -1") or the flag package's -flag.
func TestFlagWordingAcrossCommands(t *testing.T) {
	out := filepath.Join(t.TempDir(), "runs")
	tests := []struct {
		cmds []string
		args []string
		want string
	}{
		{[]string{"run", "bench"}, []string{"--shared-conns", "-1"}, "--shared-conns -1: must be ≥0 (0: one connection per client)"},
		{[]string{"run", "suite", "bench"}, []string{"--rpc-timeout", "-1s"}, "--rpc-timeout -1s: must be ≥0 (0: none)"},
		{[]string{"run", "suite", "bench"}, []string{"--keepalive", "bogus"}, "--keepalive bogus: valid policies are auto, seed, safe"},
		{[]string{"run", "bench"}, []string{"--keepalive", "auto,safe"}, "--keepalive auto,safe: one policy here (a list of policies is a dimension of suite only)"},
		{[]string{"run", "bench"}, []string{"--clients", "0"}, "--clients 0: must be ≥1"},
		{[]string{"run", "bench"}, []string{"--hold", "-1s"}, "--hold -1s: must be ≥0"},
		{[]string{"run", "bench"}, []string{"--duration", "0s"}, "--duration 0s: must be > 0"},
		{[]string{"run", "suite"}, []string{"--lease-ttl", "1500ms"}, "--lease-ttl 1.5s: must be a whole number of seconds ≥1s (etcd leases are whole seconds)"},
		{[]string{"suite", "regress"}, []string{"--reps", "0"}, "--reps 0: must be ≥1"},
		{[]string{"run", "suite", "bench", "cluster"}, []string{"--members", "0"}, "--members 0: must be 1..9"},
		{[]string{"suite", "bench"}, []string{"--locks", "nope"}, `unknown lock "nope": valid locks are`},
		{[]string{"run"}, []string{"--lock", "nope"}, `unknown lock "nope": valid locks are`},
		{[]string{"suite", "check", "list"}, []string{"--no-such-flag"}, "flag provided but not defined: --no-such-flag (see lockbench "},
		{[]string{"run", "bench"}, []string{"--seed", "x"}, `invalid value "x" for flag --seed: not a whole number`},
		{[]string{"suite"}, []string{"--seeds", "x"}, `invalid value "x" for flag --seeds: not a whole number`},
		{[]string{"run", "suite"}, []string{"--unsafe-no-fsync=x"}, `invalid boolean value "x" for --unsafe-no-fsync`},
	}
	for _, tc := range tests {
		for _, cmd := range tc.cmds {
			t.Run(cmd+" "+strings.Join(tc.args, " "), func(t *testing.T) {
				args := tc.args
				if cmd == "regress" {
					args = append(args, "--base", "HEAD")
				}
				full := []string{cmd}
				if cmd != "check" && cmd != "list" && cmd != "cluster" && cmd != "regress" {
					full = append(full, "--out", out)
				}
				code, _, stderr := runCLI(t, append(full, args...)...)
				if code != ExitUsage || !strings.HasPrefix(stderr, "lockbench "+cmd+": "+tc.want) || strings.Count(stderr, "\n") != 1 {
					t.Errorf("exit %d, stderr %q; want exit %d and one line %q", code, stderr, ExitUsage, "lockbench "+cmd+": "+tc.want+"…")
				}
			})
		}
	}
}
