package backend

import "github.com/lockbench/lockbench/chaos"

// StepRefuser is a Deployer whose deployment differs by lock, so that a
// step one of its strategies can take means nothing to another: Redis
// runs redis-setnx on a primary with replicas behind Sentinels and
// Redlock on five independent primaries, which have no replication link
// to cut, no leader, and members 0..4. The harness asks it of every
// fault step of a scenario before the run, after Refuses, and refuses
// the run (a suite skips the cell, saying why) rather than strike a
// fault that can only fail or do nothing.
type StepRefuser interface {
	// RefusesStep says why lock's deployment cannot take step, or nil.
	RefusesStep(lock string, step chaos.Step) error
}
