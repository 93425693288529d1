package zkcluster

import (
	"archive/zip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeJar writes a jar holding files (name → content) to dir.
func fakeJar(t *testing.T, dir, name string, files map[string]string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	for n, content := range files {
		w, err := z.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(content))
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

// TestAvailableNamesWhatIsMissing: Available names the missing java, a
// missing class-path entry, a jar the server jar's manifest names (not
// zkCli's jline), a class path without the server, each with how to
// install ZooKeeper; and says nil when all is there. Version reads the
// jar's Maven properties. No JVM is started.
func TestAvailableNamesWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	sh, err := os.Executable() // any program stands for java here
	if err != nil {
		t.Fatal(err)
	}
	dep := fakeJar(t, dir, "dep.jar", map[string]string{"x": ""})
	manifest := func(deps ...string) string {
		// A long Class-Path continues on lines that begin with a space.
		line := "Class-Path: " + strings.Join(deps, " ")
		var b strings.Builder
		b.WriteString("Manifest-Version: 1.0\r\n")
		for len(line) > 70 {
			b.WriteString(line[:70] + "\r\n ")
			line = line[70:]
		}
		b.WriteString(line + "\r\nCreated-By: test\r\n")
		return b.String()
	}
	server := fakeJar(t, dir, "server.jar", map[string]string{
		mainClassFile:          "",
		"META-INF/MANIFEST.MF": manifest(dep, filepath.Join(dir, "jline.jar"), filepath.Join(dir, "no-such-dependency-of-the-server.jar")),
		"META-INF/maven/org.apache.zookeeper/zookeeper/pom.properties": "artifactId=zookeeper\nversion=9.8.7\n",
	})
	whole := fakeJar(t, dir, "whole.jar", map[string]string{
		mainClassFile:          "",
		"META-INF/MANIFEST.MF": manifest(dep, filepath.Join(dir, "jline.jar")),
	})
	noServer := fakeJar(t, dir, "client.jar", map[string]string{"org/apache/zookeeper/ZooKeeper.class": ""})
	for _, tt := range []struct {
		opts      Options
		want, not string
	}{
		{Options{Java: "/nonexistent/java", Classpath: whole}, `missing java ("/nonexistent/java"`, ""},
		{Options{Java: sh, Classpath: "/nonexistent/zookeeper.jar"}, "missing /nonexistent/zookeeper.jar", ""},
		{Options{Java: sh, Classpath: server}, filepath.Join(dir, "no-such-dependency-of-the-server.jar") + " (named by " + server + ")", "jline"},
		{Options{Java: sh, Classpath: noServer}, "a jar with " + MainClass, ""},
	} {
		err := Available(tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "make zk-deps") ||
			tt.not != "" && strings.Contains(err.Error(), tt.not) {
			t.Errorf("%+v: %v; want it to name %q and make zk-deps", tt.opts, err, tt.want)
		}
	}
	if err := Available(Options{Java: sh, Classpath: whole + ":" + dir}); err != nil {
		t.Errorf("everything there: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if v := Version(ctx, Options{Java: sh, Classpath: server}); v != "9.8.7" {
		t.Errorf("Version %q, want the pom's 9.8.7", v)
	}
}

// TestOptionsRefused: bad options name what is wrong and what is valid,
// before anything starts.
func TestOptionsRefused(t *testing.T) {
	for _, tt := range []struct {
		opts Options
		want string
	}{
		{Options{Members: 10}, "members 10: must be 1..9"},
		{Options{TickTime: 5 * time.Millisecond}, "tick time 5ms: must be whole milliseconds, 10ms..2s"},
		{Options{TickTime: 1500 * time.Microsecond}, "must be whole milliseconds"},
		{Options{SyncLimit: -1}, "sync limit -1: must be ≥1 tick"},
	} {
		tt.opts.DataParent = t.TempDir()
		if _, err := Start(context.Background(), tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.opts, err, tt.want)
		}
	}
}
