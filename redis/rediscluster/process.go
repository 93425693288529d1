package rediscluster

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/lockbench/lockbench/internal/owned"
)

// process is one redis-server or redis-sentinel of the deployment, in
// its own process group, owned (package owned) while it runs.
type process struct {
	bin, dir string
	port     int
	args     []string
	// env, when set, is the process's environment (the movable clock's,
	// clock.go); else it inherits lockbench's.
	env []string
	// Server is the process while it runs (Server.Name names it).
	owned.Server
}

// start starts the process; its output goes to its folder's stdout.log.
func (p *process) start() error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = p.env
	return p.Server.Start(cmd, p.dir+"/stdout.log")
}
