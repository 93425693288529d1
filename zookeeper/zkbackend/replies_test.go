package zkbackend_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/cli"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/verdict"
	"github.com/lockbench/lockbench/zookeeper/zkcluster/zktest"
)

// TestLostCreateReply runs examples/zookeeper-1262.yaml (the reply to a
// waiter's create lost with its connection, after the ensemble applied
// it) through `lockbench run`, each lock on an ensemble of its own: the
// fault strikes in both (its end is recorded ok: a reply was lost);
// zk-queue-unprotected, which makes the create again, fails liveness
// (the queue stalls behind the orphan node), and zk-queue, whose
// protected create finds its node, passes; `run` exits 1 for the
// mutant's violation, 0 for zk-queue.
func TestLostCreateReply(t *testing.T) {
	zktest.Need(t)
	scenario := filepath.Join("..", "..", "examples", "zookeeper-1262.yaml")
	for _, c := range []struct {
		lock string
		want verdict.Verdict
		exit int
	}{{"zk-queue-unprotected", verdict.Fail, cli.ExitViolation}, {"zk-queue", verdict.Pass, cli.ExitPass}} {
		lock, want := c.lock, c.want
		t.Run(lock, func(t *testing.T) {
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := cli.Run([]string{"run", "--lock", lock, "--scenario", scenario, "--seed", "1", "--out", out}, &stdout, &stderr)
			if code != c.exit {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, c.exit, stdout.String(), stderr.String())
			}
			runs, _ := os.ReadDir(out)
			if len(runs) != 1 {
				t.Fatalf("want one run folder, got %v", runs)
			}
			dir := filepath.Join(out, runs[0].Name())
			hist, err := os.ReadFile(filepath.Join(dir, rundir.HistoryFile))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(hist, []byte(`"type":"ok","f":"fault","value":{"fault":"lose-create-reply"`)) {
				t.Errorf("the fault did not end ok: no create's reply was lost\n%s", faultLines(hist))
			}
			var sum report.Summary
			readJSON(t, filepath.Join(dir, rundir.SummaryFile), &sum)
			if got := sum.Checks[verdict.Liveness].Verdict; got != want {
				t.Errorf("liveness %s, want %s", got, want)
			}
			if got := sum.Checks[verdict.Exclusion].Verdict; got != verdict.Pass {
				t.Errorf("exclusion %s, want pass", got)
			}
		})
	}
}

// faultLines are a history's fault events, for a failure's message.
func faultLines(hist []byte) string {
	var out []string
	for _, l := range strings.Split(string(hist), "\n") {
		if strings.Contains(l, `"f":"fault"`) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
