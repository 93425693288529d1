// Command lockbench-mylock is lockbench with the example strategy
// "mylock" registered: the whole CLI (list, run, suite, bench, ...) on a
// user's own lock, in three lines.
package main

import (
	"github.com/lockbench/lockbench/cli"
	_ "github.com/lockbench/lockbench/examples/mylock"
)

func main() { cli.Main() }
