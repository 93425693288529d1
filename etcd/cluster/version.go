package cluster

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// Version is an etcd release: member flags differ between releases, so a
// process cluster builds them for the version of the binary it runs.
type Version struct{ Major, Minor, Patch int }

// String is "3.4.23".
func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// AtLeast reports whether v is major.minor or later.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || (v.Major == major && v.Minor >= minor)
}

var versionLine = regexp.MustCompile(`(?m)^etcd Version:\s*v?(\d+)\.(\d+)\.(\d+)`)

// ParseVersion reads the version from the output of `etcd --version`
// ("etcd Version: 3.4.23" on its first line, in every release since 3.0).
func ParseVersion(out string) (Version, error) {
	m := versionLine.FindStringSubmatch(out)
	if m == nil {
		return Version{}, fmt.Errorf("no \"etcd Version: X.Y.Z\" line in %q", firstLine(out))
	}
	var v Version
	for i, p := range []*int{&v.Major, &v.Minor, &v.Patch} {
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return Version{}, fmt.Errorf("etcd version %q: %w", m[0], err)
		}
		*p = n
	}
	return v, nil
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}

// MinVersion is the oldest etcd a process cluster runs: v3 API with the
// lock service, and the zap logger lockbench reads.
var MinVersion = Version{3, 4, 0}

// memberSpec is what one member process is started with, independent of
// the etcd release.
type memberSpec struct {
	Name, Dir                 string
	ClientURL, PeerURL        string // where it listens
	AdvertisePeerURL, Initial string // what its peers dial; the initial cluster
	State                     string // "new" or "existing"
	Tick, Election            time.Duration
	UnsafeNoFsync             bool
	FeatureGates              string // --feature-gates (3.6 and later); empty: none
}

// memberFlags builds the command-line flags of one member for etcd v. The
// flags common to 3.4 and later are the same; what differs: 3.4 logs with
// capnslog unless told --logger=zap (3.5+ defaults to zap, and 3.4 also
// accepts the flag), and 3.4 has no --unsafe-no-fsync (added in 3.5).
func memberFlags(v Version, s memberSpec) ([]string, error) {
	if !v.AtLeast(MinVersion.Major, MinVersion.Minor) {
		return nil, fmt.Errorf("etcd %s: lockbench runs etcd %d.%d and later", v, MinVersion.Major, MinVersion.Minor)
	}
	if s.UnsafeNoFsync && !v.AtLeast(3, 5) {
		return nil, fmt.Errorf("etcd %s has no --unsafe-no-fsync (added in 3.5): run without --unsafe-no-fsync", v)
	}
	args := []string{
		"--name=" + s.Name,
		"--data-dir=" + s.Dir,
		"--listen-client-urls=" + s.ClientURL,
		"--advertise-client-urls=" + s.ClientURL,
		"--listen-peer-urls=" + s.PeerURL,
		"--initial-advertise-peer-urls=" + s.AdvertisePeerURL,
		"--initial-cluster=" + s.Initial,
		"--initial-cluster-token=lockbench",
		"--initial-cluster-state=" + s.State,
		fmt.Sprintf("--heartbeat-interval=%d", s.Tick.Milliseconds()),
		fmt.Sprintf("--election-timeout=%d", s.Election.Milliseconds()),
		"--logger=zap",
		"--log-outputs=stderr",
		// Info: the member's log file is the record of what it did.
		"--log-level=info",
		"--metrics=basic",
	}
	if s.UnsafeNoFsync {
		args = append(args, "--unsafe-no-fsync")
	}
	if s.FeatureGates != "" {
		if !v.AtLeast(3, 6) {
			return nil, fmt.Errorf("etcd %s has no --feature-gates (added in 3.6): run without feature gates", v)
		}
		args = append(args, "--feature-gates="+s.FeatureGates)
	}
	return args, nil
}
