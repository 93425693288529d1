// Command lockbench benchmarks and chaos-tests distributed locks on etcd.
// The whole CLI is package cli, so that a program with its own lock
// strategies can be lockbench too (see cli's package comment).
package main

import "github.com/lockbench/lockbench/cli"

func main() { cli.Main() }
