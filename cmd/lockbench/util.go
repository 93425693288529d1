package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/report"
)

// rpcTimeoutFlag adds --rpc-timeout to a command that runs lock clients.
func rpcTimeoutFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("rpc-timeout", locks.DefaultRPCTimeout,
		"deadline of each etcd request of a lock client (not watches): a write stranded by a dead leader fails after it and is settled, instead of waiting out etcd's own ~6 s request timeout (0: none)")
}

// sharedConnsFlag adds --shared-conns to a command that runs lock clients.
func sharedConnsFlag(fs *flag.FlagSet) *int {
	return fs.Int("shared-conns", 0, "lock clients share this many etcd connections (client i uses connection i mod N), for client counts whose own connections would load the machine; not with client faults (0: one connection per client)")
}

// rpcTimeoutSpec is the harness's RPCTimeout for the flag's value.
func rpcTimeoutSpec(d time.Duration) (time.Duration, error) {
	switch {
	case d < 0:
		return 0, usageError{fmt.Errorf("--rpc-timeout %s: must be ≥ 0 (0: none)", d)}
	case d == 0:
		return -1, nil
	}
	return d, nil
}

// writeBenchFile writes Go benchmark lines for benchstat.
func writeBenchFile(path string, sums []report.Summary) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := report.WriteBenchLines(f, sums); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func firstN[T any](xs []T, n int) []T {
	if len(xs) > n {
		return xs[:n]
	}
	return xs
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// flagError restates a *harness.FieldError with the flag's name from
// flags: "--floor-duration 0s: must be > 0" rather than "floor duration
// 0s: must be > 0". Other errors are returned as they are.
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
