package harness

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockbench/lockbench/etcd/cluster"
)

func TestCleanRefusesRootPrefix(t *testing.T) {
	for _, p := range []string{"", "/", "lockbench/"} {
		_, err := Clean(context.Background(), External{Endpoints: []string{"http://127.0.0.1:1"}}, p, true)
		var ie *InputError
		if !errors.As(err, &ie) {
			t.Errorf("prefix %q: %v, want an InputError", p, err)
		}
	}
}

// A dry run lists and deletes nothing; with delete, everything under the
// prefix goes and nothing outside it.
func TestClean(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{Members: 1, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for _, k := range []string{"/lockbench/run-a/counter", "/lockbench/run-b/lock/1", "/other/keep"} {
		if _, err := cli.Put(ctx, k, "0"); err != nil {
			t.Fatal(err)
		}
	}
	ext := External{Endpoints: c.Endpoints()}
	res, err := Clean(ctx, ext, DefaultCleanPrefix, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Count != 2 || len(res.Keys) != 2 || res.Keys[0] != "/lockbench/run-a/counter" || res.Deleted != 0 {
		t.Fatalf("dry run: %+v", res)
	}
	if n := count(t, cli, "/"); n != 3 {
		t.Fatalf("dry run deleted keys: %d left of 3", n)
	}
	if res, err = Clean(ctx, ext, DefaultCleanPrefix, true); err != nil || res.Deleted != 2 {
		t.Fatalf("clean: %+v, %v", res, err)
	}
	if n := count(t, cli, "/"); n != 1 {
		t.Fatalf("%d keys left, want only /other/keep", n)
	}

	// A prefix without its trailing "/" is a folder all the same: its
	// siblings sharing the name's start, and the bare key, stay.
	for _, k := range []string{"/lockbench/c1/lock/1", "/lockbench/c10/lock/1", "/lockbench/c1", "/lockbench-other/x"} {
		if _, err := cli.Put(ctx, k, "0"); err != nil {
			t.Fatal(err)
		}
	}
	if res, err = Clean(ctx, ext, "/lockbench/c1", true); err != nil || res.Deleted != 1 || res.Prefix != "/lockbench/c1/" {
		t.Fatalf("clean /lockbench/c1: %+v, %v", res, err)
	}
	if res, err = Clean(ctx, ext, "/lockbench", false); err != nil || res.Count != 2 {
		t.Fatalf("list /lockbench: %+v, %v; want /lockbench/c10/lock/1 and /lockbench/c1, not /lockbench-other/x", res, err)
	}
	if n := count(t, cli, "/"); n != 4 {
		t.Fatalf("%d keys left, want 4", n)
	}
}

func count(t *testing.T, cli *clientv3.Client, prefix string) int64 {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// FuzzCleanPrefix: a prefix clean accepts is a folder below the root, and
// every key under it is the prefix's own folder's, never a sibling's
// (/lockbench/c10/… under /lockbench/c1) nor the whole keyspace.
func FuzzCleanPrefix(f *testing.F) {
	for _, p := range []string{"/lockbench/", "/lockbench/c1", "/", "", "lockbench", "//", "/a/b"} {
		f.Add(p, p+"0/k")
	}
	f.Fuzz(func(t *testing.T, prefix, key string) {
		got, err := cleanPrefix(prefix)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("cleanPrefix(%q): %v, want an InputError", prefix, err)
			}
			if prefix != "/" && strings.HasPrefix(prefix, "/") {
				t.Fatalf("cleanPrefix(%q) refused a folder below the root: %v", prefix, err)
			}
			return
		}
		switch {
		case got == "/" || !strings.HasPrefix(got, "/") || !strings.HasSuffix(got, "/"):
			t.Fatalf("cleanPrefix(%q) = %q: not a folder below the root", prefix, got)
		case got != prefix && got != prefix+"/":
			t.Fatalf("cleanPrefix(%q) = %q: not the prefix as a folder", prefix, got)
		}
		if strings.HasPrefix(key, got) {
			rest := strings.TrimPrefix(key, strings.TrimSuffix(prefix, "/"))
			if !strings.HasPrefix(rest, "/") {
				t.Fatalf("cleanPrefix(%q) = %q covers %q, outside the folder", prefix, got, key)
			}
		}
	})
}
