package rediscluster

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// The nodes' clock (Options.Clock): each redis-server is started with
// lockbench's clock preloaded (clockshim/clock.c), which answers its
// wall-clock calls with the machine's time plus an offset it reads from
// the node's own file, so that one node's clock can jump (JumpClock)
// while the machine's, and every other node's, stays. Redis keeps a
// key's expiry as a wall-clock time in milliseconds and compares it with
// mstime() (ustime(), gettimeofday) when a key is read and in its expire
// cycle: a node whose clock jumps past a key's expiry has lost the key.
// Debian's libfaketime cannot do it: it cannot start Debian's
// redis-server, whose allocator (jemalloc) reads the clock before
// libfaketime has set itself up (docs/redis.md).

//go:embed clockshim/clock.c
var clockSource []byte

// clockFile is the file in a node's folder its clock's offset is read
// from.
const clockFile = "clock-offset-ms"

// buildClock compiles the clock into the deployment's folder with the C
// compiler (cc, which the race detector's build needs too) and returns
// the library's path.
func (c *Cluster) buildClock(ctx context.Context) (string, error) {
	src, lib := filepath.Join(c.dir, "clock.c"), filepath.Join(c.dir, "clock.so")
	if err := os.WriteFile(src, clockSource, 0o600); err != nil {
		return "", fmt.Errorf("build the nodes' clock: %w", err)
	}
	out, err := exec.CommandContext(ctx, "cc", "-O2", "-shared", "-fPIC", "-o", lib, src).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build the nodes' clock with cc (a movable clock needs a C compiler: apt-get install gcc): %w: %s", err, out)
	}
	return lib, nil
}

// clockEnv is the environment a node starts with on the movable clock
// lib, its offset 0.
func clockEnv(lib, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	file := filepath.Join(dir, clockFile)
	if err := writeOffset(file, 0); err != nil {
		return nil, err
	}
	return append(os.Environ(), "LD_PRELOAD="+lib, "LOCKBENCH_CLOCK_FILE="+file), nil
}

// writeOffset replaces file's offset at once (a rename), so that the
// clock never reads half of it.
func writeOffset(file string, by time.Duration) error {
	tmp := file + ".new"
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(by.Milliseconds(), 10)+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// JumpClock makes node i's wall clock read by ahead of the machine's
// from now on (to the millisecond; 0 sets it back): every key on it
// whose expiry is less than by away is gone at its next read or expire
// cycle. The deployment must have been started with Options.Clock.
func (c *Cluster) JumpClock(i int, by time.Duration) error {
	p, err := c.node(i)
	if err != nil {
		return err
	}
	if !c.opts.Clock {
		return fmt.Errorf("jump the clock of redis node %d: the deployment was started on the machine's clock (Options.Clock is off)", i)
	}
	if by < 0 {
		return fmt.Errorf("jump the clock of redis node %d by %s: a clock here only jumps forward", i, by)
	}
	if err := writeOffset(filepath.Join(p.dir, clockFile), by); err != nil {
		return fmt.Errorf("jump the clock of redis node %d: %w", i, err)
	}
	return nil
}
