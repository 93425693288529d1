package main

import (
	"fmt"
	"io"
	"os"

	"github.com/lockbench/lockbench/cluster"
	"github.com/lockbench/lockbench/harness"
)

// Hooks of the resource limits and clean-up (issue "Hardening, round
// two"), kept in one file so that they move with the CLI as they are.

// runFlags names run's flags for the harness.RunSpec fields a *FieldError
// may name (e.g. Clients above the machine's budget).
var runFlags = map[string]string{"Clients": "clients"}

// noticeTo prints the harness's decisions (e.g. shared connections picked
// to fit the open-file limit): they change what is measured.
func noticeTo(stderr io.Writer) func(string) {
	return func(msg string) { fmt.Fprintf(stderr, "lockbench: %s\n", msg) }
}

// staleTo prints each dead run's etcd data folder that a cluster start
// removed.
func staleTo(stderr io.Writer) func(cluster.Stale) {
	return func(s cluster.Stale) { fmt.Fprintf(stderr, "lockbench: %s\n", s) }
}

// reportFDLimit raises the open-file limit and, with --verbose, says so.
func reportFDLimit(stderr io.Writer, verbose bool) {
	lim, err := harness.RaiseOpenFileLimit()
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "lockbench: %v\n", err)
	case verbose:
		fmt.Fprintf(stderr, "lockbench: %s\n", lim)
	}
}

// exitNow is the second signal's way out: every open cluster's data folder
// is removed at once (its members are not waited for), then the process
// exits 130.
func exitNow(stderr io.Writer, s os.Signal) {
	dirs, err := cluster.RemoveAllDataNow()
	for _, d := range dirs {
		fmt.Fprintf(stderr, "lockbench: %s again — removed %s, exiting now\n", s, d)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lockbench: %v\n", err)
	}
	os.Exit(exitInterrupted)
}
