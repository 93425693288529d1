package zkcluster

import (
	"archive/zip"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// What ZooKeeper needs on the machine, and how lockbench finds it.
//
// Debian's zookeeper package (3.8.0 in bookworm) puts the server in
// /usr/share/java/zookeeper.jar, whose manifest's Class-Path names every
// jar it needs (netty, jetty, slf4j-api, …, each from its own Debian
// package); its zkServer.sh adds only /etc/zookeeper/conf and that jar.
// lockbench runs the JVM itself (not zkServer.sh, which would be the
// process lockbench signals), with that jar and slf4j-simple, the slf4j
// binding that writes ZooKeeper's log to standard error, which goes to
// the member's log file: without a binding slf4j drops every line, and a
// member that fails to start could not say why.

// ZooKeeperJar is Debian's ZooKeeper server jar.
const ZooKeeperJar = "/usr/share/java/zookeeper.jar"

// DefaultClasspath is the members' class path when Options.Classpath is
// empty: ZooKeeper's jar (its manifest names its dependencies) and
// slf4j-simple (from libslf4j-java, a dependency of ZooKeeper's).
const DefaultClasspath = ZooKeeperJar + ":/usr/share/java/slf4j-simple.jar"

// MainClass is the class a member's JVM runs: a quorum peer reading its
// zoo.cfg.
const MainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

// installHint says how to get what is missing.
const installHint = "make zk-deps installs it (as root, the Debian packages zookeeper, libcurator-recipes-java and python3-kazoo; zookeeper depends on OpenJDK)"

// Available says whether ZooKeeper can be started with opts: nil, or one
// error naming what is missing (java, a jar of the class path, a jar
// ZooKeeper's manifest names) and how to install it. It starts no JVM,
// so that a caller may ask before every run.
func Available(opts Options) error {
	java, cp := opts.Java, opts.Classpath
	if java == "" {
		java = "java"
	}
	if cp == "" {
		cp = DefaultClasspath
	}
	var missing []string
	if _, err := exec.LookPath(java); err != nil {
		missing = append(missing, fmt.Sprintf("java (%q: %v)", java, errors.Unwrap(err)))
	}
	entries := filepath.SplitList(cp)
	var jars []string
	for _, e := range entries {
		if e == "" {
			continue
		}
		if dir, ok := strings.CutSuffix(e, "*"); ok {
			found, _ := filepath.Glob(filepath.Join(dir, "*.jar"))
			jars = append(jars, found...)
			continue
		}
		if _, err := os.Stat(e); err != nil {
			missing = append(missing, e)
			continue
		}
		if strings.HasSuffix(e, ".jar") {
			jars = append(jars, e)
		}
	}
	if len(missing) == 0 {
		found := false
		for _, jar := range jars {
			has, deps := readJar(jar)
			found = found || has
			for _, d := range deps {
				if _, err := os.Stat(d); err != nil && !optionalJars[filepath.Base(d)] {
					missing = append(missing, d+" (named by "+jar+")")
				}
			}
		}
		if !found && !classInDirs(entries) {
			missing = append(missing, "a jar with "+MainClass+" on the class path "+cp)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("ZooKeeper cannot start: missing %s; %s", strings.Join(missing, ", "), installHint)
	}
	return nil
}

// optionalJars are jars ZooKeeper's manifest names that a server does
// not load: jline is zkCli's line editor, and Debian's libzookeeper-java
// does not depend on its package (the JVM skips a missing Class-Path
// entry).
var optionalJars = map[string]bool{"jline.jar": true}

// mainClassFile is MainClass's file in a jar or folder.
var mainClassFile = strings.ReplaceAll(MainClass, ".", "/") + ".class"

// readJar says whether jar holds MainClass and lists the jars its
// manifest's Class-Path names (absolute, or relative to the jar).
func readJar(jar string) (hasMain bool, deps []string) {
	z, err := zip.OpenReader(jar)
	if err != nil {
		return false, nil
	}
	defer z.Close()
	for _, f := range z.File {
		switch f.Name {
		case mainClassFile:
			hasMain = true
		case "META-INF/MANIFEST.MF":
			r, err := f.Open()
			if err != nil {
				continue
			}
			for _, p := range strings.Fields(manifestValue(r, "Class-Path")) {
				if !filepath.IsAbs(p) {
					p = filepath.Join(filepath.Dir(jar), p)
				}
				deps = append(deps, p)
			}
			r.Close()
		}
	}
	return hasMain, deps
}

// manifestValue reads one attribute of a jar manifest, whose long values
// continue on lines that begin with a space.
func manifestValue(r io.Reader, name string) string {
	var val strings.Builder
	in := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case in && strings.HasPrefix(line, " "):
			val.WriteString(line[1:])
		case in:
			return val.String()
		case strings.HasPrefix(line, name+":"):
			in = true
			val.WriteString(strings.TrimSpace(line[len(name)+1:]))
		}
	}
	return val.String()
}

// classInDirs says whether a folder of the class path holds MainClass.
func classInDirs(entries []string) bool {
	for _, e := range entries {
		if info, err := os.Stat(e); err == nil && info.IsDir() {
			if _, err := os.Stat(filepath.Join(e, mainClassFile)); err == nil {
				return true
			}
		}
	}
	return false
}

// versionOut finds the release in `java org.apache.zookeeper.Version`'s
// output ("3.8.0-${mvngit.commit.id}, built on …" from Debian's build).
var versionOut = regexp.MustCompile(`(?m)^(\d+\.\d+\.\d+)`)

// versionWait bounds the JVM Version may start.
const versionWait = 10 * time.Second

// Version is the ZooKeeper release opts would start ("3.8.0"), for the
// run's record; "" when it cannot tell. It reads the server jar's Maven
// properties, and asks the JVM (org.apache.zookeeper.Version) only when
// the jar has none.
func Version(ctx context.Context, opts Options) string {
	cp := opts.Classpath
	if cp == "" {
		cp = DefaultClasspath
	}
	for _, e := range filepath.SplitList(cp) {
		if v := pomVersion(e); v != "" {
			return v
		}
	}
	java := opts.Java
	if java == "" {
		java = "java"
	}
	ctx, cancel := context.WithTimeout(ctx, versionWait)
	defer cancel()
	out, _ := exec.CommandContext(ctx, java, "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData", "-cp", cp, "org.apache.zookeeper.Version").Output()
	if m := versionOut.FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return ""
}

// pomVersion is the version in a jar's
// META-INF/maven/org.apache.zookeeper/zookeeper/pom.properties, or "".
func pomVersion(jar string) string {
	if !strings.HasSuffix(jar, ".jar") {
		return ""
	}
	z, err := zip.OpenReader(jar)
	if err != nil {
		return ""
	}
	defer z.Close()
	f, err := z.Open("META-INF/maven/org.apache.zookeeper/zookeeper/pom.properties")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "version="); ok {
			return v
		}
	}
	return ""
}
