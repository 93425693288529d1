package cluster

import "github.com/lockbench/lockbench/internal/owned"

// A cluster's data folder is owned (package owned): it names and is
// locked by the process that made it, so that a later cluster removes one
// a killed process left, and never one still in use.

// DataPrefix begins the name of every cluster's data folder.
const DataPrefix = "lockbench-etcd-"

// PIDFile is the file in a data folder that names (and is locked by) the
// process that owns the folder.
const PIDFile = owned.PIDFile

// Stale is a data folder RemoveStale removed.
type Stale = owned.Stale

// staleWhat names a cluster's data folder in Stale's message.
const staleWhat = "etcd data folder"

// RemoveStale removes the cluster data folders in parent (os.TempDir when
// empty) whose owner is dead (see owned.RemoveStale). Start calls it; it
// is exported for a caller that wants to clean up without starting a
// cluster.
func RemoveStale(parent string) ([]Stale, error) {
	return owned.RemoveStale(parent, DataPrefix, staleWhat)
}

// RemoveAllDataNow removes the data folder of every cluster of this
// process that is still open, at once, without stopping its members (see
// owned.RemoveAllNow): for a CLI's second-signal handler, which exits
// right after and has no time for Close (whose members may take up to
// CloseTimeout to stop). It returns the folders removed.
func RemoveAllDataNow() ([]string, error) { return owned.RemoveAllNow() }

// removeStale removes dead runs' data folders beside the new one and
// tells OnStaleRemoved of each; best effort: a folder that cannot be
// removed is no reason not to run. Both cluster kinds call it at start
// and keep what it returns (StaleRemoved).
func (o Options) removeStale() []Stale {
	stale, _ := RemoveStale(o.DataParent)
	for _, s := range stale {
		if o.OnStaleRemoved != nil {
			o.OnStaleRemoved(s)
		}
	}
	return stale
}
