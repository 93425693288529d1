package cluster

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/chaos"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		out  string
		want Version
		err  bool
	}{
		{"etcd Version: 3.4.23\nGit SHA: Not provided\nGo Version: go1.19.8\n", Version{3, 4, 23}, false},
		{"etcd Version: 3.7.3\nGit SHA: abc\n", Version{3, 7, 3}, false},
		{"etcd Version: v3.5.17\n", Version{3, 5, 17}, false},
		{"etcd Version: 3.6.0-rc.1\n", Version{3, 6, 0}, false},
		{"some other program 1.2.3\n", Version{}, true},
		{"", Version{}, true},
	} {
		got, err := ParseVersion(tc.out)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v, error %v", tc.out, got, err, tc.want, tc.err)
		}
	}
}

func TestVersionAtLeast(t *testing.T) {
	v := Version{3, 4, 23}
	if !v.AtLeast(3, 4) || v.AtLeast(3, 5) || !v.AtLeast(2, 9) || v.AtLeast(4, 0) {
		t.Errorf("AtLeast wrong for %v", v)
	}
	if v.String() != "3.4.23" {
		t.Errorf("String = %q", v.String())
	}
}

func TestMemberFlags(t *testing.T) {
	spec := memberSpec{Name: "m0", Dir: "/d/m0", ClientURL: "http://127.0.0.1:1", PeerURL: "http://127.0.0.1:2",
		AdvertisePeerURL: "http://127.0.0.1:2", Initial: "m0=http://127.0.0.1:2", State: "new",
		Tick: 50 * time.Millisecond, Election: 500 * time.Millisecond}
	for _, v := range []Version{{3, 4, 23}, {3, 5, 0}, {3, 7, 3}} {
		args, err := memberFlags(v, spec)
		if err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		for _, want := range []string{"--name=m0", "--data-dir=/d/m0", "--heartbeat-interval=50", "--election-timeout=500",
			"--initial-cluster-state=new", "--logger=zap", "--listen-client-urls=http://127.0.0.1:1"} {
			if !slices.Contains(args, want) {
				t.Errorf("%v: flags %v lack %s", v, args, want)
			}
		}
		if slices.Contains(args, "--unsafe-no-fsync") {
			t.Errorf("%v: --unsafe-no-fsync not asked for", v)
		}
	}
	spec.UnsafeNoFsync = true
	if _, err := memberFlags(Version{3, 4, 23}, spec); err == nil || !strings.Contains(err.Error(), "--unsafe-no-fsync") {
		t.Errorf("3.4 with no-fsync: %v, want a refusal naming the flag", err)
	}
	if args, err := memberFlags(Version{3, 5, 9}, spec); err != nil || !slices.Contains(args, "--unsafe-no-fsync") {
		t.Errorf("3.5 with no-fsync: %v %v", args, err)
	}
	if _, err := memberFlags(Version{3, 3, 27}, spec); err == nil || !strings.Contains(err.Error(), "3.4 and later") {
		t.Errorf("3.3: %v, want refused", err)
	}
	spec.FeatureGates = "FastLeaseKeepAlive=false"
	if _, err := memberFlags(Version{3, 5, 9}, spec); err == nil || !strings.Contains(err.Error(), "--feature-gates") {
		t.Errorf("3.5 with feature gates: %v, want a refusal naming the flag", err)
	}
	if args, err := memberFlags(Version{3, 7, 3}, spec); err != nil || !slices.Contains(args, "--feature-gates=FastLeaseKeepAlive=false") {
		t.Errorf("3.7 with feature gates: %v %v", args, err)
	}
}

func TestRefuses(t *testing.T) {
	fault := func(name string) chaos.Fault {
		f, err := chaos.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if err := Refuses(Options{}, fault("pause-member")); err == nil || !strings.Contains(err.Error(), KindEmbedded) {
		t.Errorf("embedded pause-member: %v", err)
	}
	for _, bad := range []struct {
		o    Options
		f    string
		says string // what the message must name
	}{
		{Options{}, "delay-peers", "--peer-relays"},
		{Options{}, "drop-peers", "--peer-relays"},
		{Options{}, "snapshot-catchup", "--snapshot-count"},
		{Options{SnapshotCount: MaxCatchUpSnapshotCount + 1}, "snapshot-catchup", "--snapshot-count 1..1000"},
		{Options{EtcdBin: "self", SnapshotCount: 100}, "snapshot-catchup", KindProcess},
		{Options{}, "lose-create-reply", "gRPC"},
		{Options{EtcdBin: "self"}, "lose-create-replies", "gRPC"},
		{Options{}, "cut-replication", "asynchronous replication"},
		{Options{EtcdBin: "self"}, "restart-empty", "own data"},
		{Options{}, "restart-empty", "replace-member"},
		{Options{}, "clock-jump", "Lease.Remaining"},
		{Options{EtcdBin: "self"}, "clock-jump", "monotonic clock"},
	} {
		if err := Refuses(bad.o, fault(bad.f)); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("%+v %s: %v, want a refusal naming %q", bad.o, bad.f, err, bad.says)
		}
	}
	for _, ok := range []struct {
		o Options
		f string
	}{
		{Options{}, "partition-member"}, {Options{EtcdBin: "self"}, "partition-member"}, {Options{EtcdBin: "self"}, "pause-member"},
		{Options{}, "crash-member"}, {Options{EtcdBin: "x"}, "crash-member"},
		{Options{PeerRelays: true}, "drop-peers"}, {Options{EtcdBin: "self"}, "delay-peers"}, {Options{}, "replace-member"},
		{Options{SnapshotCount: 100}, "snapshot-catchup"},
	} {
		if err := Refuses(ok.o, fault(ok.f)); err != nil {
			t.Errorf("%+v %s: %v", ok.o, ok.f, err)
		}
	}
}

// fakeEtcd writes an executable that answers --version as etcd version v
// would: enough for version detection, which starts nothing.
func fakeEtcd(t *testing.T, name, v string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	script := "#!/bin/sh\necho 'etcd Version: " + v + "'\necho 'Git SHA: fake'\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// A version matrix's binaries: each asked its release; the same binary
// twice, two of one release, or one that is not etcd is refused with a
// message naming them.
func TestResolveBinaries(t *testing.T) {
	ctx := context.Background()
	v34, v35 := fakeEtcd(t, "etcd", "3.4.23"), fakeEtcd(t, "etcd", "3.5.17")
	got, err := ResolveBinaries(ctx, []string{EtcdBinSelf, v34, v35})
	if err != nil {
		t.Fatal(err)
	}
	var vs []string
	for _, b := range got {
		vs = append(vs, b.Version.String())
	}
	if want := []string{EmbeddedVersion, "3.4.23", "3.5.17"}; !slices.Equal(vs, want) {
		t.Errorf("versions %v, want %v", vs, want)
	}
	link := filepath.Join(t.TempDir(), "etcd-link")
	if err := os.Symlink(v34, link); err != nil {
		t.Fatal(err)
	}
	other34 := fakeEtcd(t, "etcd", "3.4.23")
	for _, tc := range []struct {
		bins []string
		want string
	}{
		{[]string{EtcdBinSelf, EtcdBinSelf}, "self given twice"},
		{[]string{v34, link}, "are the same binary"},
		{[]string{v34, other34}, "both run etcd 3.4.23"},
		{[]string{EtcdBinSelf, fakeEtcd(t, "etcd", EmbeddedVersion)}, "both run etcd " + EmbeddedVersion},
		{[]string{EtcdBinSelf, "/bin/sh"}, "etcd-bin /bin/sh"},
		{[]string{fakeEtcd(t, "etcd", "3.3.27")}, "lockbench runs etcd 3.4 and later"},
		{nil, "no binary"},
	} {
		_, err := ResolveBinaries(ctx, tc.bins)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.bins, err, tc.want)
		}
	}
}
