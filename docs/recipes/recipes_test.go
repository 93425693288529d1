// Package recipes holds the tests of docs/recipes/: a GitHub Actions
// matrix of shards with a merge job, and a Kubernetes Indexed Job with a
// merge Job (docs/scale.md). Neither engine runs here; these tests hold
// the files to what lockbench relies on, decoding the manifest with the
// Kubernetes API's own types. It is a module of its own so that
// lockbench's build does not take in the Kubernetes API's dependencies;
// cli/recipes_test.go runs the workflow's commands.
package recipes

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// workflow is the part of a GitHub Actions workflow the recipe uses.
type workflow struct {
	Jobs map[string]struct {
		Needs    string `json:"needs"`
		If       string `json:"if"`
		Strategy struct {
			FailFast *bool `json:"fail-fast"`
			Matrix   struct {
				Shard []int `json:"shard"`
			} `json:"matrix"`
		} `json:"strategy"`
		Steps []struct {
			Name string            `json:"name"`
			Uses string            `json:"uses"`
			If   string            `json:"if"`
			Run  string            `json:"run"`
			With map[string]string `json:"with"`
		} `json:"steps"`
	} `json:"jobs"`
}

// shardArg is a suite command's --shard I/N, I being anything (a matrix
// expression, a shell expression).
var shardArg = regexp.MustCompile(`--shard (.+?)/(\d+)`)

// readWorkflow reads the recipe's workflow and returns it with its shard
// count, its shard command and its merge command (each a run line).
func readWorkflow(t *testing.T) (w workflow, shards int, suite, merge string) {
	t.Helper()
	b, err := os.ReadFile("github-actions.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &w); err != nil {
		t.Fatalf("github-actions.yml: %v", err)
	}
	for _, job := range w.Jobs {
		for _, s := range job.Steps {
			switch {
			case strings.HasPrefix(s.Run, "./lockbench suite "):
				suite = s.Run
			case strings.HasPrefix(s.Run, "./lockbench merge "):
				merge = s.Run
			}
		}
	}
	m := shardArg.FindStringSubmatch(suite)
	if m == nil || merge == "" {
		t.Fatalf("github-actions.yml: want a step running ./lockbench suite --shard I/N and one running ./lockbench merge; got %q, %q", suite, merge)
	}
	shards, _ = strconv.Atoi(m[2])
	return w, shards, suite, merge
}

// TestGitHubActionsRecipe: the matrix lists shards 1..N of the suite's
// --shard I/N, every shard runs whatever another finds, each uploads its
// --out folder even when it exits 1, and the merge job runs after all of
// them, on every shard's folder collected into the folder it merges.
func TestGitHubActionsRecipe(t *testing.T) {
	w, n, suite, merge := readWorkflow(t)
	shard, mergeJob := w.Jobs["shard"], w.Jobs["merge"]
	var want []int
	for i := 1; i <= n; i++ {
		want = append(want, i)
	}
	if got := shard.Strategy.Matrix.Shard; !slices.Equal(got, want) {
		t.Errorf("matrix shard %v, want %v (the suite's --shard I/%d)", got, want, n)
	}
	if ff := shard.Strategy.FailFast; ff == nil || *ff {
		t.Error("fail-fast must be false: a shard that finds a violation must not cancel the others")
	}
	if !strings.Contains(suite, "--shard ${{ matrix.shard }}/") {
		t.Errorf("suite step %q: want --shard ${{ matrix.shard }}/N", suite)
	}
	out := flagValue(t, suite, "--out")
	uploaded := false
	for _, s := range shard.Steps {
		if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
			uploaded = s.If == "always()" && strings.TrimSuffix(s.With["path"], "/") == out && strings.Contains(s.With["name"], "${{ matrix.shard }}")
		}
	}
	if !uploaded {
		t.Errorf("shard job: want an upload-artifact step, if: always(), of path %s/, named per shard", out)
	}
	if mergeJob.Needs != "shard" || mergeJob.If != "always()" {
		t.Errorf("merge job: needs %q, if %q; want needs shard, if always()", mergeJob.Needs, mergeJob.If)
	}
	collected := false
	for _, s := range mergeJob.Steps {
		if strings.HasPrefix(s.Uses, "actions/download-artifact@") {
			collected = s.With["path"] == out && s.With["merge-multiple"] == "true"
		}
	}
	if !collected {
		t.Errorf("merge job: want a download-artifact step into %s with merge-multiple: true", out)
	}
	if glob := strings.Fields(merge)[2]; !strings.HasPrefix(glob, out+"/") || !strings.HasSuffix(glob, "of"+strconv.Itoa(n)) {
		t.Errorf("merge %q: want the shards' folders %s/suite-*-shard*of%d", merge, out, n)
	}
}

// TestKubernetesRecipe decodes the Kubernetes recipe with the API's own
// types (unknown fields refused) and checks what lockbench relies on: an
// Indexed Job whose completions and parallelism are the suite's shard
// count, whose pods take JOB_COMPLETION_INDEX+1 as the shard, and whose
// failing shard (exit 1, a verdict not as expected) stops neither the
// others nor is retried; a merge Job over the same ReadWriteMany volume,
// mounted where the shards write; and the workflow's suite and merge
// flags, so the two recipes run the same suite.
func TestKubernetesRecipe(t *testing.T) {
	jobs, claims := readManifest(t, "kubernetes.yaml")
	if len(jobs) != 2 || len(claims) != 1 {
		t.Fatalf("%d Jobs, %d claims: want a shards Job, a merge Job and their volume's claim", len(jobs), len(claims))
	}
	if !slices.Contains(claims[0].Spec.AccessModes, corev1.ReadWriteMany) {
		t.Errorf("claim %s: access modes %v, want ReadWriteMany (pods on several nodes write it)", claims[0].Name, claims[0].Spec.AccessModes)
	}
	shards, merge := jobs[0], jobs[1]
	suiteCmd, mount := podCommand(t, shards, claims[0].Name)
	mergeCmd, mergeMount := podCommand(t, merge, claims[0].Name)
	m := shardArg.FindStringSubmatch(suiteCmd)
	if m == nil || m[1] != "$((JOB_COMPLETION_INDEX + 1))" {
		t.Fatalf("shard pods run %q: want --shard $((JOB_COMPLETION_INDEX + 1))/N (the index counts from 0)", suiteCmd)
	}
	n, _ := strconv.Atoi(m[2])
	checkIndexedJob(t, shards, n, "a failing shard is a result, neither retried nor stopping the others")
	if out := flagValue(t, suiteCmd, "--out"); out != mount || mergeMount != mount {
		t.Errorf("shards write to %s; volume mounted at %s (shards), %s (merge): want one place", out, mount, mergeMount)
	}
	if glob := strings.Fields(mergeCmd)[2]; glob != mount+"/suite-*-shard*of"+strconv.Itoa(n) {
		t.Errorf("merge pod runs %q: want the shards' folders %s/suite-*-shard*of%d", mergeCmd, mount, n)
	}
	_, wn, wsuite, _ := readWorkflow(t)
	if wn != n || !slices.Equal(suiteFlags(wsuite), suiteFlags(suiteCmd)) {
		t.Errorf("kubernetes runs %q, the workflow %q: want the same suite and shard count", suiteCmd, wsuite)
	}
}

// readManifest decodes a recipe's Jobs and claims with the Kubernetes
// API's types, unknown fields refused.
func readManifest(t *testing.T, name string) (jobs []batchv1.Job, claims []corev1.PersistentVolumeClaim) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	for doc := range strings.SplitSeq(string(b), "\n---\n") {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "Job":
			var j batchv1.Job
			if err := yaml.UnmarshalStrict([]byte(doc), &j); err != nil {
				t.Fatalf("Job: %v", err)
			}
			jobs = append(jobs, j)
		case "PersistentVolumeClaim":
			var c corev1.PersistentVolumeClaim
			if err := yaml.UnmarshalStrict([]byte(doc), &c); err != nil {
				t.Fatalf("PersistentVolumeClaim: %v", err)
			}
			claims = append(claims, c)
		default:
			t.Fatalf("kind %q: want Job or PersistentVolumeClaim", meta.Kind)
		}
	}
	return jobs, claims
}

// workerArg is a run command's --worker I/N.
var workerArg = regexp.MustCompile(`--worker (.+?)/(\d+)`)

// TestKubernetesWorkersRecipe: an Indexed Job of N workers of one run,
// all running at once (they wait for each other: parallelism below N
// would never start the run), each JOB_COMPLETION_INDEX+1 of N, none
// retried, every one on the same endpoints and prefix; and a merge Job
// over the same volume of the workers' folders.
func TestKubernetesWorkersRecipe(t *testing.T) {
	jobs, claims := readManifest(t, "kubernetes-workers.yaml")
	if len(jobs) != 2 || len(claims) != 1 {
		t.Fatalf("%d Jobs, %d claims: want a workers Job, a merge Job and their volume's claim", len(jobs), len(claims))
	}
	workers, merge := jobs[0], jobs[1]
	runCmd, mount := podCommand(t, workers, claims[0].Name)
	mergeCmd, mergeMount := podCommand(t, merge, claims[0].Name)
	m := workerArg.FindStringSubmatch(runCmd)
	if !strings.HasPrefix(runCmd, "lockbench run ") || m == nil || m[1] != "$((JOB_COMPLETION_INDEX + 1))" {
		t.Fatalf("worker pods run %q: want lockbench run --worker $((JOB_COMPLETION_INDEX + 1))/N", runCmd)
	}
	n, _ := strconv.Atoi(m[2])
	checkIndexedJob(t, workers, n, "a retried worker would wait alone")
	for _, f := range []string{"--endpoints", "--prefix"} {
		if v := flagValue(t, runCmd, f); strings.Contains(v, "JOB_COMPLETION_INDEX") {
			t.Errorf("%s %s: every worker must give the same", f, v)
		}
	}
	if out := flagValue(t, runCmd, "--out"); out != mount || mergeMount != mount {
		t.Errorf("workers write to %s; volume mounted at %s (workers), %s (merge): want one place", out, mount, mergeMount)
	}
	if glob := strings.Fields(mergeCmd)[2]; !strings.HasPrefix(mergeCmd, "lockbench merge ") || glob != mount+"/*-w?of"+strconv.Itoa(n) {
		t.Errorf("merge pod runs %q: want lockbench merge %s/*-w?of%d", mergeCmd, mount, n)
	}
}

// checkIndexedJob checks that Job j runs its n pods indexed
// (JOB_COMPLETION_INDEX is set only then), all at once, none retried
// (why says why not) and none stopping the others (a Job-wide
// backoffLimit would).
func checkIndexedJob(t *testing.T, j batchv1.Job, n int, why string) {
	t.Helper()
	sp := j.Spec
	if sp.CompletionMode == nil || *sp.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("Job %s: completionMode must be Indexed (JOB_COMPLETION_INDEX is set only then)", j.Name)
	}
	if sp.Completions == nil || *sp.Completions != int32(n) || sp.Parallelism == nil || *sp.Parallelism != int32(n) {
		t.Errorf("Job %s: completions %s, parallelism %s; want both %d, the --shard or --worker count", j.Name, int32Text(sp.Completions), int32Text(sp.Parallelism), n)
	}
	if sp.BackoffLimitPerIndex == nil || *sp.BackoffLimitPerIndex != 0 || sp.BackoffLimit != nil {
		t.Errorf("Job %s: want backoffLimitPerIndex 0 and no backoffLimit: %s", j.Name, why)
	}
}

// podCommand is the shell command of the Job's one container (sh -c) and
// where it mounts the claim; the pods must not be restarted in place.
func podCommand(t *testing.T, j batchv1.Job, claim string) (cmd, mount string) {
	t.Helper()
	pod := j.Spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever || len(pod.Containers) != 1 {
		t.Fatalf("Job %s: restart policy %q, %d containers; want Never and one", j.Name, pod.RestartPolicy, len(pod.Containers))
	}
	c := pod.Containers[0]
	if len(c.Command) != 3 || c.Command[0] != "sh" || c.Command[1] != "-c" || !strings.HasPrefix(c.Command[2], "lockbench ") {
		t.Fatalf("Job %s: command %q, want sh -c \"lockbench ...\"", j.Name, c.Command)
	}
	vols := map[string]string{}
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil {
			vols[v.Name] = v.PersistentVolumeClaim.ClaimName
		}
	}
	for _, vm := range c.VolumeMounts {
		if vols[vm.Name] == claim {
			mount = vm.MountPath
		}
	}
	if mount == "" {
		t.Fatalf("Job %s: no mount of claim %s", j.Name, claim)
	}
	return c.Command[2], mount
}

// int32Text is *p, or "unset".
func int32Text(p *int32) string {
	if p == nil {
		return "unset"
	}
	return strconv.Itoa(int(*p))
}

// commandArgs are a recipe's command line's arguments after the
// program's name.
func commandArgs(line string) []string { return strings.Fields(line)[1:] }

// suiteFlags are a suite command's arguments without the program, its
// --shard index and its --out: what makes two shards' suites the same.
func suiteFlags(line string) []string {
	var out []string
	args := commandArgs(shardArg.ReplaceAllString(line, "--shard /$2"))
	for i := 0; i < len(args); i++ {
		if args[i] == "--out" {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// flagValue is the value of flag in a command line.
func flagValue(t *testing.T, line, flag string) string {
	t.Helper()
	args := strings.Fields(line)
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("%q: no %s", line, flag)
	}
	return args[i+1]
}
