package adapters

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/verdict"
	"github.com/lockbench/lockbench/zookeeper/zkcluster"
	"github.com/lockbench/lockbench/zookeeper/zklocks"
)

// zkSetup installs ZooKeeper and both ZooKeeper clients' Debian packages.
const zkSetup = "make zk-deps"

// curatorSource is adapters/curator/Lock.java, embedded so that lockbench
// runs it wherever it is; Java's single-file launcher reads it from
// descriptor 3 (Program.Source).
//
//go:embed curator/Lock.java
var curatorSource string

// CuratorJars is the class path of the curator adapter: Debian's Curator
// and ZooKeeper client with what they load (their manifests' Class-Path
// names the same jars, and more that the client does not need), and
// slf4j-simple, which writes the libraries' warnings to stderr (where
// lockbench keeps the tail for its errors).
var CuratorJars = []string{
	"/usr/share/java/curator-recipes.jar",
	"/usr/share/java/curator-framework.jar",
	"/usr/share/java/curator-client.jar",
	"/usr/share/java/zookeeper.jar",
	"/usr/share/java/zookeeper-jute.jar",
	"/usr/share/java/guava.jar",
	"/usr/share/java/slf4j-api.jar",
	"/usr/share/java/slf4j-simple.jar",
}

// Curator is the curator adapter's program: Lock.java run by Java's
// single-file source launcher (the source on descriptor 3: --source, as
// the name /dev/fd/3 does not end in .java). The JVM flags only make a
// small client start faster and lighter (one GC thread, C1 only, a small
// heap: a scenario may run 32 of them on two cores); the log levels keep
// ZooKeeper's per-reconnect stack traces out of the stderr tail.
var Curator = &Program{
	Name: "curator",
	Command: []string{"java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx64m",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dorg.slf4j.simpleLogger.log.org.apache.zookeeper=error",
		"-cp", strings.Join(CuratorJars, ":"), "--source", "11", "/dev/fd/3"},
	Source: curatorSource,
	Ready:  true,
	Cancel: true,
	Check:  curatorInstalled,
}

// curatorInstalled checks that java and every jar are here.
func curatorInstalled(context.Context) error {
	if _, err := exec.LookPath("java"); err != nil {
		return fmt.Errorf("needs java on PATH (apt-get install default-jre-headless, or %s): %w", zkSetup, err)
	}
	for _, jar := range CuratorJars {
		if _, err := os.Stat(jar); err != nil {
			return fmt.Errorf("needs %s (apt-get install libcurator-recipes-java libslf4j-java, or %s): %w", jar, zkSetup, err)
		}
	}
	return nil
}

// kazooLock is adapters/kazoo/lock.py, passed to Python with -c like
// python-etcd3's.
//
//go:embed kazoo/lock.py
var kazooLock string

// Kazoo is the kazoo adapter's program.
var Kazoo = &Program{
	Name:    "kazoo",
	Command: []string{Python, "-c", kazooLock},
	Ready:   true,
	Cancel:  true,
	Check:   pythonModule("kazoo", "python3-kazoo", zkSetup),
}

// The ZooKeeper adapters are registered as zklocks registers its
// strategies: Hidden (ZooKeeper is not what `make run` brings), their
// session their own (OwnLease), queues (FIFO: both are ZooKeeper's lock
// recipe, ephemeral sequential nodes each watching its predecessor), and
// a Runtime that needs ZooKeeper for the ensemble as well as the client.
func init() {
	registerZK(Curator, locks.Strategy{
		Name:        "curator",
		Description: "Apache Curator's InterProcessMutex (acquire, release; a ConnectionStateListener ends the grant on SUSPENDED or LOST), as a Java process",
		Origin:      "Debian libcurator-recipes-java 5.4.0 on OpenJDK, adapters/curator",
	})
	registerZK(Kazoo, locks.Strategy{
		Name:        "kazoo",
		Description: "kazoo's Lock (client.Lock(path, id), acquire, release, cancel; a state listener ends the grant on SUSPENDED or LOST), as a Python process",
		Origin:      "Debian python3-kazoo 2.8.0, adapters/kazoo",
	})
}

func registerZK(p *Program, s locks.Strategy) {
	s.Backend, s.Hidden, s.OwnLease, s.Process, s.Order = zklocks.Backend, true, true, true, verdict.FIFO
	s.Runtime = func(ctx context.Context) error {
		if err := zkcluster.Available(zkcluster.Options{}); err != nil {
			return err
		}
		return p.check(ctx)
	}
	s.New = p.ZooKeeperFactory()
	locks.Register(s)
}
