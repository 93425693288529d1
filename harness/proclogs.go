package harness

import "github.com/lockbench/lockbench/etcd/cluster"

// memberLogs is where each member process's log stood when a run began,
// so that the run folder gets what the members logged during the run
// (docs/processes.md). Zero for other cluster kinds, which keep no logs.
type memberLogs struct {
	pc    *cluster.ProcessCluster
	marks []int64
}

func markLogs(c cluster.Members) memberLogs {
	pc, ok := c.(*cluster.ProcessCluster)
	if !ok {
		return memberLogs{}
	}
	return memberLogs{pc: pc, marks: pc.LogMarks()}
}

// copyTo writes the run's part of each member's log into the run folder.
func (l memberLogs) copyTo(dir string) error {
	if l.pc == nil {
		return nil
	}
	return l.pc.CopyLogs(dir, l.marks)
}
