// Command lockbench-myredislock is lockbench with the example Redis
// strategy "myredislock" registered: the whole CLI (list, run, suite,
// redis, ...) on a user's own Redis lock, in three lines.
package main

import (
	"github.com/lockbench/lockbench/cli"
	_ "github.com/lockbench/lockbench/examples/myredislock"
)

func main() { cli.Main() }
