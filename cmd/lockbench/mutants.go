//go:build mutants

// Built with -tags mutants, lockbench also registers the mutant catalogue
// (deliberately buggy strategies, package mutants), so that the CLI can
// run it: go build -tags mutants ./cmd/lockbench.

package main

import _ "github.com/lockbench/lockbench/etcd/mutants"
