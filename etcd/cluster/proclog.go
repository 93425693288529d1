package cluster

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Member logs: each member process appends its output (etcd's zap log,
// info and above, preceded by a "lockbench:" line with the command of each
// start) to m<i>.log in the cluster's data folder, where it lives as long
// as the cluster. A run copies the part written during it into its run
// folder (CopyLogs), so the logs outlive the cluster's Close.

// LogMarks are the sizes of the member logs now: where a run's part of
// each log begins.
func (pc *ProcessCluster) LogMarks() []int64 {
	marks := make([]int64, len(pc.members))
	for i, m := range pc.members {
		if info, err := os.Stat(m.logPath); err == nil {
			marks[i] = info.Size()
		}
	}
	return marks
}

// LogName is the name of member i's log in a run folder.
func LogName(i int) string { return fmt.Sprintf("etcd-m%d.log", i) }

// CopyLogs writes what each member logged since marks (LogMarks; nil:
// from the start) into dst as LogName(i).
func (pc *ProcessCluster) CopyLogs(dst string, marks []int64) error {
	for i, m := range pc.members {
		var from int64
		if i < len(marks) {
			from = marks[i]
		}
		if err := copyFrom(m.logPath, from, filepath.Join(dst, LogName(i))); err != nil {
			return fmt.Errorf("copy log of member %s: %w", m.name, err)
		}
	}
	return nil
}

func copyFrom(src string, off int64, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if _, err := in.Seek(off, io.SeekStart); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
