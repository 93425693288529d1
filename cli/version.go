package cli

import (
	"context"
	"fmt"
	"runtime"

	"github.com/lockbench/lockbench/etcd/cluster"
	"github.com/lockbench/lockbench/rundir"
)

// versionCommand is `lockbench version` (also `lockbench --version`):
// the build that would write a run's records (rundir.ThisBuild, the same
// string as their lockbench_version), the schema version of the files it
// writes, and the etcd and Go inside it, so a bug report or a result can
// name the code that made it.
func versionCommand(_ context.Context, e *env, args []string) error {
	fs := newFlags(e, "version", "version\n\nPrints the lockbench build (module version and commit, as lockbench_version in the files it writes),\nthe schema_version of those files, the embedded etcd's release and the Go toolchain.")
	asJSON := fs.Bool("json", false, "print the same as JSON: {lockbench_version, schema_version, etcd, go, os, arch}")
	if err := fs.parseFlagsOnly(args); err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, map[string]any{"lockbench_version": rundir.ThisBuild(), "schema_version": rundir.SchemaVersion,
			"etcd": cluster.EmbeddedVersion, "go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH})
	}
	fmt.Fprintf(e.stdout, "lockbench %s\nschema_version %d\netcd %s (embedded)\n%s %s/%s\n",
		rundir.ThisBuild(), rundir.SchemaVersion, cluster.EmbeddedVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
